/*
 * Settings: typed values read from GMUX_* environment variables, with
 * defaults and help, declared once in settings_list.h.
 *
 * The table machinery (com_settings_parse_value, com_settings_load_table,
 * com_settings_print_table) works on any table, so tests and tools can
 * describe their own; the runtime's global table is generated from
 * COM_SETTINGS_LIST and read with the COM_SETTING_* accessors.
 *
 * Thread-safety: the functions of the global table are safe from any
 * thread (the others touch only what their caller passes). The first
 * init, read or set loads the whole table from the environment (once); a
 * later init reloads only the settings of its own scopes (the part being
 * started), so another part's threads keep their values. A reader racing
 * with a reload or a set sees the old or the new value, never another (a
 * default in between, a torn word); a string it got stays valid for the
 * life of the process.
 */
#ifndef COM_SETTINGS_H
#define COM_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gmux/status.h>

#include "common/settings_list.h"

typedef enum com_setting_type {
    COM_SETTING_BOOL,   /* 1/0, true/false, yes/no, on/off */
    COM_SETTING_INT,    /* signed 64-bit, decimal or 0x-hex */
    COM_SETTING_SIZE,   /* bytes, with K/M/G/T (binary) units */
    COM_SETTING_DOUBLE, /* finite floating point */
    COM_SETTING_STRING, /* any text */
} com_setting_type_t;

/* The parts of gmux that read a setting. A command checks the settings of
 * the parts it runs (itself, and the daemon, shim or ranks it starts), so a
 * malformed variable that nothing it runs reads does not stop it. */
typedef enum com_setting_scope {
    COM_SCOPE_ANY = 1u << 0,    /* every process: checked by all */
    COM_SCOPE_SHIM = 1u << 1,   /* libgmux.so in a program, with its daemon client */
    COM_SCOPE_DAEMON = 1u << 2, /* gmuxd */
    COM_SCOPE_CLIENT = 1u << 3, /* what asks gmuxd (gmux status, top) */
    COM_SCOPE_NET = 1u << 4,    /* the net library in each rank */
    COM_SCOPE_SHMEM = 1u << 5,  /* the OpenSHMEM layer in each PE */
    COM_SCOPE_ALL = (1u << 6) - 1,
} com_setting_scope_t;

typedef struct com_setting_desc {
    const char *name; /* environment variable, e.g. "GMUX_LOG" */
    com_setting_type_t type;
    const char *def; /* default, in the same syntax as the variable */
    const char *help;
    unsigned scopes; /* com_setting_scope_t bits; 0 in tables of tests and tools */
} com_setting_desc_t;

typedef union com_setting_value {
    bool b;
    int64_t i;
    uint64_t size;
    double d;
    const char *s; /* the environment's text, the default literal or a kept copy */
} com_setting_value_t;

typedef const char *(*com_getenv_fn)(const char *name);

/* Parses text as desc->type; on failure err says what was expected. */
gmux_status_t com_settings_parse_value(const com_setting_desc_t *desc, const char *text,
                                       com_setting_value_t *out, char *err, size_t errlen);

/*
 * Fills values[i] for every desc[i]: from getenv_fn(name) when set, from the
 * default otherwise. A malformed variable keeps its default and is reported
 * in err (all of them, separated by "; "); the others still load.
 * Returns GMUX_ERR_PARSE if any was malformed.
 */
gmux_status_t com_settings_load_table(const com_setting_desc_t *descs, size_t count,
                                      com_setting_value_t *values, com_getenv_fn getenv_fn,
                                      char *err, size_t errlen);

/* Prints name, type, default, current value (where set), help and the parts
 * that read each setting ("[shim, daemon]"; nothing for scopes 0). */
void com_settings_print_table(FILE *out, const com_setting_desc_t *descs, size_t count,
                              com_getenv_fn getenv_fn);

const char *com_setting_type_name(com_setting_type_t type);

/* --- the runtime's own table ---------------------------------------------- */

