/* Tests of shim_kernel_name (src/shim/kname.c): the one name a kernel gets in
 * traces, template databases and the predictor's lookups. PyTorch's kernels
 * have mangled names of thousands of bytes: the recorder called them
 * kernel_N and the predictor kernel_%p, so no template learned for them was
 * ever used (H200, 2026-12-04: template_launches 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shim/kname.h"

static char name[SHIM_KNAME_MAX + 1];

static const char *kname(const char *drv)
{
    memset(name, 0x55, sizeof(name));
    shim_kernel_name(drv, name);
    return name;
}

static void assert_db_safe(const char *n)
{
    assert_true(strlen(n) <= SHIM_KNAME_MAX && strlen(n) > 0);
    for (const char *c = n; *c; c++)
        assert_true(*c > ' ' && *c < 0x7f); /* a database field: no blank, no control */
}

static void test_short_names_are_kept(void **state)
{
    (void)state;
    assert_string_equal(kname("scale"), "scale");
    assert_string_equal(
        kname("_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_tn_align1EEvNT_6ParamsE"),
        "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_tn_align1EEvNT_6ParamsE");
    char at_max[SHIM_KNAME_MAX + 1];
    memset(at_max, 'k', SHIM_KNAME_MAX);
    at_max[SHIM_KNAME_MAX] = '\0';
    assert_string_equal(kname(at_max), at_max);
    assert_string_equal(kname(NULL), "");
    assert_string_equal(kname(""), "");
}

static void test_long_names_get_a_stable_digest(void **state)
{
    (void)state;
    size_t len = 5000;
    char *a = malloc(len + 1), *b = malloc(len + 1);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < len; i++)
        a[i] = b[i] = (char)('a' + i % 26);
    a[len] = b[len] = '\0';
    b[len - 1] = 'Z'; /* differs only at its end */
    char first[SHIM_KNAME_MAX + 1];
    strcpy(first, kname(a));
    assert_db_safe(first);
    assert_int_equal(strncmp(first, a, 16), 0); /* readable: it starts as the name does */
    assert_non_null(strchr(first, '~'));
    assert_string_equal(kname(a), first); /* the same every time (and in every process) */
    assert_string_not_equal(kname(b), first);
    /* one byte over the limit is digested too */
    a[SHIM_KNAME_MAX + 1] = '\0';
    assert_db_safe(kname(a));
    assert_string_not_equal(name, a);
    free(a);
    free(b);
}

static void test_blanks_and_controls_are_digested(void **state)
{
    (void)state;
    assert_db_safe(kname("void at::native::kernel<float>(int)"));
    assert_db_safe(kname("tab\there"));
    char first[SHIM_KNAME_MAX + 1];
    strcpy(first, kname("a b"));
    assert_string_not_equal(kname("a_b"), first); /* not the name it would be mistaken for */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_names_are_kept),
        cmocka_unit_test(test_long_names_get_a_stable_digest),
        cmocka_unit_test(test_blanks_and_controls_are_digested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
