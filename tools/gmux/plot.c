/* Plots: gnuplot as a child process, strings quoted for its scripts. */
#include "plot.h"

#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"

extern char **environ;

int plot_gnuplot(const char *script, const char *png)
{
    char dotted[PATH_MAX + 2];
    char *set = NULL; /* "gmux_png='PNG'", quoted as in a script */
    size_t setlen = 0;
    if (png) {
        FILE *m = open_memstream(&set, &setlen);
        if (!m)
            return -1;
        fputs("gmux_png=", m);
        plot_put_str(m, png);
        if (fclose(m) != 0) {
            free(set);
            return -1;
        }
    }
    if (script[0] == '-') { /* gnuplot would take it for an option */
        if (snprintf(dotted, sizeof(dotted), "./%s", script) >= (int)sizeof(dotted))
            return -1;
        script = dotted;
    }
    char *argv[] = {"gnuplot", set ? "-e" : (char *)script, set, (char *)script, NULL};
    pid_t pid;
    int spawned = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
    free(set);
    if (spawned != 0)
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

int plot_script_begin(plot_script_t *s, const char *cmd, const char *prefix, const char *size)
{
    s->cmd = cmd;
    s->f = NULL;
    snprintf(s->gp, sizeof(s->gp), "%s.gp", prefix);
    snprintf(s->png, sizeof(s->png), "%s.png", prefix);
    if (cli_out_begin(&s->out, cmd, s->gp) != 0)
        return 1;
    s->f = fopen(s->out.dst, "w");
    if (!s->f) {
        fprintf(stderr, "gmux %s: cannot write %s: %s\n", cmd, s->gp, strerror(errno));
        return 1;
    }
    cli_out_guard(&s->out);
    /* run by hand the script draws PREFIX.png; gmux has it draw a part file */
    fputs("if (!exists(\"gmux_png\")) gmux_png = ", s->f);
    plot_put_str(s->f, s->png);
    fprintf(s->f, "\nset terminal png size %s\nset output gmux_png\n", size);
    return 0;
}

/* Says on out what came of gnuplot's run rc on gp. */
static void plot_say(int rc, const char *gp, const char *png, const char *data, FILE *out)
{
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

int plot_script_finish(plot_script_t *s, const char *data, FILE *out)
{
    bool whole = plot_file_close(s->f, s->cmd, s->gp) == 0;
    if (cli_out_finish(&s->out, whole) != 0 || !whole)
        return 1; /* no plot from a script cut short */
    cli_out_t png;
    if (cli_out_begin(&png, s->cmd, s->png) != 0)
        return 0; /* said; the data and script stay */
    /* an interrupt while gnuplot draws removes the part file */
    cli_out_guard(&png);
    int rc = plot_gnuplot(s->gp, cli_out_replaces(&png) ? png.dst : NULL);
    if (cli_out_finish(&png, rc == 0) == 0) /* else drawn, not put in place: said */
        plot_say(rc, s->gp, s->png, data, out);
    return 0;
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

int plot_prefix_check(const char *cmd, const char *opt, const char *prefix, const char *stem)
{
    if (!plot_str_ok(prefix))
        return cli_bad_value(cmd, opt, prefix,
                             "a path without control characters (line breaks, tabs)");
    if (plot_prefix_is_folder(prefix))
        return cli_bad_value(cmd, opt, prefix, "the files' stem, not a folder (as in DIR/%s)",
                             stem);
    return 0;
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
