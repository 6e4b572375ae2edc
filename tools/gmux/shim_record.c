/* Running a program under libgmux.so in recording mode: see shim_record.h. */
#include "shim_record.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "exe_dir.h"

/* libgmux.so beside this executable (build tree) or in ../<libdir> (installed). */
static int rec_find_shim(char *out, size_t len)
{
    static const char *const rel[] = {"libgmux.so", "../" GMUX_INSTALL_LIBDIR "/libgmux.so"};
    return exe_dir_find(rel, sizeof(rel) / sizeof(rel[0]), R_OK, out, len);
}

/* The variables rec_child sets itself, whatever the environment says. */
static const char *const *rec_child_env;
static const char *const rec_child_sets[] = {"GMUX_SHIM_TRACE", "GMUX_SHIM_TRACE_FORMAT",
                                             "GMUX_SHIM_TRACE_PROBE", "GMUX_GATE"};

/* The environment as the child's shim will see it, but for the values
 * rec_child sets (they are valid): what is malformed here is the user's. */
static const char *rec_parent_view(const char *name)
{
    for (size_t i = 0; i < sizeof(rec_child_sets) / sizeof(rec_child_sets[0]); i++)
        if (strcmp(name, rec_child_sets[i]) == 0)
            return NULL;
    size_t n = strlen(name);
    for (size_t i = 0; rec_child_env && rec_child_env[i]; i++)
        if (strncmp(rec_child_env[i], name, n) == 0 && rec_child_env[i][n] == '=')
            return NULL;
    return getenv(name);
}

/* In the child: sets the environment and runs argv; never returns. */
static void rec_child(const char *shim, const char *trace_path, const char *format, bool probe,
                      const char *policy, const char *const *env, char *const argv[])
{
    const char *old = getenv("LD_PRELOAD");
    size_t len = strlen(shim) + (old ? strlen(old) : 0) + 2;
    char *preload = malloc(len);
    if (!preload)
        _exit(126);
    if (old && old[0])
        snprintf(preload, len, "%s:%s", shim, old);
    else
        snprintf(preload, len, "%s", shim);
    if (setenv("LD_PRELOAD", preload, 1) != 0 || setenv("GMUX_SHIM_TRACE", trace_path, 1) != 0 ||
        setenv("GMUX_SHIM_TRACE_FORMAT", format, 1) != 0 ||
        setenv("GMUX_SHIM_TRACE_PROBE", probe ? "1" : "0", 1) != 0 ||
        setenv("GMUX_POLICY", policy, 0) != 0 ||
        /* a recording runs the program alone: no turns from gmuxd (gmux run --no-daemon) */
        setenv("GMUX_GATE", "0", 1) != 0)
        _exit(126);
    for (size_t i = 0; env && env[i]; i++) {
        char *kv = strdup(env[i]);
        char *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq)
            _exit(126);
        *eq = '\0';
        if (setenv(kv, eq + 1, 1) != 0)
            _exit(126);
        free(kv);
    }
    free(preload);
    execvp(argv[0], argv);
    int err = errno;
    fprintf(stderr, "gmux: cannot run '%s': %s\n", argv[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
}

int gmux_shim_record_check(const char *cmd, const char *const *env)
{
    rec_child_env = env;
    return cli_settings_check(cmd, COM_SCOPE_SHIM, rec_parent_view);
}

int gmux_shim_record(const char *cmd, const char *trace_path, const char *format, bool probe,
                     const char *policy, const char *const *env, char *const argv[])
{
    char shim[PATH_MAX];
    if (rec_find_shim(shim, sizeof(shim)) != 0) {
        cli_fail(cmd, "libgmux.so not found next to gmux or in ../%s", GMUX_INSTALL_LIBDIR);
        return -1;
    }
    int bad = gmux_shim_record_check(cmd, env);
    if (bad)
        return -bad;
    fflush(NULL);
    /* an interrupt goes on to the program (SIGKILL at a second one); gmux
     * waits for it, so that the caller removes its partial files */
    struct cli_interrupts ints;
    cli_interrupts_catch(&ints);
    pid_t pid = cli_fork_child(&ints);
    if (pid < 0) {
        cli_interrupts_restore(&ints);
        cli_fail(cmd, "cannot fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        rec_child(shim, trace_path, format, probe, policy, env, argv);
    }
    int status, forwarded = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            cli_interrupts_restore(&ints);
            cli_fail(cmd, "waitpid: %s", strerror(errno));
            return -1;
        }
        if (cli_interrupted())
            kill(pid, forwarded++ ? SIGKILL : cli_interrupted());
    }
    cli_interrupts_restore(&ints);
    if (cli_interrupted()) {
        cli_fail(cmd, "interrupted by signal %d; '%s' stopped, nothing recorded kept",
                 cli_interrupted(), argv[0]);
        return -(128 + cli_interrupted());
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
