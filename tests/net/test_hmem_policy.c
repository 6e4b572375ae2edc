/* Tests of net_fab_cuda_direct (src/net/fab.c): which providers CUDA memory
 * is registered with directly. libfabric 1.17's shm copies CUDA memory inside
 * its progress calls with cudaMemcpy, followed by cudaDeviceSynchronize when
 * the other side is its own (unregistered) bounce buffer; with a kernel
 * spinning in a device-API wait that never returns until the wait times out
 * (H200, 2026-12-04: "wait timed out, quiet timed out"). So shm stages CUDA
 * memory unless GMUX_NET_SHM_CUDA_DIRECT asks otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "net/fab.h"

static void test_shm_stages_cuda_unless_asked(void **state)
{
    (void)state;
    net_fab_t fab = {.hmem = true, .prov_name = "shm"};
    assert_false(net_fab_cuda_direct(&fab, false));
    assert_true(net_fab_cuda_direct(&fab, true));
}

static void test_other_providers_go_direct_with_hmem(void **state)
{
    (void)state;
    const char *provs[] = {"tcp", "verbs;ofi_rxm", "efa", "cxi"};
    for (size_t i = 0; i < sizeof(provs) / sizeof(provs[0]); i++) {
        net_fab_t fab = {.hmem = true, .prov_name = provs[i]};
        assert_true(net_fab_cuda_direct(&fab, false));
        fab.hmem = false; /* no FI_HMEM: nothing goes direct */
        assert_false(net_fab_cuda_direct(&fab, true));
    }
    net_fab_t none = {.hmem = true, .prov_name = NULL}; /* not opened */
    assert_false(net_fab_cuda_direct(&none, true));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shm_stages_cuda_unless_asked),
        cmocka_unit_test(test_other_providers_go_direct_with_hmem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
