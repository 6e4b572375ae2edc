/* Settings tables: parsing, loading from the environment, printing. */
#include "common/settings.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/parse.h"

#define DESC_(id, type, scopes, def, help) {"GMUX_" #id, COM_SETTING_##type, def, help, scopes},
const com_setting_desc_t com_settings_table[COM_SETTING_COUNT] = {COM_SETTINGS_LIST(DESC_)};
#undef DESC_

static com_setting_value_t global_values[COM_SETTING_COUNT];
static int global_loaded;
/* The text of a malformed variable nobody was told of yet: said when its
 * setting is first read (init writes it before other threads read). */
static _Atomic(const char *) global_unsaid[COM_SETTING_COUNT];

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
    fprintf(out, "%-28s %-7s %-10s %s\n", "VARIABLE", "TYPE", "DEFAULT",
            "DESCRIPTION [parts of gmux that read it]");
    for (size_t i = 0; i < count; i++) {
        char parts[64];
        scope_names(descs[i].scopes, parts, sizeof(parts));
        fprintf(out, "%-28s %-7s %-10s %s%s\n", descs[i].name, com_setting_type_name(descs[i].type),
                descs[i].def[0] ? descs[i].def : "\"\"", descs[i].help, parts);
        const char *cur = getenv_fn ? getenv_fn(descs[i].name) : NULL;
        if (cur)
            fprintf(out, "%-28s %-7s %-10s (now set to '%s')\n", "", "", "", cur);
    }
}

static const char *process_getenv(const char *name)
{
    return getenv(name);
}

gmux_status_t com_settings_check(unsigned scopes, com_getenv_fn getenv_fn, char *err, size_t errlen)
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
            com_settings_parse_value(d, text, &v, msg, sizeof(msg)) == GMUX_OK)
            continue;
        append(err, errlen, msg);
        st = GMUX_ERR_PARSE;
    }
    return st;
}

gmux_status_t com_settings_init_scoped(unsigned scopes, char *err, size_t errlen)
{
    (void)com_settings_load_table(com_settings_table, COM_SETTING_COUNT, global_values,
                                  process_getenv, NULL, 0);
    gmux_status_t st = com_settings_check(scopes, process_getenv, err, errlen);
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const com_setting_desc_t *d = &com_settings_table[i];
        const char *text = getenv(d->name);
        com_setting_value_t v;
        bool unsaid = text && !(d->scopes & (scopes | COM_SCOPE_ANY)) &&
                      com_settings_parse_value(d, text, &v, NULL, 0) != GMUX_OK;
        atomic_store_explicit(&global_unsaid[i], unsaid ? text : NULL, memory_order_relaxed);
    }
    global_loaded = 1;
    char logerr[256];
    if (com_log_configure(global_values[COM_SETTING_LOG].s, logerr, sizeof(logerr)) != GMUX_OK) {
        append(err, errlen, logerr);
        if (st == GMUX_OK)
            st = GMUX_ERR_PARSE;
    }
    return st;
}

gmux_status_t com_settings_init(char *err, size_t errlen)
{
    return com_settings_init_scoped(COM_SCOPE_ALL, err, errlen);
}

gmux_status_t com_settings_set(com_setting_id_t id, const char *text, char *err, size_t errlen)
{
    if ((unsigned)id >= COM_SETTING_COUNT)
        return GMUX_ERR_INVALID;
    if (!global_loaded)
        com_settings_load_table(com_settings_table, COM_SETTING_COUNT, global_values, NULL, NULL,
                                0);
    global_loaded = 1;
    gmux_status_t st =
        com_settings_parse_value(&com_settings_table[id], text, &global_values[id], err, errlen);
    if (st == GMUX_OK) /* the variable no longer counts */
        atomic_store_explicit(&global_unsaid[id], NULL, memory_order_relaxed);
    return st;
}

const com_setting_value_t *com_setting(com_setting_id_t id)
{
    if (!global_loaded) {
        /* Defaults only: a library read before init must not see zeros. */
        com_settings_load_table(com_settings_table, COM_SETTING_COUNT, global_values, NULL, NULL,
                                0);
        global_loaded = 1;
    }
    if (atomic_load_explicit(&global_unsaid[id], memory_order_relaxed)) {
        const char *text = atomic_exchange(&global_unsaid[id], NULL);
        char msg[256];
        com_setting_value_t v;
        if (text && com_settings_parse_value(&com_settings_table[id], text, &v, msg, sizeof(msg)) !=
                        GMUX_OK)
            COM_WARN(COMMON, "%s; the default %s is used", msg,
                     com_settings_table[id].def[0] ? com_settings_table[id].def : "\"\"");
    }
    return &global_values[id];
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
