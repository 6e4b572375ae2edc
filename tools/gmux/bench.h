/* The benchmarks behind `gmux bench NAME`; each returns an exit status. */
#ifndef GMUX_CLI_BENCH_H
#define GMUX_CLI_BENCH_H

int bench_net(int argc, char **argv);
int bench_net_rank(int argc, char **argv);

#endif /* GMUX_CLI_BENCH_H */
