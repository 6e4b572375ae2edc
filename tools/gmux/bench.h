/* The benchmarks behind `gmux bench NAME`; each returns an exit status. */
#ifndef GMUX_CLI_BENCH_H
#define GMUX_CLI_BENCH_H

int bench_net(int argc, char **argv);
int bench_net_rank(int argc, char **argv);
int bench_net_demo(int argc, char **argv);

/* The net part of `gmux demo`. */
int demo_net(void);

#endif /* GMUX_CLI_BENCH_H */
