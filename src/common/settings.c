/* Settings tables: parsing, loading from the environment, printing. */
#include "common/settings.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/parse.h"
#include "common/procmark.h"
#include "common/text.h"

#define DESC_(id, type, scopes, def, help) {"GMUX_" #id, COM_SETTING_##type, def, help, scopes},
const com_setting_desc_t com_settings_table[COM_SETTING_COUNT] = {COM_SETTINGS_LIST(DESC_)};
#undef DESC_

/*
 * The process-wide table. Threads of the shim, the net library's proxy and
 * the shmem layer read it while a later part's init reloads that part's
 * settings, so every value is one atomic word, written once with its final
 * value (never the default first) and read whole: a reader sees the value
 * before or after, never a mix. A string is a pointer into the environment
 * (glibc keeps every text setenv replaces), to a default literal or to a
 * copy com_settings_set keeps for the life of the process (global_kept), so
 * a pointer read before a change stays valid.
 */
static _Atomic uint64_t global_words[COM_SETTING_COUNT];
/* Defaults and environment, loaded by the first init, read or set. */
static pthread_once_t global_once = PTHREAD_ONCE_INIT;
/* Set by com_settings_set: later inits leave that setting alone. */
static atomic_bool global_overridden[COM_SETTING_COUNT];
/* A malformed variable was told (by an init's err, or at a first read): no
 * read warns of it again. */
static atomic_bool global_told[COM_SETTING_COUNT];
/* The text of a malformed variable nobody was told of yet: said when its
 * setting is first read, by the one reader that takes it. */
static _Atomic(const char *) global_unsaid[COM_SETTING_COUNT];
/* The GMUX_LOG and GMUX_LOG_CLOCK texts the log was last set from. */
static pthread_mutex_t global_log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *global_log_applied;
static const char *global_clock_applied;

struct kept_text {
    struct kept_text *next;
    char text[];
};
static pthread_mutex_t global_kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_text *global_kept;

_Static_assert(sizeof(double) == sizeof(uint64_t), "a double fits a settings word");

const char *com_setting_type_name(com_setting_type_t type)
{
    switch (type) {
    case COM_SETTING_BOOL:
        return "bool";
    case COM_SETTING_INT:
        return "int";
    case COM_SETTING_SIZE:
        return "size";
    case COM_SETTING_DOUBLE:
        return "double";
    case COM_SETTING_STRING:
        return "string";
    }
    return "?";
}

static const char *expected_form(com_setting_type_t type)
{
    switch (type) {
    case COM_SETTING_BOOL:
        return "a boolean (1/0, true/false, yes/no, on/off)";
    case COM_SETTING_INT:
        return "an integer";
    case COM_SETTING_SIZE:
        return "a size such as 4096, 64KiB, 2MiB or 1.5GiB";
    case COM_SETTING_DOUBLE:
        return "a finite number";
    case COM_SETTING_STRING:
        return "text";
    }
    return "?";
}

gmux_status_t com_settings_parse_value(const com_setting_desc_t *desc, const char *text,
                                       com_setting_value_t *out, char *err, size_t errlen)
{
    gmux_status_t st = GMUX_OK;
    com_setting_value_t v;
    switch (desc->type) {
    case COM_SETTING_BOOL:
        st = com_parse_bool(text, &v.b);
        break;
    case COM_SETTING_INT:
        st = com_parse_i64(text, &v.i);
        break;
    case COM_SETTING_SIZE:
        st = com_parse_size(text, &v.size);
        break;
    case COM_SETTING_DOUBLE:
        st = com_parse_double(text, &v.d);
        break;
    case COM_SETTING_STRING:
        v.s = text;
        break;
    }
    if (st != GMUX_OK) {
        if (err && errlen)
            snprintf(err, errlen, "%s='%s': expected %s%s", desc->name, text ? text : "",
                     expected_form(desc->type), st == GMUX_ERR_RANGE ? " (out of range)" : "");
        return GMUX_ERR_PARSE;
    }
    *out = v;
    return GMUX_OK;
}

static void append(char *err, size_t errlen, const char *msg)
{
    if (!err || errlen == 0)
        return;
    size_t used = strlen(err);
    if (used > 0 && used + 2 < errlen) {
        strcat(err, "; ");
        used += 2;
    }
    if (used < errlen - 1)
        strncat(err, msg, errlen - used - 1);
}

