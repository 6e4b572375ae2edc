/* Tests of settings tables: parsing, environment loading, printing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/settings.h"

static const com_setting_desc_t table[] = {
    {"GMUX_T_BOOL", COM_SETTING_BOOL, "false", "a flag", 0},
    {"GMUX_T_INT", COM_SETTING_INT, "-3", "a count", 0},
    {"GMUX_T_SIZE", COM_SETTING_SIZE, "2MiB", "a chunk size", 0},
    {"GMUX_T_DOUBLE", COM_SETTING_DOUBLE, "0.5", "a ratio", 0},
    {"GMUX_T_STRING", COM_SETTING_STRING, "tcp", "a provider", 0},
};
#define N (sizeof(table) / sizeof(table[0]))

static const char *fake_env[][2] = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, {NULL, NULL}};

static const char *fake_getenv(const char *name)
{
    for (size_t i = 0; i < sizeof(fake_env) / sizeof(fake_env[0]); i++)
        if (fake_env[i][0] && strcmp(fake_env[i][0], name) == 0)
            return fake_env[i][1];
    return NULL;
}

static void set_fake(size_t slot, const char *name, const char *value)
{
    fake_env[slot][0] = name;
    fake_env[slot][1] = value;
}

static void clear_fake(void)
{
    memset(fake_env, 0, sizeof(fake_env));
}

static void test_defaults_when_unset(void **state)
{
    (void)state;
    clear_fake();
    com_setting_value_t v[N];
    char err[256];
    assert_int_equal(com_settings_load_table(table, N, v, fake_getenv, err, sizeof(err)), GMUX_OK);
    assert_false(v[0].b);
    assert_int_equal(v[1].i, -3);
    assert_int_equal(v[2].size, 2u << 20);
    assert_true(v[3].d == 0.5);
    assert_string_equal(v[4].s, "tcp");
    assert_string_equal(err, "");
}

static void test_environment_overrides(void **state)
{
    (void)state;
    clear_fake();
    set_fake(0, "GMUX_T_BOOL", "on");
    set_fake(1, "GMUX_T_SIZE", "64KiB");
    set_fake(2, "GMUX_T_STRING", "shm");
    com_setting_value_t v[N];
    assert_int_equal(com_settings_load_table(table, N, v, fake_getenv, NULL, 0), GMUX_OK);
    assert_true(v[0].b);
    assert_int_equal(v[2].size, 65536);
    assert_string_equal(v[4].s, "shm");
    assert_int_equal(v[1].i, -3);
}

static void test_malformed_values_reported_others_loaded(void **state)
{
    (void)state;
    clear_fake();
    set_fake(0, "GMUX_T_SIZE", "lots");
    set_fake(1, "GMUX_T_INT", "7");
    set_fake(2, "GMUX_T_DOUBLE", "half");
    com_setting_value_t v[N];
    char err[512];
    assert_int_equal(com_settings_load_table(table, N, v, fake_getenv, err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "GMUX_T_SIZE='lots': expected a size"));
    assert_non_null(strstr(err, "GMUX_T_DOUBLE='half': expected a finite number"));
    assert_int_equal(v[2].size, 2u << 20); /* kept its default */
    assert_int_equal(v[1].i, 7);           /* good ones still load */
}

static void test_print_table(void **state)
{
    (void)state;
    clear_fake();
    set_fake(0, "GMUX_T_INT", "9");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    com_settings_print_table(f, table, N, fake_getenv);
    fclose(f);
    assert_non_null(strstr(buf, "GMUX_T_SIZE"));
    assert_non_null(strstr(buf, "a chunk size"));
    assert_non_null(strstr(buf, "2MiB"));
    assert_non_null(strstr(buf, "now set to '9'"));
    free(buf);
}

