/* GMUX_LOG parsing, line formatting and the default stderr sink. */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define INIT_LEVEL_(id, name) [COM_SUBSYS_##id] = COM_LOG_DEFAULT_LEVEL,
_Atomic unsigned char com_log_threshold_[COM_SUBSYS_COUNT] = {COM_LOG_SUBSYS_LIST(INIT_LEVEL_)};
#undef INIT_LEVEL_

#define SUBSYS_NAME_(id, name) name,
static const char *const subsys_names[COM_SUBSYS_COUNT] = {COM_LOG_SUBSYS_LIST(SUBSYS_NAME_)};
#undef SUBSYS_NAME_

static const char *const level_names[] = {"off", "error", "warn", "info", "debug", "trace"};
#define LEVEL_COUNT (sizeof(level_names) / sizeof(level_names[0]))

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static com_log_sink_fn sink_fn;
static void *sink_arg;
static uint64_t log_epoch_ns;
static _Atomic int log_clock = COM_LOG_CLOCK_ELAPSED;

const char *com_log_level_name(com_log_level_t level)
{
    return (unsigned)level < LEVEL_COUNT ? level_names[level] : "?";
}

const char *com_log_subsys_name(com_log_subsys_t subsys)
{
    return (unsigned)subsys < COM_SUBSYS_COUNT ? subsys_names[subsys] : "?";
}

static int lookup(const char *tok, size_t n, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (strlen(names[i]) == n && strncasecmp(tok, names[i], n) == 0)
            return i;
    return -1;
}

static void bad_token(char *err, size_t errlen, const char *tok, size_t n)
{
    if (!err || errlen == 0)
        return;
    char subs[128] = "";
    for (int i = 0; i < COM_SUBSYS_COUNT; i++) {
        strncat(subs, i ? " " : "", sizeof(subs) - strlen(subs) - 1);
        strncat(subs, subsys_names[i], sizeof(subs) - strlen(subs) - 1);
    }
    snprintf(err, errlen,
             "GMUX_LOG: unknown token '%.*s' (levels: off error warn info debug trace; "
             "subsystems: %s)",
             (int)n, tok, subs);
}

/* The levels `spec` gives every subsystem, into level[]; nothing applied. */
static gmux_status_t parse_spec(const char *spec, unsigned char level[COM_SUBSYS_COUNT], char *err,
                                size_t errlen)
{
    int assigned[COM_SUBSYS_COUNT]; /* SUBSYSTEM=LEVEL, wins over a bare LEVEL */
    int named[COM_SUBSYS_COUNT] = {0};
    int any_named = 0;
    int bare_level = -1;
    for (int i = 0; i < COM_SUBSYS_COUNT; i++) {
        level[i] = COM_LOG_DEFAULT_LEVEL;
        assigned[i] = -1;
    }

    for (const char *p = spec ? spec : ""; *p;) {
        size_t n = strcspn(p, ",");
        const char *tok = p;
        p += n;
        if (*p == ',')
            p++;
        while (n > 0 && (*tok == ' ' || *tok == '\t')) {
            tok++;
            n--;
        }
        while (n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t'))
            n--;
        if (n == 0)
            continue;
        const char *eq = memchr(tok, '=', n);
        if (eq) {
            int s = lookup(tok, (size_t)(eq - tok), subsys_names, COM_SUBSYS_COUNT);
            int l = lookup(eq + 1, n - (size_t)(eq + 1 - tok), level_names, (int)LEVEL_COUNT);
            if (s < 0 || l < 0) {
                bad_token(err, errlen, tok, n);
                return GMUX_ERR_PARSE;
            }
            assigned[s] = l;
            continue;
        }
        int l = lookup(tok, n, level_names, (int)LEVEL_COUNT);
        if (l >= 0) {
            bare_level = l;
            continue;
        }
        int s = lookup(tok, n, subsys_names, COM_SUBSYS_COUNT);
        if (s < 0) {
            bad_token(err, errlen, tok, n);
            return GMUX_ERR_PARSE;
        }
        named[s] = 1;
        any_named = 1;
    }
    if (bare_level >= 0)
        for (int i = 0; i < COM_SUBSYS_COUNT; i++)
            if (!any_named || named[i])
                level[i] = (unsigned char)bare_level;
    for (int i = 0; i < COM_SUBSYS_COUNT; i++)
        if (assigned[i] >= 0)
            level[i] = (unsigned char)assigned[i];
    return GMUX_OK;
}

gmux_status_t com_log_check(const char *spec, char *err, size_t errlen)
{
    unsigned char level[COM_SUBSYS_COUNT];
    return parse_spec(spec, level, err, errlen);
}

gmux_status_t com_log_configure(const char *spec, char *err, size_t errlen)
{
    unsigned char level[COM_SUBSYS_COUNT];
    gmux_status_t st = parse_spec(spec, level, err, errlen);
    if (st != GMUX_OK)
        return st;
    for (int i = 0; i < COM_SUBSYS_COUNT; i++)
        atomic_store_explicit(&com_log_threshold_[i], level[i], memory_order_relaxed);
    return GMUX_OK;
}

gmux_status_t com_log_clock_parse(const char *text, com_log_clock_t *out)
{
    if (!text || !*text || strcasecmp(text, "elapsed") == 0)
        *out = COM_LOG_CLOCK_ELAPSED;
    else if (strcasecmp(text, "utc") == 0)
        *out = COM_LOG_CLOCK_UTC;
    else
        return GMUX_ERR_PARSE;
    return GMUX_OK;
}

void com_log_set_clock(com_log_clock_t clock)
{
    atomic_store_explicit(&log_clock, (int)clock, memory_order_relaxed);
}

com_log_clock_t com_log_get_clock(void)
{
    return (com_log_clock_t)atomic_load_explicit(&log_clock, memory_order_relaxed);
}

/* n as `width` decimal digits (zero-padded; higher digits dropped) at p. */
static char *put_digits(char *p, unsigned long long n, int width)
{
    for (int i = width - 1; i >= 0; i--, n /= 10)
        p[i] = (char)('0' + n % 10);
    return p + width;
}

size_t com_log_format_utc(uint64_t unix_ns, char *buf, size_t cap)
{
    if (cap < COM_LOG_UTC_LEN)
        return 0;
    uint64_t secs = unix_ns / COM_NS_PER_S;
    unsigned ms = (unsigned)(unix_ns % COM_NS_PER_S / COM_NS_PER_MS);
    uint64_t days = secs / 86400;
    unsigned sod = (unsigned)(secs % 86400);
    /* The civil date of `days`, counted in 400-year eras of 146097 days that
     * begin on a 1 March (the leap day then ends a year): 719468 days lie
     * from 0000-03-01 to 1970-01-01. */
    uint64_t z = days + 719468;
    uint64_t era = z / 146097;
    unsigned doe = (unsigned)(z - era * 146097);                          /* day of the era */
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* its year, 0-399 */
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* from 1 March */
    unsigned mp = (5 * doy + 2) / 153;                                    /* month from March */
    unsigned day = doy - (153 * mp + 2) / 5 + 1;
    unsigned month = mp < 10 ? mp + 3 : mp - 9;
    uint64_t year = era * 400 + yoe + (month <= 2);

    char *p = put_digits(buf, year, 4);
    *p++ = '-';
    p = put_digits(p, month, 2);
    *p++ = '-';
    p = put_digits(p, day, 2);
    *p++ = 'T';
    p = put_digits(p, sod / 3600, 2);
    *p++ = ':';
    p = put_digits(p, sod / 60 % 60, 2);
    *p++ = ':';
    p = put_digits(p, sod % 60, 2);
    *p++ = '.';
    p = put_digits(p, ms, 3);
    *p++ = 'Z';
    *p = '\0';
    return (size_t)(p - buf);
}

/* The stamp of a line written now, into buf (at least COM_LOG_UTC_LEN). */
static void stamp(char *buf, size_t cap)
{
    if (com_log_get_clock() == COM_LOG_CLOCK_UTC) {
        struct timespec ts; /* clock_gettime is async-signal-safe */
        if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && ts.tv_sec >= 0) {
            com_log_format_utc((uint64_t)ts.tv_sec * COM_NS_PER_S + (uint64_t)ts.tv_nsec, buf, cap);
            return;
        }
    }
    uint64_t now = com_clock_ns();
    uint64_t epoch = __atomic_load_n(&log_epoch_ns, __ATOMIC_RELAXED);
    if (epoch == 0) {
        uint64_t zero = 0;
        __atomic_compare_exchange_n(&log_epoch_ns, &zero, now, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        epoch = __atomic_load_n(&log_epoch_ns, __ATOMIC_RELAXED);
    }
    snprintf(buf, cap, "%9.3f", (double)(now - epoch) / 1e9);
}

void com_log_set_sink(com_log_sink_fn fn, void *arg)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_arg = arg;
    pthread_mutex_unlock(&sink_lock);
}

static void stderr_sink(const char *line, size_t len)
{
    /* One write per line; a short write on a pipe is retried for the rest. */
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, line, len);
        if (w <= 0)
            return;
        line += w;
        len -= (size_t)w;
    }
}

void com_log_write(com_log_level_t level, com_log_subsys_t subsys, const char *file, int line,
                   const char *fmt, ...)
{
    char buf[1024], when[32];
    stamp(when, sizeof(when));
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int n = snprintf(buf, sizeof(buf), "gmux[%d] %s %-5s %s %s:%d: ", (int)getpid(), when,
                     com_log_level_name(level), com_log_subsys_name(subsys), base, line);
    if (n < 0)
        return;
    size_t used = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + used, sizeof(buf) - used, fmt, ap);
    va_end(ap);
    if (m > 0)
        used += (size_t)m < sizeof(buf) - used ? (size_t)m : sizeof(buf) - used - 1;

    pthread_mutex_lock(&sink_lock);
    com_log_sink_fn fn = sink_fn;
    void *arg = sink_arg;
    pthread_mutex_unlock(&sink_lock);
    if (fn) {
        fn(level, subsys, buf, arg);
        return;
    }
    if (used > sizeof(buf) - 2)
        used = sizeof(buf) - 2;
    buf[used++] = '\n';
    stderr_sink(buf, used);
}
