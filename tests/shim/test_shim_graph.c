/*
 * Graphs in libgmux.so against the driver test double (see shim_harness.h):
 * kernel nodes and child graphs walked at instantiation, and their data
 * prefetched before the one graph launch. CTest runs this under every
 * policy, like test_shim.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "shim_harness.h"

/* A kernel node of vadd, one block of 64 threads. */
static CUDA_KERNEL_NODE_PARAMS vadd_node(void **args)
{
    return (CUDA_KERNEL_NODE_PARAMS){.func = vadd_fn(),
                                     .gridDimX = 1,
                                     .gridDimY = 1,
                                     .gridDimZ = 1,
                                     .blockDimX = 64,
                                     .blockDimY = 1,
                                     .blockDimZ = 1,
                                     .kernelParams = args};
}

static void test_graph_inspected_at_instantiation(void **state)
{
    (void)state;
    const int n = 64;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4), d = alloc(n * 4);
    for (int i = 0; i < n; i++)
        ((float *)(uintptr_t)a)[i] = ((float *)(uintptr_t)b)[i] = 1.0f;
    CUgraph g;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&g, 0), CUDA_SUCCESS);
    PFN_cuGraphAddKernelNode_v12000 add =
        GET(PFN_cuGraphAddKernelNode_v12000, "cuGraphAddKernelNode", 12000);
    void *args1[] = {&a, &b, &c, (void *)&n}; /* c = a + b */
    void *args2[] = {&c, &a, &d, (void *)&n}; /* d = c + a */
    CUDA_KERNEL_NODE_PARAMS p = vadd_node(args1);
    CUgraphNode n1, n2;
    assert_int_equal(add(&n1, g, NULL, 0, &p), CUDA_SUCCESS);
    p.kernelParams = args2;
    assert_int_equal(add(&n2, g, &n1, 1, &p), CUDA_SUCCESS);
    CUgraphExec exec;
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    if (mode_proactive)
        assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), 2);
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c, d};
    const size_t sizes[] = {n * 4, n * 4, n * 4, n * 4};
    assert_prefetched_before("cuGraphLaunch", s, bases, sizes, 4);
    assert_true(((float *)(uintptr_t)d)[n - 1] == 3.0f);
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g);
}

/* A graph whose second kernel sits in a child graph (and a third in the
 * child's child): the child graphs are walked at instantiation, so the one
 * graph launch prefetches the data of every kernel in it. */
static void test_graph_child_nodes(void **state)
{
    (void)state;
    const int n = 64;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4), d = alloc(n * 4),
                e = alloc(n * 4);
    for (int i = 0; i < n; i++)
        ((float *)(uintptr_t)a)[i] = ((float *)(uintptr_t)b)[i] = 1.0f;
    PFN_cuGraphCreate_v10000 create = GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000);
    PFN_cuGraphAddKernelNode_v12000 add =
        GET(PFN_cuGraphAddKernelNode_v12000, "cuGraphAddKernelNode", 12000);
    PFN_cuGraphAddChildGraphNode_v10000 add_child =
        GET(PFN_cuGraphAddChildGraphNode_v10000, "cuGraphAddChildGraphNode", 12000);
    assert_non_null(add_child);
    CUgraph g, child, grandchild;
    assert_int_equal(create(&g, 0), CUDA_SUCCESS);
    assert_int_equal(create(&child, 0), CUDA_SUCCESS);
    assert_int_equal(create(&grandchild, 0), CUDA_SUCCESS);
    void *args1[] = {&a, &b, &c, (void *)&n}; /* c = a + b */
    void *args2[] = {&c, &a, &d, (void *)&n}; /* d = c + a */
    void *args3[] = {&d, &c, &e, (void *)&n}; /* e = d + c */
    CUDA_KERNEL_NODE_PARAMS p = vadd_node(args1);
    CUgraphNode n1, n2, n3, c1, c2;
    assert_int_equal(add(&n1, g, NULL, 0, &p), CUDA_SUCCESS);
    p.kernelParams = args2;
    assert_int_equal(add(&n2, child, NULL, 0, &p), CUDA_SUCCESS);
    p.kernelParams = args3;
    assert_int_equal(add(&n3, grandchild, NULL, 0, &p), CUDA_SUCCESS);
    assert_int_equal(add_child(&c2, child, &n2, 1, grandchild), CUDA_SUCCESS);
    assert_int_equal(add_child(&c1, g, &n1, 1, child), CUDA_SUCCESS);
    CUgraphExec exec;
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    if (mode_proactive) {
        assert_int_equal(count_calls("cuGraphChildGraphNodeGetGraph"), 2);
        assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), 3);
    }
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {a, b, c, d, e};
    const size_t sizes[] = {n * 4, n * 4, n * 4, n * 4, n * 4};
    assert_prefetched_before("cuGraphLaunch", s, bases, sizes, 5);
    assert_true(((float *)(uintptr_t)e)[n - 1] == 5.0f); /* 3 + 2: every kernel ran */
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    PFN_cuGraphDestroy_v10000 destroy = GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000);
    destroy(g);
    destroy(child);
    destroy(grandchild);
}

int main(void)
{
    if (shim_harness_open() != 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_inspected_at_instantiation),
        cmocka_unit_test(test_graph_child_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
