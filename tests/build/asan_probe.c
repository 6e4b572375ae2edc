/*
 * A foreign program for test_asan_shim_options: built without sanitizers and
 * without cmake/asan_options.c, as sh or python are. It prints the ASan
 * runtime's stack-use-after-return switch, which instrumented code reads at
 * the entry of each function with a frame to move off the stack: with
 * libgmux.so of an ASan build preloaded, that runtime is the one the shim's
 * code runs under. Built twice: asan_probe, and asan_probe_own with an
 * __asan_default_options of its own (PROBE_OWN_OPTIONS) turning the check off.
 */
#include <dlfcn.h>
#include <stdio.h>

#ifdef PROBE_OWN_OPTIONS
const char *__asan_default_options(void);

__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "detect_stack_use_after_return=0";
}
#endif

int main(void)
{
    const int *on = dlsym(RTLD_DEFAULT, "__asan_option_detect_stack_use_after_return");
    if (!on) {
        puts("no ASan runtime");
        return 0;
    }
    printf("detect_stack_use_after_return=%d\n", *on);
    return 0;
}