gmux_status_t com_settings_load_table(const com_setting_desc_t *descs, size_t count,
                                      com_setting_value_t *values, com_getenv_fn getenv_fn,
                                      char *err, size_t errlen)
{
    gmux_status_t result = GMUX_OK;
    if (err && errlen)
        err[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        char msg[256];
        /* Defaults are part of the code: a bad one is a programming error. */
        if (com_settings_parse_value(&descs[i], descs[i].def, &values[i], msg, sizeof(msg)) !=
            GMUX_OK) {
            append(err, errlen, msg);
            result = GMUX_ERR_INVALID;
            continue;
        }
        const char *text = getenv_fn ? getenv_fn(descs[i].name) : NULL;
        if (!text)
            continue;
        if (com_settings_parse_value(&descs[i], text, &values[i], msg, sizeof(msg)) != GMUX_OK) {
            append(err, errlen, msg);
            if (result == GMUX_OK)
                result = GMUX_ERR_PARSE;
        }
    }
    return result;
}

/* " [shim, daemon]": the parts of gmux that read a setting; "" for none. */
static void scope_names(unsigned scopes, char *buf, size_t len)
{
    static const struct {
        unsigned bit;
        const char *name;
    } parts[] = {{COM_SCOPE_ANY, "all"},       {COM_SCOPE_SHIM, "shim"},
                 {COM_SCOPE_DAEMON, "daemon"}, {COM_SCOPE_CLIENT, "client"},
                 {COM_SCOPE_NET, "net"},       {COM_SCOPE_SHMEM, "shmem"}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]) && used < len; i++)
        if (scopes & parts[i].bit)
            used +=
                (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : " [", parts[i].name);
    if (used && used + 1 < len)
        strcat(buf, "]");
}

void com_settings_print_table(FILE *out, const com_setting_desc_t *descs, size_t count,
                              com_getenv_fn getenv_fn)
{
    fprintf(out, "%-28s %-7s %-10s %s\n", "VARIABLE", "TYPE", "DEFAULT", "DESCRIPTION [read by]");
    for (size_t i = 0; i < count; i++) {
        char parts[64];
        scope_names(descs[i].scopes, parts, sizeof(parts));
        char help[1024];
        snprintf(help, sizeof(help), "%s%s", descs[i].help, parts);
        int col =
            fprintf(out, "%-28s %-7s %-10s ", descs[i].name, com_setting_type_name(descs[i].type),
                    descs[i].def[0] ? descs[i].def : "\"\"");
        com_text_wrap(out, help, col > 0 ? (size_t)col : 0, COM_TEXT_WIDTH);
        const char *cur = getenv_fn ? getenv_fn(descs[i].name) : NULL;
        if (cur)
            fprintf(out, "%-28s %-7s %-10s (now set to '%s')\n", "", "", "", cur);
    }
}

static const char *process_getenv(const char *name)
{
    return getenv(name);
}

/* Parses the text of the global setting `id`: its type's form, and for a
 * setting of a fixed list of words (GMUX_LOG_CLOCK) one of them. */
static gmux_status_t parse_global(size_t id, const char *text, com_setting_value_t *out, char *err,
                                  size_t errlen)
{
    const com_setting_desc_t *d = &com_settings_table[id];
    com_setting_value_t v;
    gmux_status_t st = com_settings_parse_value(d, text, &v, err, errlen);
    com_log_clock_t clock;
    if (st == GMUX_OK && id == COM_SETTING_LOG_CLOCK &&
        com_log_clock_parse(v.s, &clock) != GMUX_OK) {
        if (err && errlen)
            snprintf(err, errlen, "%s='%s': expected elapsed or utc", d->name, text);
        st = GMUX_ERR_PARSE;
    }
    if (st == GMUX_OK)
        *out = v;
    return st;
}

/* The settings that take one of a fixed list of words, as the part that
 * reads each accepts them (an init loads any text: that part falls back to
 * a default of its own, with a warning). A command's check refuses another
 * word before it starts the part: what the help promises for a malformed
 * setting. GMUX_LOG_CLOCK is parse_global's. */
static const struct {
    com_setting_id_t id;
    const char *words[8]; /* NULL-terminated */
} word_settings[] = {
    {COM_SETTING_POLICY, {"off", "demand", "proactive"}},
    {COM_SETTING_SHIM_TRACE_FORMAT, {"text", "binary"}},
    {COM_SETTING_DAEMON_PLACEMENT, {"none", "swap", "opt", "chunk"}},
    {COM_SETTING_TASK_CLASS, {"batch", "latency"}},
    {COM_SETTING_NET_HMEM, {"auto", "rma", "off"}},
    {COM_SETTING_NET_PROVIDER,
     {"auto", "shm", "tcp", "tcp;ofi_rxm", "verbs;ofi_rxm", "efa", "cxi"}},
    {COM_SETTING_NET_DEV_CLAIM, {"cas", "faa"}},
};

