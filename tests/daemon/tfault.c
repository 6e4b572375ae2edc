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

tfault_fix_t tfault_fix;

void *tfault_init(size_t size, const char *tmpl)
{
    signal(SIGPIPE, SIG_IGN);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    snprintf(tfault_fix.dir, sizeof(tfault_fix.dir), "%s", tmpl);
    if (!mkdtemp(tfault_fix.dir)) {
        munmap(p, size);
        return NULL;
    }
    snprintf(tfault_fix.path, sizeof(tfault_fix.path), "%s/sock", tfault_fix.dir);
    snprintf(tfault_fix.log, sizeof(tfault_fix.log), "%s/log", tfault_fix.dir);
    tfault_fix.size = size;
    tfault_fix.page = p;
    return p;
}

void tfault_fini(void)
{
    unlink(tfault_fix.log);
    rmdir(tfault_fix.dir);
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

/* The server child's pid: the page's first member. */
static pid_t *server_pid(void)
{
    return tfault_fix.page;
}

int tfault_in_server(void)
{
    return tfault_fix.page && __atomic_load_n(server_pid(), __ATOMIC_SEQ_CST) == getpid();
}

int tfault_take(int *left)
{
    if (!tfault_in_server() || tfault_get(left) <= 0) /* not before tfault_init */
        return 0;
    int v = tfault_get(left);
    while (v > 0 &&
           !__atomic_compare_exchange_n(left, &v, v - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
    return v > 0;
}

/* In the server child: its log to the file, its pid noted for the wrappers. */
static int child_prep(dmn_server_opts_t *o, void *arg)
{
    (void)o;
    (void)arg;
    if (tsrv_log_to(tfault_fix.log))
        return 1;
    __atomic_store_n(server_pid(), getpid(), __ATOMIC_SEQ_CST);
    return 0;
}

int tfault_setup(void **state)
{
    (void)state;
    memset(tfault_fix.page, 0, tfault_fix.size);
    dmn_server_opts_t o = {tfault_fix.path,
                           DMN_NO_GROUP,
                           10 * COM_NS_PER_MS,
                           2 * COM_NS_PER_S,
                           NULL,
                           0,
                           0,
                           0,
                           0,
                           0,
                           NULL,
                           0};
    tsrv_start(&o, child_prep, NULL, &tfault_fix.child);
    return 0;
}

/* The child ended, the page zeroed first; with clean, it must stop on
 * SIGTERM and exit 0, else it is killed. */
static void end_server(int clean)
{
    memset(tfault_fix.page, 0, tfault_fix.size);
    if (tfault_fix.child > 0)
        kill(tfault_fix.child, SIGCONT);
    if (clean)
        tsrv_stop(&tfault_fix.child);
    else
        tproc_kill_reap(&tfault_fix.child);
}

int tfault_teardown(void **state)
{
    (void)state;
    end_server(0);
    return 0;
}

void tfault_stop(void)
{
    end_server(1);
}

int tfault_log_count(const char *what)
{
    FILE *f = fopen(tfault_fix.log, "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof(line), f))
        n += strstr(line, what) != NULL;
    if (f)
        fclose(f);
    return n;
}
