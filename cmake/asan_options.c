/*
 * ASan's default options for every executable of an ASan build (check-asan,
 * fuzz; cmake/GmuxCompiler.cmake adds this file to each one).
 *
 * detect_stack_use_after_return=1: a read through a pointer into a frame that
 * has returned is reported. It is off by default; gcc 12 compiles the check in
 * but has no -fsanitize-address-use-after-return=always to turn it on, so the
 * runtime option does it. Given here rather than in ASAN_OPTIONS, it holds in
 * every process the tests start, also where a test gives a child an
 * ASAN_OPTIONS of its own (verify_asan_link_order=0): the runtime reads these
 * defaults first and ASAN_OPTIONS after them, so a word given there adds to
 * them or overrides only its own option. Until 2026-12-04 it was off, and a
 * test that read a callee's dead argv (test_trace_opts) passed check-asan.
 *
 * Exported (default visibility) so that the runtime's weak definition is
 * overridden. Every executable carries it, and libgmux.so (src/shim), so that
 * preloaded into a program that is not ours the shim's code has the check
 * too. The first definition in the dynamic lookup wins: a program's own
 * (an executable comes before a preloaded library), then the shim's, then the
 * runtime's empty one.
 */
const char *__asan_default_options(void);

__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "detect_stack_use_after_return=1";
}
