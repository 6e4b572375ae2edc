/* Tests of net_fi (src/net/fiload.c): the functions it binds in libfabric
 * at first use are the ones a direct link would call. This binary links
 * libfabric itself, to compare; that libgmux-net.so alone does not load it
 * is test_net_api's test_one_rank_loads_no_libfabric. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rdma/fi_errno.h>

#include "net/fiload.h"

static void test_load_binds_libfabric(void **state)
{
    (void)state;
    assert_int_equal(net_fi_load(), GMUX_OK);
    assert_int_equal(net_fi_load(), GMUX_OK); /* once, and then the same answer */
    assert_true(net_fi_loaded());
    assert_int_equal(net_fi_version(), fi_version());
    assert_int_equal(FI_MAJOR(net_fi_version()), 1);
    for (int e = FI_EPERM; e <= FI_ENOKEY; e++) {
        /* a copy: for an errno value either may return strerror's text,
         * whose buffer the next call may free */
        char bound[256];
        snprintf(bound, sizeof(bound), "%s", net_fi_strerror(e));
        assert_string_equal(bound, fi_strerror(e));
    }
}

/* What net_fab_open does with them: hints from allocinfo, a getinfo naming
 * one provider, freeinfo of both. */
static void test_getinfo_through_the_binding(void **state)
{
    (void)state;
    assert_int_equal(net_fi_load(), GMUX_OK);
    struct fi_info *hints = net_fi_allocinfo();
    assert_non_null(hints);
    assert_non_null(hints->ep_attr);
    assert_non_null(hints->fabric_attr);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->fabric_attr->prov_name = strdup("shm");
    struct fi_info *info = NULL;
    assert_int_equal(net_fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), 0);
    assert_non_null(info);
    assert_string_equal(info->fabric_attr->prov_name, "shm");
    struct fid_fabric *fabric = NULL;
    assert_int_equal(net_fi_fabric(info->fabric_attr, &fabric, NULL), 0);
    assert_int_equal(fi_close(&fabric->fid), 0);
    net_fi_freeinfo(info);
    /* a provider that does not exist: libfabric's own answer comes back */
    free(hints->fabric_attr->prov_name);
    hints->fabric_attr->prov_name = strdup("gmux-no-such-provider");
    info = NULL;
    assert_int_equal(net_fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info), -FI_ENODATA);
    assert_null(info);
    net_fi_freeinfo(hints);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_binds_libfabric),
        cmocka_unit_test(test_getinfo_through_the_binding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
