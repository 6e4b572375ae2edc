/* Plots: gnuplot as a child process, strings quoted for its scripts. */
#include "plot.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

int plot_gnuplot(const char *script)
{
    char dotted[PATH_MAX + 2];
    if (script[0] == '-') { /* gnuplot would take it for an option */
        if (snprintf(dotted, sizeof(dotted), "./%s", script) >= (int)sizeof(dotted))
            return -1;
        script = dotted;
    }
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ) != 0)
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : PLOT_SIGNALLED + WTERMSIG(status);
}

int plot_file_close(FILE *f, const char *cmd, const char *path)
{
    errno = 0;
    int e = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (!e)
        return 0;
    fprintf(stderr, "gmux %s: cannot write %s: %s\n", cmd, path, strerror(e));
    return 1;
}

void plot_draw(const char *gp, const char *png, const char *data, FILE *out)
{
    int rc = plot_gnuplot(gp);
    if (rc == 0)
        fprintf(out, "plot: %s (data %s, script %s)\n", png, data, gp);
    else if (rc < 0)
        fprintf(out, "plot: gnuplot not available; data %s, script %s\n", data, gp);
    else if (rc >= PLOT_SIGNALLED)
        fprintf(out, "plot: gnuplot ended by signal %d; data %s, script %s\n", rc - PLOT_SIGNALLED,
                data, gp);
    else
        fprintf(out, "plot: gnuplot failed (exit %d); data %s, script %s\n", rc, data, gp);
}

static bool is_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

bool plot_str_ok(const char *s)
{
    for (; *s; s++)
        if (is_control((unsigned char)*s))
            return false;
    return true;
}

bool plot_prefix_is_folder(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    const char *last = slash ? slash + 1 : prefix;
    return !*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0;
}

void plot_put_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\'')
            fputs("''", f);
        else
            fputc(is_control(c) ? '?' : c, f);
    }
    fputc('\'', f);
}
