/*
 * Symbol consistency: libgmux.so exports exactly the hooks of syms.h and
 * dlsym, nothing else (nm -D --defined-only), so the list, the dispatch and
 * the exports cannot drift apart, and nothing leaks into applications (in
 * ASan builds, also __asan_default_options).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shim/syms.h"

/* ASan builds (GMUX_ASAN_OPTIONS): also the runtime's default options,
 * cmake/asan_options.c, so that the shim's code has ASan's checks on in a
 * program that is not ours; in no other build. */
#ifdef GMUX_ASAN_OPTIONS
#define ASAN_DEFAULTS_ , "__asan_default_options"
#else
#define ASAN_DEFAULTS_
#endif
#define SYM_NAME_(sym, base, ver, pfn, pt) #sym,
static const char *const expected[] = {SHIM_HOOK_LIST(SYM_NAME_) "dlsym" ASAN_DEFAULTS_};
#undef SYM_NAME_
#define NEXPECTED (sizeof(expected) / sizeof(expected[0]))

/* What clang's profile runtime adds to every instrumented library (coverage
 * builds, GMUX_COVERAGE): its file name and the bounds of its sections. */
static bool instrumentation_symbol(const char *name)
{
#ifdef GMUX_COVERAGE
    return strncmp(name, "__llvm_profile_", 15) == 0 ||
           strncmp(name, "__start___llvm_prf_", 19) == 0 ||
           strncmp(name, "__stop___llvm_prf_", 18) == 0;
#else
    (void)name;
    return false;
#endif
}

static void test_exports_match_the_list(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", GMUX_SHIM_PATH);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int seen[NEXPECTED] = {0};
    char line[512];
    int extras = 0, total = 0;
    while (fgets(line, sizeof(line), p)) {
        char addr[64], type[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
            continue;
        char *at = strchr(name, '@');
        if (at)
            *at = '\0';
        if (instrumentation_symbol(name))
            continue;
        total++;
        size_t i;
        for (i = 0; i < NEXPECTED; i++)
            if (strcmp(expected[i], name) == 0)
                break;
        if (i == NEXPECTED) {
            print_error("unexpected export: %s", line);
            extras++;
        } else {
            assert_string_equal(type, "T");
            seen[i]++;
        }
    }
    assert_int_equal(pclose(p), 0);
    assert_true(total > 0);
    assert_int_equal(extras, 0);
    for (size_t i = 0; i < NEXPECTED; i++) {
        if (seen[i] != 1)
            print_error("missing export: %s\n", expected[i]);
        assert_int_equal(seen[i], 1);
    }
}

/* The lifecycle hooks (context destruction, primary-context release and reset,
 * unloads) are in the list, hence exported: without them the shim would keep
 * counting what a context or module took along. So are the allocations that
 * cannot be redirected (VMM, CUDA arrays): without them gmux would not count
 * them at all. */
static void test_lifecycle_hooks_listed(void **state)
{
    (void)state;
    static const char *const must[] = {"cuCtxDestroy",
                                       "cuCtxDestroy_v2",
                                       "cuStreamDestroy",
                                       "cuStreamDestroy_v2",
                                       "cuDevicePrimaryCtxRelease",
                                       "cuDevicePrimaryCtxReset",
                                       "cuDevicePrimaryCtxRetain",
                                       "cuDevicePrimaryCtxRelease_v2",
                                       "cuDevicePrimaryCtxReset_v2",
                                       "cuModuleUnload",
                                       "cuLibraryUnload",
                                       "cuMemCreate",
                                       "cuMemRelease",
                                       "cuMemMap",
                                       "cuMemUnmap",
                                       "cuArrayCreate_v2",
                                       "cuArray3DCreate_v2",
                                       "cuArrayDestroy",
                                       "cuMipmappedArrayCreate",
                                       "cuMipmappedArrayDestroy"};
    for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++) {
        size_t j;
        for (j = 0; j < NEXPECTED; j++)
            if (strcmp(expected[j], must[i]) == 0)
                break;
        if (j == NEXPECTED)
            print_error("not hooked: %s\n", must[i]);
        assert_true(j < NEXPECTED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_exports_match_the_list),
                                       cmocka_unit_test(test_lifecycle_hooks_listed)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