static void test_global_table_and_log(void **state)
{
    (void)state;
    char err[256];
    setenv("GMUX_LOG", "debug,daemon", 1);
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
    assert_string_equal(COM_SETTING_STRING(LOG), "debug,daemon");
    assert_true(COM_LOG_ENABLED(COM_LOG_DEBUG, DAEMON));
    assert_false(COM_LOG_ENABLED(COM_LOG_DEBUG, NET));

    setenv("GMUX_LOG", "verbose", 1);
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "'verbose'"));
    unsetenv("GMUX_LOG");
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
    assert_string_equal(COM_SETTING_STRING(LOG), "warn");

    assert_int_equal(com_settings_set(COM_SETTING_LOG, "info", err, sizeof(err)), GMUX_OK);
    assert_string_equal(COM_SETTING_STRING(LOG), "info");
    assert_int_equal(com_settings_set((com_setting_id_t)999, "x", err, sizeof(err)),
                     GMUX_ERR_INVALID);
}

static char warned[1024];

static const char *real_getenv(const char *name)
{
    return getenv(name);
}

static void keep_line(com_log_level_t level, com_log_subsys_t subsys, const char *line, void *arg)
{
    (void)level;
    (void)subsys;
    (void)arg;
    strncat(warned, line, sizeof(warned) - strlen(warned) - 2);
    strcat(warned, "\n");
}

/* Only the settings of the scopes asked for fail the load; another
 * malformed one keeps its default and is said once, when first read, unless
 * an init said it already. */