/* Whether text is one of the words of setting id (any text for the others);
 * if not, err says which were expected. */
static bool word_ok(size_t id, const char *text, char *err, size_t errlen)
{
    for (size_t w = 0; w < sizeof(word_settings) / sizeof(word_settings[0]); w++) {
        if ((size_t)word_settings[w].id != id)
            continue;
        const char *const *words = word_settings[w].words;
        size_t n = 0;
        for (; words[n]; n++)
            if (strcmp(text, words[n]) == 0)
                return true;
        int at = snprintf(err, errlen, "%s='%s': expected", com_settings_table[id].name, text);
        for (size_t k = 0; k < n && at >= 0 && (size_t)at < errlen; k++)
            at += snprintf(err + at, errlen - (size_t)at, "%s%s",
                           k == 0      ? " "
                           : k + 1 < n ? ", "
                                       : " or ",
                           words[k]);
        return false;
    }
    return true;
}

/* The malformed variables of the settings read in scopes into err; with
 * words, also a word not in a setting's list (word_settings). */
static gmux_status_t check_scopes(unsigned scopes, com_getenv_fn getenv_fn, bool words, char *err,
                                  size_t errlen)
{
    gmux_status_t st = GMUX_OK;
    if (err && errlen)
        err[0] = '\0';
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const com_setting_desc_t *d = &com_settings_table[i];
        const char *text = getenv_fn ? getenv_fn(d->name) : NULL;
        com_setting_value_t v;
        char msg[256];
        if (!text || !(d->scopes & (scopes | COM_SCOPE_ANY)) ||
            (parse_global(i, text, &v, msg, sizeof(msg)) == GMUX_OK &&
             (!words || word_ok(i, text, msg, sizeof(msg)))))
            continue;
        append(err, errlen, msg);
        st = GMUX_ERR_PARSE;
    }
    return st;
}

gmux_status_t com_settings_check(unsigned scopes, com_getenv_fn getenv_fn, char *err, size_t errlen)
{
    return check_scopes(scopes, getenv_fn, true, err, errlen);
}

static uint64_t word_of(com_setting_type_t type, com_setting_value_t v)
{
    uint64_t w = 0;
    switch (type) {
    case COM_SETTING_BOOL:
        return v.b;
    case COM_SETTING_INT:
        return (uint64_t)v.i;
    case COM_SETTING_SIZE:
        return v.size;
    case COM_SETTING_DOUBLE:
        memcpy(&w, &v.d, sizeof(w));
        return w;
    case COM_SETTING_STRING:
        return (uint64_t)(uintptr_t)v.s;
    }
    return 0;
}

static com_setting_value_t value_of(com_setting_type_t type, uint64_t w)
{
    com_setting_value_t v;
    memset(&v, 0, sizeof(v));
    switch (type) {
    case COM_SETTING_BOOL:
        v.b = w != 0;
        break;
    case COM_SETTING_INT:
        v.i = (int64_t)w;
        break;
    case COM_SETTING_SIZE:
        v.size = w;
        break;
    case COM_SETTING_DOUBLE:
        memcpy(&v.d, &w, sizeof(w));
        break;
    case COM_SETTING_STRING:
        v.s = (const char *)(uintptr_t)w;
        break;
    }
    return v;
}

static void store(size_t id, com_setting_value_t v)
{
    atomic_store_explicit(&global_words[id], word_of(com_settings_table[id].type, v),
                          memory_order_release);
}

/* The value of setting `id` from the environment, else its default: a
 * malformed variable keeps the default and its text goes to *bad. */
static com_setting_value_t env_value(size_t id, const char **bad)
{
    const com_setting_desc_t *d = &com_settings_table[id];
    com_setting_value_t v, def;
    memset(&def, 0, sizeof(def));
    /* defaults are part of the code: test_every_global_default_parses */
    (void)com_settings_parse_value(d, d->def, &def, NULL, 0);
    const char *text = getenv(d->name);
    *bad = NULL;
    if (!text)
        return def;
    if (parse_global(id, text, &v, NULL, 0) == GMUX_OK)
        return v;
    *bad = text;
    return def;
}

/* Sets the log's clock from GMUX_LOG_CLOCK's value when it changed.
 * LOCKING: global_log_lock. */
