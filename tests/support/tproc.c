/* Multi-process test helper; see tproc.h. */
#include "tproc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/stat.h>
#endif
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* In a child just forked by parent: a process group of its own and, on
 * Linux, SIGKILL once the parent dies (the child may have missed it). */
static void child_setup(pid_t parent)
{
    setpgid(0, 0);
#ifdef __linux__
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
#else
    (void)parent;
#endif
}

static int decode(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return TPROC_NOT_RUN;
}

/* Waits for pids[0..n) until the deadline; kills the groups of the late ones. */
static int wait_all(size_t n, pid_t *pids, double timeout_s, int *status)
{
    double deadline = now_s() + timeout_s;
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        if (pids[i] > 0)
            left++;
    while (left > 0) {
        int progressed = 0;
        for (size_t i = 0; i < n; i++) {
            if (pids[i] <= 0)
                continue;
            int ws;
            pid_t r = waitpid(pids[i], &ws, WNOHANG);
            if (r == pids[i]) {
                status[i] = decode(ws);
                kill(-pids[i], SIGKILL); /* leftovers of its group */
                pids[i] = 0;
                left--;
                progressed = 1;
            }
        }
        if (left == 0)
            break;
        if (now_s() >= deadline) {
            for (size_t i = 0; i < n; i++) {
                if (pids[i] <= 0)
                    continue;
                kill(-pids[i], SIGKILL);
                kill(pids[i], SIGKILL);
                waitpid(pids[i], NULL, 0);
                status[i] = TPROC_TIMED_OUT;
                pids[i] = 0;
            }
            break;
        }
        if (!progressed)
            usleep(2000);
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (status[i] != 0)
            bad++;
    return bad;
}

int tproc_run_all(size_t n, char *const *const argvs[], double timeout_s, int *status)
{
    pid_t *pids = calloc(n ? n : 1, sizeof(*pids));
    if (!pids)
        return (int)n;
    fflush(NULL);
    pid_t parent = getpid();
    for (size_t i = 0; i < n; i++) {
        status[i] = TPROC_NOT_RUN;
        pid_t pid = fork();
        if (pid == 0) {
            child_setup(parent);
            execvp(argvs[i][0], argvs[i]);
            _exit(127);
        }
        if (pid > 0)
            setpgid(pid, pid); /* also from the parent: no race with kill(-pid) */
        pids[i] = pid;
    }
    int bad = wait_all(n, pids, timeout_s, status);
    free(pids);
    return bad;
}

int tproc_fork_all(size_t n, int (*fn)(int index, void *arg), void *arg, double timeout_s,
                   int *status)
{
    pid_t *pids = calloc(n ? n : 1, sizeof(*pids));
    if (!pids)
        return (int)n;
    fflush(NULL);
    pid_t parent = getpid();
    for (size_t i = 0; i < n; i++) {
        status[i] = TPROC_NOT_RUN;
        pid_t pid = fork();
        if (pid == 0) {
            child_setup(parent);
            int rc = fn((int)i, arg);
            fflush(NULL);
            _exit(rc & 0xff);
        }
        if (pid > 0)
            setpgid(pid, pid);
        pids[i] = pid;
    }
    int bad = wait_all(n, pids, timeout_s, status);
    free(pids);
    return bad;
}

int tproc_capture(char *const argv[], char *const envp_extra[], double timeout_s, char *out,
                  size_t outlen, char *err, size_t errlen)
{
    int po[2], pe[2];
    if (pipe(po) != 0)
        return TPROC_NOT_RUN;
    if (pipe(pe) != 0) {
        close(po[0]);
        close(po[1]);
        return TPROC_NOT_RUN;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        child_setup(parent);
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        close(po[0]);
        close(pe[0]);
        close(po[1]);
        close(pe[1]);
        for (size_t i = 0; envp_extra && envp_extra[i]; i++)
            putenv(envp_extra[i]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return TPROC_NOT_RUN;
    }
    setpgid(pid, pid);
    struct {
        int fd;
        char *buf;
        size_t len, used;
    } s[2] = {{po[0], out, outlen, 0}, {pe[0], err, errlen, 0}};
    double deadline = now_s() + timeout_s;
    int open_fds = 2;
    while (open_fds > 0 && now_s() < deadline) {
        struct pollfd pfd[2];
        int which[2];
        int np = 0;
        for (int k = 0; k < 2; k++)
            if (s[k].fd >= 0) {
                which[np] = k;
                pfd[np++] = (struct pollfd){.fd = s[k].fd, .events = POLLIN};
            }
        int pr = poll(pfd, (nfds_t)np, 20);
        if (pr <= 0)
            continue;
        for (int j = 0; j < np; j++) {
            int k = which[j];
            if (!(pfd[j].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char tmp[4096];
            ssize_t r = read(s[k].fd, tmp, sizeof(tmp));
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                close(s[k].fd);
                s[k].fd = -1;
                open_fds--;
                continue;
            }
            if (r < 0)
                continue;
            if (s[k].buf && s[k].len > 0) {
                size_t room = s[k].len - 1 - s[k].used;
                size_t take = (size_t)r < room ? (size_t)r : room;
                memcpy(s[k].buf + s[k].used, tmp, take);
                s[k].used += take;
            }
        }
    }
    for (int k = 0; k < 2; k++) {
        if (s[k].fd >= 0)
            close(s[k].fd);
        if (s[k].buf && s[k].len > 0)
            s[k].buf[s[k].used] = '\0';
    }
    int st;
    pid_t pids[1] = {pid};
    double left = deadline - now_s();
    wait_all(1, pids, left > 0 ? left : 0, &st);
    return st;
}

int tproc_capture_sub(const char *exe, const char *sub, const char *const *args, double timeout_s,
                      char *out, size_t outlen, char *err, size_t errlen)
{
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)exe;
    argv[n++] = (char *)sub;
    for (; args && *args && n < 31; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    return tproc_capture(argv, NULL, timeout_s, out, outlen, err, errlen);
}

double tproc_json_num(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

int tproc_fits_cols(const char *text, int cols)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        if (end - line > cols) {
            fprintf(stderr, "%.*s: %d columns\n", (int)(end - line), line, (int)(end - line));
            return 0;
        }
        line = *end ? end + 1 : end;
    }
    return 1;
}

char *tproc_unwrap(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        if (*r == '\n') {
            while (*r == '\n' || *r == ' ')
                r++;
            *w++ = ' ';
        } else
            *w++ = *r++;
    }
    *w = '\0';
    return s;
}

void tproc_kill_reap(pid_t *pid)
{
    if (*pid <= 0)
        return;
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    *pid = 0;
}

int tproc_reap(pid_t *pid)
{
    if (*pid <= 0)
        return TPROC_NOT_RUN;
    int st;
    pid_t got;
    while ((got = waitpid(*pid, &st, 0)) < 0 && errno == EINTR) {
    }
    *pid = 0;
    return got > 0 ? decode(st) : TPROC_NOT_RUN;
}

int tproc_stop_once_written(char *const argv[], const char *part, double timeout_s, int *written)
{
    *written = 0;
    if (mkfifo(part, 0600) != 0)
        return TPROC_NOT_RUN;
    int fd = open(part, O_RDONLY | O_NONBLOCK); /* lets the writer's open through */
    if (fd < 0)
        return TPROC_NOT_RUN;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd);
        return TPROC_NOT_RUN;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        close(fd);
        execvp(argv[0], argv);
        _exit(127);
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    *written = poll(&p, 1, (int)(timeout_s * 1000)) == 1;
    kill(pid, SIGTERM);
    int st = tproc_reap(&pid);
    close(fd);
    return st;
}
