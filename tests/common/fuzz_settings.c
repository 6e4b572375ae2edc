/*
 * libFuzzer harness for the settings machinery, which every gmux process
 * (the shim inside any program, gmuxd, the ranks) runs over its environment.
 * The input is an environment block: lines "NAME=VALUE" separated by '\n'
 * (a NUL ends it). Each line whose NAME is a setting gives that setting's
 * text; every name also goes to the misspelling check. No input may crash
 * the checks, and they must agree with one another:
 *   - com_settings_check over all scopes fails when loading the table from
 *     the same block reports a malformed variable (with the same message
 *     when no other check fails), and also for a word out of the list of a
 *     setting that takes one (GMUX_POLICY=eager), which the table loads as
 *     text; when it fails, its message names a variable that was given;
 *   - a setting that parses keeps its value when parsed again;
 *   - GMUX_LOG's text is accepted by com_log_check exactly when
 *     com_log_configure takes it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_VARS 32

static char block[4096];
static char *vars[MAX_VARS + 1];
static size_t nvars;

/* The value of the last line that names `name`, as getenv would give it. */
static const char *block_getenv(const char *name)
{
    size_t n = strlen(name);
    const char *found = NULL;
    for (size_t i = 0; i < nvars; i++)
        if (strncmp(vars[i], name, n) == 0 && vars[i][n] == '=')
            found = vars[i] + n + 1;
    return found;
}

static bool same_value(com_setting_type_t type, com_setting_value_t a, com_setting_value_t b)
{
    switch (type) {
    case COM_SETTING_BOOL:
        return a.b == b.b;
    case COM_SETTING_INT:
        return a.i == b.i;
    case COM_SETTING_SIZE:
        return a.size == b.size;
    case COM_SETTING_DOUBLE:
        return memcmp(&a.d, &b.d, sizeof(a.d)) == 0;
    case COM_SETTING_STRING:
        return a.s == b.s;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    size_t n = size < sizeof(block) - 1 ? size : sizeof(block) - 1;
    memcpy(block, data, n);
    block[n] = '\0';
    nvars = 0;
    for (char *p = block; *p && nvars < MAX_VARS;) {
        vars[nvars++] = p;
        char *nl = strchr(p, '\n');
        if (!nl)
            break;
        *nl = '\0';
        p = nl + 1;
    }
    vars[nvars] = NULL;

    char err[512], err2[512];
    gmux_status_t checked = com_settings_check(COM_SCOPE_ALL, block_getenv, err, sizeof(err));
    com_setting_value_t values[COM_SETTING_COUNT];
    gmux_status_t loaded = com_settings_load_table(com_settings_table, COM_SETTING_COUNT, values,
                                                   block_getenv, err2, sizeof(err2));
    if (loaded == GMUX_ERR_INVALID) /* a default of the table does not parse */
        abort();
    if ((loaded != GMUX_OK && checked == GMUX_OK) || (checked != GMUX_OK && !err[0]))
        abort();
    if (loaded != GMUX_OK && !strstr(err, err2) && !strchr(err, ';'))
        abort(); /* one message: the load's own */
    if (checked != GMUX_OK) {
        bool named = false;
        for (size_t i = 0; i < COM_SETTING_COUNT && !named; i++)
            named = block_getenv(com_settings_table[i].name) &&
                    strstr(err, com_settings_table[i].name) == err;
        if (!named)
            abort();
    }
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        const com_setting_desc_t *d = &com_settings_table[i];
        const char *text = block_getenv(d->name);
        com_setting_value_t v;
        if (!text || com_settings_parse_value(d, text, &v, NULL, 0) != GMUX_OK)
            continue;
        if (!same_value(d->type, v, values[i]))
            abort();
    }
    const char *log = block_getenv("GMUX_LOG");
    if (log) {
        gmux_status_t ok = com_log_check(log, err, sizeof(err));
        gmux_status_t applied = com_log_configure(log, err2, sizeof(err2));
        if ((ok == GMUX_OK) != (applied == GMUX_OK))
            abort();
        com_log_configure(NULL, NULL, 0);
    }
    for (size_t i = 0; i < nvars; i++) {
        const char *s = com_settings_suggest(vars[i]);
        if (s && strncmp(s, "GMUX_", 5) != 0)
            abort();
    }
    com_settings_warn_misspelt(vars, sink, "fuzz");
    return 0;
}
