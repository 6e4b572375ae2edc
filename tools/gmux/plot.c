/* Plots: gnuplot as a child process, strings quoted for its scripts. */
#include "plot.h"

#include <limits.h>
#include <spawn.h>
#include <stdio.h>
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
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