#define COM_SETTING_ID_(id, type, scopes, def, help) COM_SETTING_##id,
typedef enum com_setting_id {
    COM_SETTINGS_LIST(COM_SETTING_ID_) COM_SETTING_COUNT
} com_setting_id_t;
#undef COM_SETTING_ID_

extern const com_setting_desc_t com_settings_table[COM_SETTING_COUNT];

/* Loads the global table from the process environment and applies GMUX_LOG.
 * Every malformed variable keeps its default and is listed in err (the
 * caller reports them): GMUX_ERR_PARSE. Same as com_settings_init_scoped
 * with COM_SCOPE_ALL. */
gmux_status_t com_settings_init(char *err, size_t errlen);

/* Loads the global table as com_settings_init does, but returns
 * GMUX_ERR_PARSE, with err naming each one and the form it wants, only for
 * malformed variables of settings read in `scopes`, every time it is
 * called: the caller tells them. A malformed GMUX_LOG (everyone's) fails
 * every init too, but is in err only at the first init of the process that
 * sees its value, whichever copy of src/common (each shared library has
 * one) makes it: procmark.h, test_shmem_settings. So err may be empty on
 * GMUX_ERR_PARSE: there is nothing left to tell. Any other
 * malformed variable keeps its default and is said as a warning when the
 * setting is first read, if ever, unless an init told it already: each is
 * told once per process (test_malformed_told_once). The first call loads
 * every setting; a later one reloads from the environment (after setenv)
 * the settings read in `scopes` and GMUX_LOG, and nothing else, skipping
 * those com_settings_set overrode. The log levels follow GMUX_LOG when its
 * value changed. */
gmux_status_t com_settings_init_scoped(unsigned scopes, char *err, size_t errlen);

/* Checks, without loading anything, the variables of the runtime's settings
 * read in `scopes` as getenv_fn gives them: GMUX_ERR_PARSE with each
 * malformed one in err, else GMUX_OK. Malformed here includes a word out
 * of the list of a setting that takes one (GMUX_POLICY=eager), which an
 * init loads as it is for the part reading it to fall back from. */
gmux_status_t com_settings_check(unsigned scopes, com_getenv_fn getenv_fn, char *err,
                                 size_t errlen);

/* Overrides one setting from text (command-line options, tests): the
 * value wins over the variable, which later inits neither reload nor warn
 * of, for the rest of the process. A string is copied (text need not live
 * on); GMUX_LOG sets the log levels too. Safe from any thread: readers see
 * the old value or the new. GMUX_ERR_PARSE (err says why) leaves it as is. */
gmux_status_t com_settings_set(com_setting_id_t id, const char *text, char *err, size_t errlen);

/* The value of one setting (the COM_SETTING_* macros below read it). */
com_setting_value_t com_setting(com_setting_id_t id);

/* A GMUX_* name that is no setting of the table and not one the launcher sets
 * (GMUX_RANK, GMUX_SIZE, GMUX_NNODES, GMUX_BOOTSTRAP, GMUX_JOB): the setting it
 * most likely misspells, at most two edits away (letters inserted, deleted,
 * replaced or two neighbours swapped; case ignored), or NULL. NULL for a name
 * that is a setting, or too far from every one: other tools' GMUX_* variables
 * are left alone. */
const char *com_settings_suggest(const char *name);

/* One warning line on `out`, "PROG: warning: GMUX_X is not a gmux setting
 * (did you mean GMUX_Y?)", for each NAME=VALUE entry of envp whose name
 * com_settings_suggest finds a setting for. Returns how many. */
size_t com_settings_warn_misspelt(char *const *envp, FILE *out, const char *prog);

#define COM_SETTING_BOOL(id)   (com_setting(COM_SETTING_##id).b)
#define COM_SETTING_INT(id)    (com_setting(COM_SETTING_##id).i)
#define COM_SETTING_SIZE(id)   (com_setting(COM_SETTING_##id).size)
#define COM_SETTING_DOUBLE(id) (com_setting(COM_SETTING_##id).d)
#define COM_SETTING_STRING(id) (com_setting(COM_SETTING_##id).s)

#endif /* COM_SETTINGS_H */