static void test_scoped_init(void **state)
{
    (void)state;
    char err[512];
    setenv("GMUX_NET_TIMEOUT", "abc", 1);
    setenv("GMUX_DAEMON_QUANTUM_MS", "soon", 1);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_CLIENT, err, sizeof(err)), GMUX_OK);
    assert_string_equal(err, "");
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_string_equal(err, "GMUX_NET_TIMEOUT='abc': expected a finite number");
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET | COM_SCOPE_DAEMON, err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "GMUX_DAEMON_QUANTUM_MS='soon': expected an integer"));
    assert_non_null(strstr(err, "GMUX_NET_TIMEOUT='abc'"));
    /* GMUX_LOG is everyone's */
    setenv("GMUX_LOG", "chatty", 1);
    assert_int_equal(com_settings_init_scoped(0, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "chatty"));
    unsetenv("GMUX_LOG");
    /* an unchecked one keeps its default; GMUX_NET_TIMEOUT, which the net
     * scope's init said above, is not said again at the read
     * (test_malformed_told_once: the warning at a first read) */
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_SHIM, err, sizeof(err)), GMUX_OK);
    warned[0] = '\0';
    com_log_set_sink(keep_line, NULL);
    assert_true(COM_SETTING_DOUBLE(NET_TIMEOUT) == 30.0);
    com_log_set_sink(NULL, NULL);
    assert_null(strstr(warned, "GMUX_NET_TIMEOUT"));
    /* a check with another lookup, nothing loaded */
    assert_int_equal(com_settings_check(COM_SCOPE_DAEMON, real_getenv, err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_string_equal(err, "GMUX_DAEMON_QUANTUM_MS='soon': expected an integer");
    assert_int_equal(COM_SETTING_INT(DAEMON_QUANTUM_MS), 20);
    unsetenv("GMUX_NET_TIMEOUT");
    unsetenv("GMUX_DAEMON_QUANTUM_MS");
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
}

/* How many times `needle` occurs in `hay`. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* In a fresh process (this binary again, with --child NAME), whose first
 * load sees the environment it sets: a failed check says which line and
 * exits 1. */
#define CHILD_CHECK(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond);                      \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

static void run_in_child(const char *name)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl("/proc/self/exe", "test_settings", "--child", name, (char *)NULL);
        _exit(127);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Whatever a test before left (a failed one does not clean up). */
static void unset_all(void)
{
    for (size_t i = 0; i < COM_SETTING_COUNT; i++)
        unsetenv(com_settings_table[i].name);
}

static void told_once_child(void)
{
    char err[512];
    unset_all();
    setenv("GMUX_SHMEM_HEAP", "lots", 1);
    setenv("GMUX_NET_PROXY_IDLE_US", "idle", 1);
    setenv("GMUX_DAEMON_GRACE_MS", "later", 1);
    warned[0] = '\0';
    com_log_set_sink(keep_line, NULL);
    /* shmem_init: its own check, then gmux_comm_init's, then the heap */
    CHILD_CHECK(com_settings_init_scoped(COM_SCOPE_SHMEM, err, sizeof(err)) == GMUX_ERR_PARSE);
    CHILD_CHECK(strcmp(err, "GMUX_SHMEM_HEAP='lots': expected a size such as 4096, 64KiB, 2MiB "
                            "or 1.5GiB") == 0);
    CHILD_CHECK(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)) == GMUX_ERR_PARSE);
    CHILD_CHECK(strcmp(err, "GMUX_NET_PROXY_IDLE_US='idle': expected an integer") == 0);
    CHILD_CHECK(COM_SETTING_SIZE(SHMEM_HEAP) == 64u << 20);
    /* the net library first, then the shim */
    CHILD_CHECK(com_settings_init_scoped(COM_SCOPE_SHIM, err, sizeof(err)) == GMUX_OK);
    CHILD_CHECK(COM_SETTING_INT(NET_PROXY_IDLE_US) == 200);
    CHILD_CHECK(COM_SETTING_SIZE(SHMEM_HEAP) == 64u << 20);
    CHILD_CHECK(count(warned, "GMUX_SHMEM_HEAP") == 0);
    CHILD_CHECK(count(warned, "GMUX_NET_PROXY_IDLE_US") == 0);
    /* no init said it: said at the first read, and only then */
    CHILD_CHECK(COM_SETTING_INT(DAEMON_GRACE_MS) == 2000);
    CHILD_CHECK(COM_SETTING_INT(DAEMON_GRACE_MS) == 2000);
    CHILD_CHECK(com_settings_init_scoped(COM_SCOPE_CLIENT, err, sizeof(err)) == GMUX_OK);
    CHILD_CHECK(COM_SETTING_INT(DAEMON_GRACE_MS) == 2000);
    CHILD_CHECK(count(warned, "GMUX_DAEMON_GRACE_MS='later': expected an integer; the default "
                              "2000 is used") == 1);
    com_log_set_sink(NULL, NULL);
    /* the parts that read them still fail, every time: gmux run's re-check
     * must stop it even after a first read told the variable */
    CHILD_CHECK(com_settings_init_scoped(COM_SCOPE_DAEMON, err, sizeof(err)) == GMUX_ERR_PARSE);
    CHILD_CHECK(strcmp(err, "GMUX_DAEMON_GRACE_MS='later': expected an integer") == 0);
    CHILD_CHECK(com_settings_init_scoped(COM_SCOPE_SHMEM, err, sizeof(err)) == GMUX_ERR_PARSE);
    CHILD_CHECK(strstr(err, "GMUX_SHMEM_HEAP='lots'"));
}

/* A malformed variable is told once per process: shmem_init checks
 * COM_SCOPE_SHMEM and says GMUX_SHMEM_HEAP is malformed, then its
 * gmux_comm_init checks COM_SCOPE_NET; the heap's size read afterwards must
 * not say it again (it did, when both share one copy of the table). The
 * other way round too: the net library said GMUX_NET_PROXY_IDLE_US, a later
 * shim init must not arm a second warning. A scope that reads the variable
 * still fails each time. */
static void test_malformed_told_once(void **state)
{
    (void)state;
    run_in_child("told_once");
}

/* A malformed GMUX_LOG fails every init that sees it, the scope no matter,
 * while its message is in err at the first only (the caller tells it, once
 * per process: procmark.h). Until 2026-12-01 a second init with the same
 * value said GMUX_OK, so a caller could not tell it from a good one. */
