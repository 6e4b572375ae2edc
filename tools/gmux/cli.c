/* Shared CLI error helpers. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/parse.h"
#include "common/settings.h"
#include "common/text.h"
#include "daemon/cli_main.h"
#include "daemon/proto.h"
#include "sim/workload.h"

/* "gmux CMD", the program a usage error names */
#define CLI_PROG(cmd, buf) (snprintf(buf, sizeof(buf), "gmux %s", cmd), buf)

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char prog[64];
    va_list ap;
    va_start(ap, fmt);
    int rc = com_cli_usage_verror(CLI_PROG(cmd, prog), fmt, ap);
    va_end(ap);
    return rc;
}

int cli_bad_word(const char *cmd, const char *arg)
{
    char prog[64];
    return com_cli_bad_word(CLI_PROG(cmd, prog), arg);
}

int cli_no_value(const char *cmd, const char *opt)
{
    char prog[64];
    return com_cli_no_value(CLI_PROG(cmd, prog), opt);
}

int cli_bad_value(const char *cmd, const char *opt, const char *value, const char *wants_fmt, ...)
{
    char prog[64];
    va_list ap;
    va_start(ap, wants_fmt);
    int rc = com_cli_bad_vvalue(CLI_PROG(cmd, prog), opt, value, wants_fmt, ap);
    va_end(ap);
    return rc;
}

int cli_bad_list_word(const char *cmd, const char *opt, const char *value, const char *word,
                      const char *wants_fmt, ...)
{
    char prog[64], wants[1024];
    va_list ap;
    va_start(ap, wants_fmt);
    vsnprintf(wants, sizeof(wants), wants_fmt, ap);
    va_end(ap);
    return com_cli_bad_list_word(CLI_PROG(cmd, prog), opt, value, word, "%s", wants);
}

int cli_fail(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "gmux %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

static int exec_errno(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOTDIR ? ENOENT : errno;
    if (S_ISDIR(st.st_mode) || access(path, X_OK) != 0)
        return EACCES;
    return 0;
}

int cli_command_errno(const char *cmd)
{
    if (!cmd || !*cmd)
        return ENOENT;
    if (strchr(cmd, '/'))
        return exec_errno(cmd);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/bin:/usr/bin"; /* what execvp uses without one */
    int err = ENOENT;
    for (const char *p = path;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char full[PATH_MAX];
        /* an empty entry is the current directory */
        int n = len ? snprintf(full, sizeof(full), "%.*s/%s", (int)len, p, cmd)
                    : snprintf(full, sizeof(full), "./%s", cmd);
        if (n > 0 && (size_t)n < sizeof(full)) {
            int e = exec_errno(full);
            if (e == 0)
                return 0;
            if (e == EACCES)
                err = EACCES; /* found, not runnable: what execvp reports */
        }
        if (!end)
            break;
        p = end + 1;
    }
    return err;
}

int cli_check_command(const char *sub, const char *cmd)
{
    int err = cli_command_errno(cmd);
    if (err == 0)
        return 0;
    cli_fail(sub, "cannot run '%s': %s", cmd, strerror(err));
    return err == ENOENT ? 127 : 126;
}

static volatile sig_atomic_t cli_stop_signal;

static void cli_on_interrupt(int sig)
{
    if (!cli_stop_signal)
        cli_stop_signal = sig;
}

static const int cli_interrupt_signals[3] = {SIGINT, SIGTERM, SIGHUP};

void cli_interrupts_catch(struct cli_interrupts *saved)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cli_on_interrupt;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        sigaction(cli_interrupt_signals[i], &sa, &saved->old[i]);
}

void cli_interrupts_restore(const struct cli_interrupts *saved)
{
    for (int i = 0; i < 3; i++)
        sigaction(cli_interrupt_signals[i], &saved->old[i], NULL);
}

