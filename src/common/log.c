/* GMUX_LOG parsing, line formatting and the default stderr sink. */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
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
    char buf[1024];
    uint64_t now = com_clock_ns();
    uint64_t epoch = __atomic_load_n(&log_epoch_ns, __ATOMIC_RELAXED);
    if (epoch == 0) {
        uint64_t zero = 0;
        __atomic_compare_exchange_n(&log_epoch_ns, &zero, now, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        epoch = __atomic_load_n(&log_epoch_ns, __ATOMIC_RELAXED);
    }
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    int n = snprintf(buf, sizeof(buf), "gmux[%d] %9.3f %-5s %s %s:%d: ", (int)getpid(),
                     (double)(now - epoch) / 1e9, com_log_level_name(level),
                     com_log_subsys_name(subsys), base, line);
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
