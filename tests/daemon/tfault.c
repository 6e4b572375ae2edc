/* The failure-path tests' shared page and server child: see tfault.h. */
#include "tfault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/clock.h"
#include "daemon/endpoint.h"
#include "daemon/server.h"
#include "tproc.h"
#include "tsrv.h"

void *tfault_shared(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int tfault_get(const int *v)
{
    return __atomic_load_n(v, __ATOMIC_SEQ_CST);
}

void tfault_set(int *v, int to)
{
    __atomic_store_n(v, to, __ATOMIC_SEQ_CST);
}

void tfault_bump(int *v)
{
    __atomic_fetch_add(v, 1, __ATOMIC_SEQ_CST);
}

int tfault_in_server(const pid_t *server)
{
    return server && __atomic_load_n(server, __ATOMIC_SEQ_CST) == getpid();
}

int tfault_take(int *left, const pid_t *server)
{
    if (tfault_get(left) <= 0 || !tfault_in_server(server))
        return 0;
    int v = tfault_get(left);
    while (v > 0 &&
           !__atomic_compare_exchange_n(left, &v, v - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
    return v > 0;
}

typedef struct child_arg {
    const char *log;
    pid_t *server;
} child_arg_t;

/* In the server child: its log to the file, its pid noted for the wrappers. */
static int child_prep(dmn_server_opts_t *o, void *arg)
{
    (void)o;
    const child_arg_t *a = arg;
    if (tsrv_log_to(a->log))
        return 1;
    __atomic_store_n(a->server, getpid(), __ATOMIC_SEQ_CST);
    return 0;
}

void tfault_start(const char *path, const char *log, pid_t *server, pid_t *slot)
{
    dmn_server_opts_t o = {
        path, DMN_NO_GROUP, 10 * COM_NS_PER_MS, 2 * COM_NS_PER_S, NULL, 0, 0, 0, 0, 0, NULL, 0};
    child_arg_t a = {log, server};
    tsrv_start(&o, child_prep, &a, slot);
}

int tfault_log_count(const char *log, const char *what)
{
    FILE *f = fopen(log, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return n;
}

void tfault_setup(void *page, size_t size, pid_t *server, const char *path, const char *log,
                  pid_t *slot)
{
    memset(page, 0, size);
    tfault_start(path, log, server, slot);
}

void tfault_end(void *page, size_t size, pid_t *slot, int clean)
{
    memset(page, 0, size);
    if (*slot > 0)
        kill(*slot, SIGCONT);
    if (clean)
        tsrv_stop(slot);
    else
        tproc_kill_reap(slot);
}

int tfault_paths(char *dir, char *path, size_t path_cap, char *log, size_t log_cap)
{
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, path_cap, "%s/sock", dir);
    snprintf(log, log_cap, "%s/log", dir);
    return 0;
}

void tfault_remove(const char *dir, const char *log)
{
    unlink(log);
    rmdir(dir);
}