static void test_malformed_log_fails_every_init(void **state)
{
    (void)state;
    char err[512];
    unset_all();
    setenv("GMUX_LOG", "warn,boisterous", 1);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "GMUX_LOG: unknown token 'boisterous'"));
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_string_equal(err, "");
    assert_int_equal(com_settings_init_scoped(0, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_string_equal(err, "");
    /* beside another malformed one, only that one is said again */
    setenv("GMUX_NET_TIMEOUT", "abc", 1);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_string_equal(err, "GMUX_NET_TIMEOUT='abc': expected a finite number");
    unsetenv("GMUX_NET_TIMEOUT");
    /* another malformed value is said anew; a good one is OK again */
    setenv("GMUX_LOG", "warn,rowdy", 1);
    assert_int_equal(com_settings_init_scoped(0, err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "rowdy"));
    unsetenv("GMUX_LOG");
    assert_int_equal(com_settings_init_scoped(0, err, sizeof(err)), GMUX_OK);
    assert_string_equal(err, "");
}

/* GMUX_LOG_CLOCK sets the log's clock at an init and at com_settings_set;
 * a value other than elapsed or utc fails the init, and the default
 * (elapsed) is used. */
static void test_log_clock(void **state)
{
    (void)state;
    char err[512];
    unset_all();
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
    assert_int_equal(com_log_get_clock(), COM_LOG_CLOCK_ELAPSED);
    setenv("GMUX_LOG_CLOCK", "utc", 1);
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
    assert_int_equal(com_log_get_clock(), COM_LOG_CLOCK_UTC);
    setenv("GMUX_LOG_CLOCK", "local", 1);
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_ERR_PARSE);
    assert_string_equal(err, "GMUX_LOG_CLOCK='local': expected elapsed or utc");
    assert_string_equal(COM_SETTING_STRING(LOG_CLOCK), "elapsed");
    assert_int_equal(com_log_get_clock(), COM_LOG_CLOCK_ELAPSED);
    unsetenv("GMUX_LOG_CLOCK");
    assert_int_equal(com_settings_set(COM_SETTING_LOG_CLOCK, "soon", err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_int_equal(com_settings_set(COM_SETTING_LOG_CLOCK, "UTC", err, sizeof(err)), GMUX_OK);
    assert_int_equal(com_log_get_clock(), COM_LOG_CLOCK_UTC);
    assert_int_equal(com_settings_set(COM_SETTING_LOG_CLOCK, "elapsed", err, sizeof(err)), GMUX_OK);
    assert_int_equal(com_log_get_clock(), COM_LOG_CLOCK_ELAPSED);
}

/* A later init reloads its own part's settings (setenv before
 * gmux_comm_init still counts) and leaves the others alone: their parts may
 * be running. An override wins over the variable for good, and is a copy. */
static void test_reload_own_scope_and_overrides(void **state)
{
    (void)state;
    char err[512];
    unset_all();
    setenv("GMUX_NET_RING_SLOTS", "64", 1);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_OK);
    assert_int_equal(COM_SETTING_INT(NET_RING_SLOTS), 64);
    setenv("GMUX_NET_RING_SLOTS", "128", 1);
    setenv("GMUX_GATE_REPORT_MS", "300", 1);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_SHIM, err, sizeof(err)), GMUX_OK);
    assert_int_equal(COM_SETTING_INT(NET_RING_SLOTS), 64);
    assert_int_equal(COM_SETTING_INT(GATE_REPORT_MS), 300);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_OK);
    assert_int_equal(COM_SETTING_INT(NET_RING_SLOTS), 128);

    char path[32];
    snprintf(path, sizeof(path), "/opt/%s", "a.sock");
    assert_int_equal(com_settings_set(COM_SETTING_SOCKET, path, err, sizeof(err)), GMUX_OK);
    memcpy(path, "/overwritten", 13);
    setenv("GMUX_SOCKET", "/env.sock", 1);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_SHIM, err, sizeof(err)), GMUX_OK);
    assert_string_equal(COM_SETTING_STRING(SOCKET), "/opt/a.sock");
    assert_int_equal(com_settings_set(COM_SETTING_NET_RING_SLOTS, "many", err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_int_equal(COM_SETTING_INT(NET_RING_SLOTS), 128);
    assert_int_equal(com_settings_set(COM_SETTING_LOG, "loud", err, sizeof(err)), GMUX_ERR_PARSE);
    assert_non_null(strstr(err, "'loud'"));
    /* GMUX_LOG overridden sets the levels, and a later init keeps them */
    setenv("GMUX_LOG", "error", 1);
    assert_int_equal(com_settings_set(COM_SETTING_LOG, "debug,net", err, sizeof(err)), GMUX_OK);
    assert_int_equal(com_settings_init_scoped(COM_SCOPE_NET, err, sizeof(err)), GMUX_OK);
    assert_string_equal(COM_SETTING_STRING(LOG), "debug,net");
    assert_true(COM_LOG_ENABLED(COM_LOG_DEBUG, NET));
    assert_true(COM_LOG_ENABLED(COM_LOG_WARN, SHIM));
    assert_int_equal(com_settings_set(COM_SETTING_LOG, "warn", err, sizeof(err)), GMUX_OK);
    assert_false(COM_LOG_ENABLED(COM_LOG_DEBUG, NET));
    unsetenv("GMUX_LOG");
    unsetenv("GMUX_NET_RING_SLOTS");
    unsetenv("GMUX_GATE_REPORT_MS");
    unsetenv("GMUX_SOCKET");
}

static void test_every_global_default_parses(void **state)
{
    (void)state;
    for (size_t i = 0; i < COM_SETTING_COUNT; i++) {
        com_setting_value_t v;
        char err[256];
        assert_int_equal(com_settings_parse_value(&com_settings_table[i], com_settings_table[i].def,
                                                  &v, err, sizeof(err)),
                         GMUX_OK);
        assert_true(strncmp(com_settings_table[i].name, "GMUX_", 5) == 0);
        assert_true(strlen(com_settings_table[i].help) > 10);
    }
}

/* A misspelt setting is silently ignored by the loader; the CLI warns with
 * the setting meant. Names that are settings, the launcher's, or far from
 * every setting (other tools' variables) get no suggestion. */
static void test_suggest_misspelt(void **state)
{
    (void)state;
    const char *s = com_settings_suggest("GMUX_BUGDET"); /* swap */
    assert_non_null(s);
    assert_string_equal(s, "GMUX_BUDGET");
    s = com_settings_suggest("GMUX_POLCY"); /* deletion */
    assert_non_null(s);
    assert_string_equal(s, "GMUX_POLICY");
    s = com_settings_suggest("GMUX_policy"); /* case */
    assert_non_null(s);
    assert_string_equal(s, "GMUX_POLICY");
    s = com_settings_suggest("GMUX_NET_TIMEOUTS"); /* insertion */
    assert_non_null(s);
    assert_string_equal(s, "GMUX_NET_TIMEOUT");
    s = com_settings_suggest("GMUX_SHIM_STAT"); /* deletion, long name */
    assert_non_null(s);
    assert_string_equal(s, "GMUX_SHIM_STATS");

    assert_null(com_settings_suggest("GMUX_BUDGET"));
    assert_null(com_settings_suggest("GMUX_LOG"));
    for (const char *const *l = (const char *const[]){"GMUX_RANK", "GMUX_SIZE", "GMUX_NNODES",
                                                      "GMUX_BOOTSTRAP", "GMUX_JOB", NULL};
         *l; l++)
        assert_null(com_settings_suggest(*l));
    assert_null(com_settings_suggest("GMUX_GPU_OUT"));
    assert_null(com_settings_suggest("GMUX_COMPLETELY_DIFFERENT"));
    assert_null(com_settings_suggest("BUDGET"));
    assert_null(com_settings_suggest("GMUX"));
    assert_null(com_settings_suggest(NULL));
    char longname[200];
    memset(longname, 'A', sizeof(longname) - 1);
    memcpy(longname, "GMUX_", 5);
    longname[sizeof(longname) - 1] = '\0';
    assert_null(com_settings_suggest(longname));
}

static void test_warn_misspelt_environment(void **state)
{
    (void)state;
    char *envp[] = {"PATH=/bin",   "GMUX_BUGDET=40G", "GMUX_POLICY=demand",
                    "GMUX_RANK=0", "GMUX_LGO",        "GMUX_GPU_OUT=/tmp/x",
                    NULL};
    char buf[1024] = {0};
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
    assert_non_null(f);
    assert_int_equal(com_settings_warn_misspelt(envp, f, "gmux"), 2);
    fclose(f);
    assert_non_null(strstr(buf, "gmux: warning: GMUX_BUGDET is not a gmux setting (did you mean "
                                "GMUX_BUDGET?)\n"));
    assert_non_null(strstr(buf, "GMUX_LGO is not a gmux setting (did you mean GMUX_LOG?)"));
    assert_null(strstr(buf, "GMUX_POLICY is"));
    assert_null(strstr(buf, "GMUX_RANK"));
    assert_null(strstr(buf, "GMUX_GPU_OUT"));
    assert_int_equal(com_settings_warn_misspelt(NULL, stderr, "gmux"), 0);
}

/* A setting that takes one of a list of words is checked against it
 * (com_settings_check, what a command runs before it starts anything):
 * GMUX_POLICY=eager passed as text, and the shim then ran as off while
 * gmux run exited with the program's status. The part reading it is left
 * to its own fallback: an init loads the word as it is. */
static void test_check_words(void **state)
{
    (void)state;
    char err[512];
    static const char *const good[][2] = {
        {"GMUX_POLICY", "demand"},          {"GMUX_TASK_CLASS", "latency"},
        {"GMUX_SHIM_TRACE_FORMAT", "text"}, {"GMUX_DAEMON_PLACEMENT", "chunk"},
        {"GMUX_NET_HMEM", "rma"},           {"GMUX_NET_PROVIDER", "tcp;ofi_rxm"},
        {"GMUX_NET_DEV_CLAIM", "faa"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        set_fake(0, good[i][0], good[i][1]);
        assert_int_equal(com_settings_check(COM_SCOPE_ALL, fake_getenv, err, sizeof(err)), GMUX_OK);
    }
    set_fake(0, "GMUX_POLICY", "eager");
    set_fake(1, "GMUX_NET_PROVIDER", "ib");
    assert_int_equal(com_settings_check(COM_SCOPE_SHIM, fake_getenv, err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_string_equal(err, "GMUX_POLICY='eager': expected off, demand or proactive");
    assert_int_equal(com_settings_check(COM_SCOPE_NET, fake_getenv, err, sizeof(err)),
                     GMUX_ERR_PARSE);
    assert_string_equal(err, "GMUX_NET_PROVIDER='ib': expected auto, shm, tcp, tcp;ofi_rxm, "
                             "verbs;ofi_rxm, efa or cxi");
    set_fake(0, NULL, NULL);
    set_fake(1, NULL, NULL);
    unset_all();
    setenv("GMUX_POLICY", "eager", 1);
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
    assert_string_equal(COM_SETTING_STRING(POLICY), "eager");
    unsetenv("GMUX_POLICY");
    assert_int_equal(com_settings_init(err, sizeof(err)), GMUX_OK);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "told_once") == 0) {
        told_once_child();
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_when_unset),
        cmocka_unit_test(test_environment_overrides),
        cmocka_unit_test(test_malformed_values_reported_others_loaded),
        cmocka_unit_test(test_print_table),
        cmocka_unit_test(test_global_table_and_log),
        cmocka_unit_test(test_scoped_init),
        cmocka_unit_test(test_malformed_told_once),
        cmocka_unit_test(test_malformed_log_fails_every_init),
        cmocka_unit_test(test_reload_own_scope_and_overrides),
        cmocka_unit_test(test_every_global_default_parses),
        cmocka_unit_test(test_suggest_misspelt),
        cmocka_unit_test(test_warn_misspelt_environment),
        cmocka_unit_test(test_log_clock),
        cmocka_unit_test(test_check_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
