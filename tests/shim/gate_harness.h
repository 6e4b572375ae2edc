/*
 * Shared harness of the launch-gating tests (test_gate_*.c): gmuxd
 * (`gmux daemon --foreground`) and gate_prog processes started by `gmux run`,
 * with the driver double as libcuda.so.1. Each program records when each of
 * its kernels ran (the double runs kernels inside cuLaunchKernel, so that is
 * when the launch held the GPU), a checksum of what its kernels computed, and
 * the prefetches the double saw (gate_prog.c); the shim's counters come from
 * `gmux run --stats`.
 *
 * The harness owns one folder per test process (gh_dir) holding the daemon's
 * socket (gh_sock), the programs' outputs (out<i>, stats<i>) and marker files.
 * Waits are on observable conditions (a file, `gmux status`), each bounded by
 * a generous timeout, never fixed delays standing for "long enough".
 *
 * Tests registered with GH_TEST get a folder of their own under that one
 * (gh_test_setup), so that a `go` file of one test never wakes a program of
 * another. Every process the harness starts (gh_fork: the daemon, scripted
 * daemons, programs) is killed with its process group when the test that
 * started it ends (gh_test_teardown), failed or not; when the test process
 * exits; when it is ended by SIGTERM, SIGINT, SIGHUP or SIGQUIT (ctest's
 * timeout, ^C); and, by the kernel, when it dies any other way (SIGKILL:
 * the children's parent-death signal). Until 2026-12-02 a program of a test
 * that failed ran on, paused until the next test created its `go`. A daemon
 * started in the background (`gmux run`'s gmuxd, `gmux daemon`) is in a
 * session of its own, which neither reaches: once the test process has gone,
 * however it went, a guardian process gh_init started stops every daemon
 * whose socket lock lies in gh_init's folder and, unless gh_finish removed
 * that folder, removes it (gate_harness.c, gh_guard).
 *
 * Thread-safety: none (one test thread; children are processes).
 */
#ifndef GATE_HARNESS_H
#define GATE_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

#define GH_MAX_PROGS 3
#define GH_MAX_K     1000

typedef struct gh_out {
    char checksum[32];
    unsigned long long request;
    size_t n;
    unsigned long long t[GH_MAX_K][2];
    unsigned long long gate_waits, gate_plans, gate_registrations, ahead_plans, ahead_bytes;
    unsigned long long evict_early, evict_deferred, evict_cancelled, capture_joined;
    unsigned long long evicted_reports, evicted_put_off; /* EVICTED sent: done, put off */
    unsigned long long fill_dropped, fill_dropped_bytes; /* fill ranges given up (store full) */
    int armed; /* CAPTURE 4: 1 if the armed capture began (and held); 5: if the armed push
                  fired; 6: if the capture began */
    unsigned long long cap_from, cap_to; /* CAPTURE 1/2: when the capture began and ended */
    unsigned long long evicted_ctx_gone; /* EVICTED sent at once: the context was destroyed */
    unsigned long long evicted_unknown;  /* EVICTED sent flagged failed: the event query failed */
    unsigned long long relaxed;          /* CAPTURE 3/14: unsafe calls let through as RELAXED */
    unsigned long long no_prefetch_ordering; /* launches that met an ordering: no prefetch */
    unsigned long long gate_no_turn;         /* launches that went on without a turn */
    size_t nd, nh;
    unsigned long long d[64][3];    /* prefetches to the device: ns, base, len (the first 64) */
    int d_before[64];               /* each: 1 if ordered before the next launch (gate_prog.c) */
    unsigned long long h[64][4];    /* the same to the host (evictions), and whether ordered
                                       after the queued work (gate_prog.c) */
    size_t nsync;                   /* stream synchronizations (the shim's fences) */
    unsigned long long sync_ns[64]; /* when (the first 64) */
} gh_out_t;

/* gate_prog's arguments (strings; see gate_prog.c). delay_ms and pause_ms
 * may also name a file: the program waits until it exists. */
typedef struct gh_spec {
    const char *cls;
    const char *seed, *n, *work_us, *delay_ms;
    const char *extra_mib; /* NULL: no extra allocation */
    const char *pause_ms;  /* NULL: no pause after half the kernels */
    const char *capture;   /* "1": a blocking stream captures a graph through the pause,
                              "2": the launch stream does; "3" to "18": see gate_prog.c;
                              NULL or "0": none */
    const char *stream;    /* "1": kernels go on a non-blocking stream of the program,
                              "2": on a blocking one, "3": on a green context's */
} gh_spec_t;

extern char gh_dir[128], gh_sock[192];

/* fork() for a process of the test: the child is put in a process group of
 * its own and gets SIGKILL when the test process dies; the parent tracks it
 * (at most GH_MAX_CHILDREN at once, those reaped by the test not counted)
 * until gh_kill_children. Fails the test when fork fails. */
#define GH_MAX_CHILDREN 16
pid_t gh_fork(void);
/* Kills (SIGKILL) every tracked child still unreaped, with its process
 * group, and reaps it. A child the test reaped itself is left alone: its pid
 * may name another process since. */
void gh_kill_children(void);

/* cmocka fixtures of one test (GH_TEST): a fresh folder of the test's own
 * under the harness's (gh_dir, gh_sock); then gh_kill_children, a
 * background daemon stopped, and gh_dir back to the harness's folder. */
int gh_test_setup(void **state);
int gh_test_teardown(void **state);
#define GH_TEST(f) cmocka_unit_test_setup_teardown(f, gh_test_setup, gh_test_teardown)

void gh_sleep_ms(long ms);
unsigned long long gh_now_ns(void);

/* gh_dir/name, in one of a few rotating static buffers. */
const char *gh_path(const char *name);
/* Creates the (empty) file gh_dir/name. */
void gh_touch(const char *name);

/* Starts `gmux daemon --foreground` on gh_sock and waits for its socket. */
pid_t gh_start_daemon(const char *placement);
/* Sends sig and reaps it. */
void gh_stop_daemon(pid_t pid, int sig);
/* Stops the background daemon named by gh_sock's lock file. */
void gh_stop_background_daemon(void);
/* cmocka teardown: stops a background daemon a failed test left behind. */
int gh_stop_leftover_daemon(void **state);

/* argv of `gmux run` for program i (static storage per index). */
char *const *gh_prog_argv(int i, const gh_spec_t *s, int daemon);
/* Runs programs 0..n-1 of specs at once and reads their outputs (all exit 0). */
void gh_run_progs(size_t n, const gh_spec_t *specs, int daemon, gh_out_t *outs);
/* Reads program i's output and stats files. */
void gh_read_out(int i, gh_out_t *o);

/* Polls `gmux status --json` until count(needle) == want; whether it did
 * within about a minute. The last output stays in *last (static). */
int gh_status_wait(const char *needle, int want, const char **last);

size_t gh_overlaps(const gh_out_t *a, const gh_out_t *b);
/* Kernels of o that started in [from, to]. */
size_t gh_started_in(const gh_out_t *o, unsigned long long from, unsigned long long to);

/* Before the tests: creates gh_dir, sets the environment they share,
 * (once) arranges for gh_kill_children at exit and at the signals above,
 * and starts the guardian of gh_dir's background daemons. */
void gh_init(void);
/* After them: gh_kill_children, removes gh_dir; returns rc, or 1 if that
 * failed. */
int gh_finish(int rc);

#endif /* GATE_HARNESS_H */