static void apply_clock_locked(const char *text)
{
    com_log_clock_t clock;
    if (global_clock_applied && strcmp(global_clock_applied, text) == 0)
        return;
    global_clock_applied = text;
    if (com_log_clock_parse(text, &clock) == GMUX_OK) /* else the default's text */
        com_log_set_clock(clock);
}

/* Sets the log levels from GMUX_LOG's value and the clock from
 * GMUX_LOG_CLOCK's when they changed (a malformed one changes nothing; the
 * inits say it). Repeated inits with the same environment leave the log
 * alone. */
static void apply_log(void)
{
    const char *clock = com_setting(COM_SETTING_LOG_CLOCK).s;
    pthread_mutex_lock(&global_log_lock);
    const char *spec = com_setting(COM_SETTING_LOG).s;
    if (!global_log_applied || strcmp(global_log_applied, spec) != 0) {
        global_log_applied = spec;
        (void)com_log_configure(spec, NULL, 0);
    }
    apply_clock_locked(clock);
    pthread_mutex_unlock(&global_log_lock);
}

/* pthread_once: every setting from the environment. The malformed ones no
 * init has said yet wait for their first read. */
static void load_once(void)
{
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const char *bad;
        store(i, env_value(i, &bad));
        if (bad && !atomic_load(&global_told[i]))
            atomic_store(&global_unsaid[i], bad);
    }
    pthread_mutex_lock(&global_log_lock);
    global_log_applied =
        value_of(COM_SETTING_STRING, atomic_load(&global_words[COM_SETTING_LOG])).s;
    (void)com_log_configure(global_log_applied, NULL, 0);
    apply_clock_locked(
        value_of(COM_SETTING_STRING, atomic_load(&global_words[COM_SETTING_LOG_CLOCK])).s);
    pthread_mutex_unlock(&global_log_lock);
}

static bool reads(const com_setting_desc_t *d, unsigned scopes)
{
    return (d->scopes & (scopes | COM_SCOPE_ANY)) != 0;
}

/* Whether a malformed GMUX_LOG of this value was told already in this
 * process, by any init of any copy of src/common (it is everyone's, so
 * every init checks it); marks it told. Until 2026-12-01 each init said it
 * again, so a program using libgmux-shmem.so (whose shmem_init runs
 * gmux_comm_init) or libgmux.so beside libgmux-net.so said it twice
 * (test_shmem_settings). */
static bool log_told(const char *spec)
{
    char key[320];
    snprintf(key, sizeof(key), "GMUX_LOG=%s", spec ? spec : "");
    return com_procmark_test_and_set(key);
}

gmux_status_t com_settings_init_scoped(unsigned scopes, char *err, size_t errlen)
{
    gmux_status_t st = check_scopes(scopes, process_getenv, false, err, errlen);
    /* said in err now, so never again at a read: marked before the first
     * load, which would otherwise keep them for a read to say */
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const com_setting_desc_t *d = &com_settings_table[i];
        const char *text = getenv(d->name);
        com_setting_value_t v;
        if (text && reads(d, scopes) && parse_global(i, text, &v, NULL, 0) != GMUX_OK) {
            atomic_store(&global_told[i], true);
            atomic_store(&global_unsaid[i], NULL);
        }
    }
    pthread_once(&global_once, load_once);
    /* this part's own settings as the environment has them now; the others
     * stay as they are, since their parts may be running */
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const char *bad;
        if (reads(&com_settings_table[i], scopes) && !atomic_load(&global_overridden[i]))
            store(i, env_value(i, &bad));
    }
    char logerr[256];
    const char *logspec = getenv("GMUX_LOG");
    if (com_log_check(logspec, logerr, sizeof(logerr)) != GMUX_OK) {
        /* every init that sees it fails; only the first says why (until
         * 2026-12-01 the later ones said GMUX_OK) */
        if (!log_told(logspec))
            append(err, errlen, logerr);
        if (st == GMUX_OK)
            st = GMUX_ERR_PARSE;
    }
    apply_log();
    return st;
}

gmux_status_t com_settings_init(char *err, size_t errlen)
{
    return com_settings_init_scoped(COM_SCOPE_ALL, err, errlen);
}

/* A copy of text that lives as long as the process. */
static const char *keep_text(const char *text)
{
    size_t n = strlen(text) + 1;
    struct kept_text *k = malloc(sizeof(*k) + n);
    if (!k)
        return NULL;
    memcpy(k->text, text, n);
    pthread_mutex_lock(&global_kept_lock);
    k->next = global_kept;
    global_kept = k;
    pthread_mutex_unlock(&global_kept_lock);
    return k->text;
}

