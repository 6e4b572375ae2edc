/*
 * gmux demo: the main job on the built-in defaults. Each part of the runtime
 * adds its demonstration here; parts not built yet are named plainly.
 */
#include <stdio.h>

#include "bench.h"
#include "cli.h"
#include "commands.h"
#include "demo_moe.h"

struct demo_part {
    const char *name;
    int (*run)(void); /* NULL: not built yet */
    const char *pending;
};

static const struct demo_part parts[] = {
    {"mem: simulator report (8 LLM instances, DL and scientific mixes)", NULL,
     "not built yet (issue #3: engine core and trace-driven simulator)"},
    {"net: loopback put/signal demo", demo_net,
     "not built yet (issue #7: GPU-initiated networking core)"},
    {"net: MoE dispatch/combine, CPU threads, 4 ranks over loopback", demo_moe_run, NULL},
};

int cmd_demo(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            printf("Usage: gmux demo\n\n"
                   "Runs the demonstration of each part of gmux on its built-in defaults\n"
                   "and says which parts are not built yet. Needs no GPU.\n");
            return 0;
        }
        return cli_usage_error("demo", "unexpected argument '%s'", argv[i]);
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        printf("== %s\n", parts[i].name);
        if (!parts[i].run) {
            printf("   %s\n", parts[i].pending);
            continue;
        }
        int rc = parts[i].run();
        if (rc != 0) {
            printf("   FAILED (exit %d)\n", rc);
            failed = 1;
        }
    }
    return failed;
}
