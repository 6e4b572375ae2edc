/* Demo part of the MoE example (demo_moe.c); listed in cmd_demo.c. */
#ifndef GMUX_DEMO_MOE_H
#define GMUX_DEMO_MOE_H

/* Runs examples/moe/moe_cpu on 4 ranks over loopback; returns its exit status. */
int demo_moe_run(void);

#endif /* GMUX_DEMO_MOE_H */