gmux_status_t com_settings_set(com_setting_id_t id, const char *text, char *err, size_t errlen)
{
    if ((unsigned)id >= COM_SETTING_COUNT || !text)
        return GMUX_ERR_INVALID;
    pthread_once(&global_once, load_once);
    const com_setting_desc_t *d = &com_settings_table[id];
    com_setting_value_t v;
    gmux_status_t st = parse_global(id, text, &v, err, errlen);
    if (st == GMUX_OK && id == COM_SETTING_LOG)
        st = com_log_check(text, err, errlen);
    if (st != GMUX_OK)
        return st;
    if (d->type == COM_SETTING_STRING && !(v.s = keep_text(text)))
        return GMUX_ERR_NOMEM;
    atomic_store(&global_overridden[id], true);
    /* the variable no longer counts */
    atomic_store(&global_told[id], true);
    atomic_store(&global_unsaid[id], NULL);
    store(id, v);
    if (id == COM_SETTING_LOG || id == COM_SETTING_LOG_CLOCK)
        apply_log();
    return GMUX_OK;
}

com_setting_value_t com_setting(com_setting_id_t id)
{
    pthread_once(&global_once, load_once);
    const com_setting_desc_t *d = &com_settings_table[id];
    if (atomic_load_explicit(&global_unsaid[id], memory_order_relaxed)) {
        const char *text = atomic_exchange(&global_unsaid[id], NULL);
        char msg[256];
        com_setting_value_t v;
        if (text && !atomic_exchange(&global_told[id], true) &&
            parse_global(id, text, &v, msg, sizeof(msg)) != GMUX_OK)
            COM_WARN(COMMON, "%s; the default %s is used", msg, d->def[0] ? d->def : "\"\"");
    }
    return value_of(d->type, atomic_load_explicit(&global_words[id], memory_order_acquire));
}

/* Read by the runtime outside the table: what `gmux launch` gives each rank. */
static const char *const launcher_names[] = {"GMUX_RANK", "GMUX_SIZE", "GMUX_NNODES",
                                             "GMUX_BOOTSTRAP", "GMUX_JOB"};

#define SUGGEST_MAX_EDITS 2
#define SUGGEST_MAX_LEN   64

/* Edits between a and b (optimal string alignment: insert, delete, replace,
 * swap two neighbours), ignoring case; anything above `cap` reads as cap+1. */
static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb, size_t cap)
{
    if (na > SUGGEST_MAX_LEN || nb > SUGGEST_MAX_LEN || (na > nb ? na - nb : nb - na) > cap)
        return cap + 1;
    size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            int ai = toupper((unsigned char)a[i - 1]), bj = toupper((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (ai != bj);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ai == toupper((unsigned char)b[j - 2]) &&
                toupper((unsigned char)a[i - 2]) == bj && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[na][nb] > cap ? cap + 1 : d[na][nb];
}

static const char *suggest_n(const char *name, size_t n)
{
    if (n < 5 || strncasecmp(name, "GMUX_", 5) != 0)
        return NULL;
    for (size_t i = 0; i < COM_SETTING_COUNT; i++)
        if (strlen(com_settings_table[i].name) == n &&
            strncmp(com_settings_table[i].name, name, n) == 0)
            return NULL;
    for (size_t i = 0; i < sizeof(launcher_names) / sizeof(launcher_names[0]); i++)
        if (strlen(launcher_names[i]) == n && strncmp(launcher_names[i], name, n) == 0)
            return NULL;
    const char *best = NULL;
    size_t best_d = SUGGEST_MAX_EDITS + 1;
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const char *cand = com_settings_table[i].name;
        size_t dist = edit_distance(name + 5, n - 5, cand + 5, strlen(cand) - 5, SUGGEST_MAX_EDITS);
        if (dist < best_d) {
            best_d = dist;
            best = cand;
        }
    }
    return best;
}

const char *com_settings_suggest(const char *name)
{
    return name ? suggest_n(name, strlen(name)) : NULL;
}

size_t com_settings_warn_misspelt(char *const *envp, FILE *out, const char *prog)
{
    size_t warned = 0;
    for (size_t i = 0; envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');
        size_t n = eq ? (size_t)(eq - envp[i]) : strlen(envp[i]);
        const char *sugg = suggest_n(envp[i], n);
        if (!sugg)
            continue;
        fprintf(out, "%s: warning: %.*s is not a gmux setting (did you mean %s?)\n", prog, (int)n,
                envp[i], sugg);
        warned++;
    }
    return warned;
}