pid_t cli_fork_child(const struct cli_interrupts *saved)
{
    sigset_t ints, old;
    sigemptyset(&ints);
    for (int i = 0; i < 3; i++)
        sigaddset(&ints, cli_interrupt_signals[i]);
    sigprocmask(SIG_BLOCK, &ints, &old);
    pid_t pid = fork();
    int err = errno;
    if (pid == 0)
        cli_interrupts_restore(saved);
    sigprocmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return pid;
}

int cli_interrupted(void)
{
    return cli_stop_signal;
}

int cli_workload_open(const char *cmd, const char *name, const char *const *sets, size_t nsets,
                      uint64_t seed, sim_source_t **src_p)
{
    char err[512], words[512];
    gmux_status_t st = sim_workload_open(name, sets, nsets, seed, src_p, err, sizeof(err));
    if (st == GMUX_OK)
        return 0;
    if (st == GMUX_ERR_NOMEM)
        return cli_fail(cmd, "%s", err);
    /* The setting to blame is the last of the shortest run of the first
     * ones that fails with the same words: settings are also checked
     * together ("slab (128) larger than nz (64)" blames the nz=64 that made
     * it so). A bad name fails with none. */
    for (size_t n = 0; n <= nsets; n++) {
        sim_source_t *src;
        if (sim_workload_open(name, sets, n, seed, &src, words, sizeof(words)) == GMUX_OK) {
            sim_source_close(src);
            continue;
        }
        if (strcmp(words, err) != 0)
            continue;
        if (n == 0)
            break;
        return cli_usage_error(cmd, "option '--set' wants KEY=VALUE, a setting of %s, not '%s': %s",
                               name, sets[n - 1], err);
    }
    return cli_usage_error(cmd, "%s", err);
}

int cli_socket_path(const char *cmd, const char *given, char *out, size_t cap)
{
    char prog[64];
    return dmn_cli_socket_path(CLI_PROG(cmd, prog), given, out, cap);
}

static const char *cli_getenv(const char *name)
{
    return getenv(name);
}

int cli_settings_check(const char *cmd, unsigned scopes, com_getenv_fn getenv_fn)
{
    char err[1024];
    gmux_status_t st = getenv_fn ? com_settings_check(scopes, getenv_fn, err, sizeof(err))
                                 : com_settings_init_scoped(scopes, err, sizeof(err));
    /* an init loads any word; the check also refuses one out of its list */
    if (st == GMUX_OK && !getenv_fn)
        st = com_settings_check(scopes, cli_getenv, err, sizeof(err));
    if (st == GMUX_OK)
        return 0;
    fprintf(stderr, "gmux %s: %s (see gmux --help-settings)\n", cmd, err);
    return CLI_EXIT_USAGE;
}

void cli_print_task_states(FILE *out)
{
    /* by state number: what each means to the user reading the table */
    static const char *const meaning[] = {
        [DMN_STATE_IDLE] = "registered, nothing queued",
        [DMN_STATE_PENDING] = "launches queued, waiting for its turn on the GPU",
        [DMN_STATE_RUNNING] = "holds the turn: its launches run",
        [DMN_STATE_REVOKED] = ("holds the turn and was asked to give it back (its slice "
                               "ended, a latency task wants the GPU, or sharing ended); it "
                               "stops at its next kernel boundary"),
        [DMN_STATE_HELD] = ("granted the turn, but the grant waits until the evictions of "
                            "the switch end (docs/daemon-evict.md): it may not launch yet"),
    };
    fprintf(out, "Task states (STATE, JSON \"state\"):\n");
    for (uint32_t s = 0; s < sizeof(meaning) / sizeof(meaning[0]); s++) {
        int col = fprintf(out, "  %-8s ", dmn_state_name(s));
        com_text_wrap(out, meaning[s], col > 0 ? (size_t)col : 0, COM_TEXT_WIDTH);
    }
}

unsigned cli_columns(void)
{
    const char *env = getenv("COLUMNS");
    uint64_t cols;
    if (env && com_parse_u64(env, &cols) == GMUX_OK && cols > 0 && cols <= CLI_MAX_COLUMNS)
        return (unsigned)cols;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return COM_TEXT_WIDTH;
}
