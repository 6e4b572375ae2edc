/*
 * gmux bench NAME [ARGS]: the benchmarks of the runtime, one table entry
 * each, so that later ones are added as one line here and one file.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"

struct bench {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct bench benches[] = {
    {"net", bench_net, "put+signal latency, bandwidth and message rate vs raw libfabric"},
};

int cmd_bench(int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error("bench", "missing the benchmark's name");
    if (com_cli_is_help(argv[1])) {
        printf("Usage: gmux bench NAME [ARGS...]   (gmux bench NAME --help)\n"
               "       gmux bench -h | --help | -V | --version\n\nBenchmarks:\n");
        for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
            printf("  %-10s %s\n", benches[i].name, benches[i].summary);
        printf("\nExit status: the benchmark's (gmux bench NAME --help); 2 for a usage error\n"
               "(no NAME, an unknown one).\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++)
        if (strcmp(argv[1], benches[i].name) == 0)
            return benches[i].run(argc - 1, argv + 1);
    if (argv[1][0] == '-')
        return cli_bad_word("bench", argv[1]);
    return cli_usage_error("bench", "unknown benchmark '%s'", argv[1]);
}
