/*
 * Graphs in libgmux.so against the driver test double (see shim_harness.h):
 * kernel nodes, child graphs and conditional nodes walked at
 * instantiation, and their data prefetched before the one graph launch; no
 * copy of a graph holding a conditional node (as the driver); a graph
 * captured from a stream holding the program's kernels only.
 * CTest runs this under every policy, like test_shim.
 *
 * Run as `test_shim_graph cond-stats` it only runs the conditional-node
 * scenario and exits, so that test_graph_conditional_stats can read the
 * counters a fresh process writes at exit (GMUX_SHIM_STATS).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include "shim_harness.h"
#include "tproc.h"

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

/* Instantiates g (the shim reads its nkernels kernel nodes, proactive) and
 * launches it on s: the data of the n regions bases[]/sizes[] is
 * prefetched before the launch, where the policy prefetches. */
static CUgraphExec instantiate_and_launch(CUgraph g, CUstream s, size_t nkernels,
                                          const CUdeviceptr *bases, const size_t *sizes, size_t n)
{
    CUgraphExec exec;
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    if (mode_proactive)
        assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), nkernels);
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    assert_prefetched_before("cuGraphLaunch", s, bases, sizes, n);
    return exec;
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
    const CUdeviceptr bases[] = {a, b, c, d};
    const size_t sizes[] = {n * 4, n * 4, n * 4, n * 4};
    CUgraphExec exec = instantiate_and_launch(g, new_stream(), 2, bases, sizes, 4);
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

/* --- conditional nodes ---------------------------------------------------- */

#define VADD_N 64 /* elements of every vadd buffer below */

/* The number of distinct graphs cuGraphGetNodes was asked about since the
 * log was reset (the shim asks twice per graph: its size, then its nodes). */
static size_t graphs_listed(void)
{
    size_t n = 0;
    for (long i = find_call("cuGraphGetNodes", 0); i >= 0;
         i = find_call("cuGraphGetNodes", (size_t)i + 1)) {
        long j = find_call("cuGraphGetNodes", 0);
        while (j < i && f_get((size_t)j)->a[0] != f_get((size_t)i)->a[0])
            j = find_call("cuGraphGetNodes", (size_t)j + 1);
        n += j == i; /* the first call about this graph */
    }
    return n;
}

/* Three fresh buffers for one vadd(a, b, c, n) kernel and its argument array. */
typedef struct vadd_bufs {
    CUdeviceptr a, b, c;
    int n;
    void *args[4];
} vadd_bufs_t;

static void vadd_bufs_init(vadd_bufs_t *v)
{
    v->a = alloc(VADD_N * 4);
    v->b = alloc(VADD_N * 4);
    v->c = alloc(VADD_N * 4);
    v->n = VADD_N;
    v->args[0] = &v->a;
    v->args[1] = &v->b;
    v->args[2] = &v->c;
    v->args[3] = &v->n;
}

static void add_vadd(CUgraph g, vadd_bufs_t *v)
{
    CUDA_KERNEL_NODE_PARAMS p = vadd_node(v->args);
    CUgraphNode node;
    assert_int_equal(
        GET(PFN_cuGraphAddKernelNode_v12000, "cuGraphAddKernelNode", 12000)(&node, g, NULL, 0, &p),
        CUDA_SUCCESS);
}

/* Adds a conditional node of type and size bodies to g, through the entry
 * point add (the hooked one, or the double's own where the shim must not
 * see it); the bodies are returned in bodies[] and the node in *node_p. */
static void add_cond(PFN_cuGraphAddNode_v12030 add, CUgraph g, CUgraphConditionalNodeType type,
                     unsigned size, CUgraph *bodies, CUgraphNode *node_p)
{
    CUgraphConditionalHandle h;
    assert_int_equal(GET(PFN_cuGraphConditionalHandleCreate_v12030,
                         "cuGraphConditionalHandleCreate",
                         12030)(&h, g, NULL, 1, CU_GRAPH_COND_ASSIGN_DEFAULT),
                     CUDA_SUCCESS);
    CUgraphNodeParams p;
    memset(&p, 0, sizeof(p));
    p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    assert_int_equal(add(node_p, g, NULL, NULL, 0, &p), CUDA_SUCCESS);
    assert_non_null(p.conditional.phGraph_out);
    for (unsigned i = 0; i < size; i++) {
        bodies[i] = p.conditional.phGraph_out[i];
        assert_non_null(bodies[i]);
    }
}

static PFN_cuGraphAddNode_v12030 hooked_add_node(void)
{
    return GET(PFN_cuGraphAddNode_v12030, "cuGraphAddNode", 12030);
}

/* The hooked cuGraphAddNode of CUDA 12.2 (no edge data), in the shape of _v2. */
static CUresult add_node_v12020(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p)
{
    assert_null(edges);
    PFN_cuGraphAddNode_v12020 add = GET(PFN_cuGraphAddNode_v12020, "cuGraphAddNode", 12020);
    assert_ptr_not_equal((void *)add, f_entry("cuGraphAddNode"));
    return add(node, g, deps, ndeps, p);
}

/* The double's own cuGraphAddNode_v2: a node created through it is one the
 * shim never saw created (as if the program had its pointer from before
 * libgmux.so was loaded). */
static PFN_cuGraphAddNode_v12030 unseen_add_node(void)
{
    PFN_cuGraphAddNode_v12030 add = (PFN_cuGraphAddNode_v12030)f_entry("cuGraphAddNode_v2");
    assert_non_null(add);
    assert_ptr_not_equal((void *)add, (void *)hooked_add_node());
    return add;
}

/*
 * One graph: a kernel; an IF node with an ELSE (a kernel in each body); a
 * WHILE node (created through the 12.2 ABI) whose body holds a child graph
 * with a kernel; and an IF node created where the shim does not see it (a
 * kernel in its body). Each kernel has its own three buffers. Instantiated
 * and launched once on stream s; bufs[0..3] are the seen kernels' buffers,
 * bufs[4] the unseen one's.
 */
typedef struct cond_graph {
    vadd_bufs_t bufs[5];
    CUgraph g, child;
    CUgraphExec exec;
    CUstream s;
} cond_graph_t;

static void cond_graph_run(cond_graph_t *cg)
{
    PFN_cuGraphCreate_v10000 create = GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000);
    for (size_t i = 0; i < 5; i++)
        vadd_bufs_init(&cg->bufs[i]);
    for (int i = 0; i < VADD_N; i++)
        ((float *)(uintptr_t)cg->bufs[0].a)[i] = ((float *)(uintptr_t)cg->bufs[0].b)[i] = 1.0f;
    assert_int_equal(create(&cg->g, 0), CUDA_SUCCESS);
    assert_int_equal(create(&cg->child, 0), CUDA_SUCCESS);
    add_vadd(cg->g, &cg->bufs[0]);
    CUgraph if_bodies[2], while_body, unseen_body;
    CUgraphNode if_node, while_node, unseen_node, child_node;
    add_cond(hooked_add_node(), cg->g, CU_GRAPH_COND_TYPE_IF, 2, if_bodies, &if_node);
    add_vadd(if_bodies[0], &cg->bufs[1]);
    add_vadd(if_bodies[1], &cg->bufs[2]);
    add_cond(add_node_v12020, cg->g, CU_GRAPH_COND_TYPE_WHILE, 1, &while_body, &while_node);
    add_vadd(cg->child, &cg->bufs[3]);
    assert_int_equal(GET(PFN_cuGraphAddChildGraphNode_v10000, "cuGraphAddChildGraphNode",
                         12000)(&child_node, while_body, NULL, 0, cg->child),
                     CUDA_SUCCESS);
    add_cond(unseen_add_node(), cg->g, CU_GRAPH_COND_TYPE_IF, 1, &unseen_body, &unseen_node);
    add_vadd(unseen_body, &cg->bufs[4]);
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&cg->exec, cg->g, 0),
                     CUDA_SUCCESS);
    if (mode_proactive) {
        /* the graph, both IF bodies, the WHILE body, its child; not the unseen body */
        assert_int_equal(graphs_listed(), 5);
        assert_int_equal(count_calls("cuGraphChildGraphNodeGetGraph"), 1);
        assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), 4);
        for (long i = find_call("cuGraphGetNodes", 0); i >= 0;
             i = find_call("cuGraphGetNodes", (size_t)i + 1))
            assert_int_not_equal(f_get((size_t)i)->a[0], (uint64_t)(uintptr_t)unseen_body);
    } else {
        assert_int_equal(graphs_listed(), 0);
    }
    cg->s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(cg->exec, cg->s),
                     CUDA_SUCCESS);
}

static void cond_graph_destroy(cond_graph_t *cg)
{
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(cg->exec),
                     CUDA_SUCCESS);
    PFN_cuGraphDestroy_v10000 destroy = GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000);
    assert_int_equal(destroy(cg->g), CUDA_SUCCESS);
    assert_int_equal(destroy(cg->child), CUDA_SUCCESS);
}

/* Every body of the seen conditional nodes is walked (IF and ELSE, the
 * WHILE body and the child graph in it), so their data is prefetched before
 * the launch with the graph's own kernel's; the unseen node's is not. */
static void test_graph_conditional_nodes(void **state)
{
    (void)state;
    cond_graph_t cg;
    cond_graph_run(&cg);
    CUdeviceptr bases[12];
    size_t sizes[12];
    for (size_t k = 0; k < 4; k++) {
        bases[3 * k] = cg.bufs[k].a;
        bases[3 * k + 1] = cg.bufs[k].b;
        bases[3 * k + 2] = cg.bufs[k].c;
    }
    for (size_t i = 0; i < 12; i++)
        sizes[i] = VADD_N * 4;
    assert_prefetched_before("cuGraphLaunch", cg.s, bases, sizes, 12);
    assert_true(((float *)(uintptr_t)cg.bufs[0].c)[VADD_N - 1] == 2.0f); /* the graph ran */
    cond_graph_destroy(&cg);
}

static int cond_stats_child(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_graph_conditional_nodes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The counters of that scenario, from a fresh process: two conditional nodes
 * walked, one unknown, one child graph (in the WHILE body). */
static void test_graph_conditional_stats(void **state)
{
    (void)state;
    char path[256], env[300], out[4096], err[8192], json[4096];
    snprintf(path, sizeof(path), "/tmp/gmux_shim_graph_stats_%d.json", (int)getpid());
    snprintf(env, sizeof(env), "GMUX_SHIM_STATS=%s", path);
    unlink(path);
    char *const argv[] = {"/proc/self/exe", "cond-stats", NULL};
    char *const envp[] = {env, NULL};
    int st = tproc_capture(argv, envp, 60.0, out, sizeof(out), err, sizeof(err));
    if (st != 0)
        print_error("cond-stats child: status %d\n%s\n%s\n", st, out, err);
    assert_int_equal(st, 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(json, 1, sizeof(json) - 1, f);
    fclose(f);
    unlink(path);
    json[n] = '\0';
    double walked = mode_proactive ? 1 : 0;
    assert_true(tproc_json_num(json, "\"graphs_inspected\":") == walked);
    assert_true(tproc_json_num(json, "\"graph_conditionals\":") == 2 * walked);
    assert_true(tproc_json_num(json, "\"graph_cond_unknown\":") == walked);
    assert_true(tproc_json_num(json, "\"graph_children\":") == walked);
    assert_true(tproc_json_num(json, "\"graph_too_deep\":") == 0);
}

/*
 * Destroying a graph forgets its conditional nodes. The double hands the
 * destroyed graph's handle out again to the next graph, and its first node
 * slot to the next node: a conditional node the shim did not see created
 * then sits at the very handle of the one it knew. Its bodies are unknown,
 * and the old bodies (destroyed with their node) must not be walked.
 */
static void test_graph_destroy_forgets_conditionals(void **state)
{
    (void)state;
    PFN_cuGraphCreate_v10000 create = GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000);
    PFN_cuGraphDestroy_v10000 destroy = GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000);
    PFN_cuGraphInstantiateWithFlags_v11040 instantiate =
        GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags", 12000);
    PFN_cuGraphExecDestroy_v10000 exec_destroy =
        GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000);
    vadd_bufs_t x, y;
    vadd_bufs_init(&x);
    vadd_bufs_init(&y);
    CUgraph g1, g2, body1, body2;
    CUgraphNode node1, node2;
    CUgraphExec exec;
    assert_int_equal(create(&g1, 0), CUDA_SUCCESS);
    add_cond(hooked_add_node(), g1, CU_GRAPH_COND_TYPE_IF, 1, &body1, &node1);
    add_vadd(body1, &x);
    f_reset();
    assert_int_equal(instantiate(&exec, g1, 0), CUDA_SUCCESS);
    assert_int_equal(graphs_listed(), mode_proactive ? 2 : 0); /* g1, body1 */
    assert_int_equal(exec_destroy(exec), CUDA_SUCCESS);
    assert_int_equal(destroy(g1), CUDA_SUCCESS);

    assert_int_equal(create(&g2, 0), CUDA_SUCCESS);
    add_cond(unseen_add_node(), g2, CU_GRAPH_COND_TYPE_IF, 1, &body2, &node2);
    add_vadd(body2, &y);
    assert_ptr_equal(g2, g1); /* the double reused the handles */
    assert_ptr_equal(node2, node1);
    f_reset();
    assert_int_equal(instantiate(&exec, g2, 0), CUDA_SUCCESS);
    assert_int_equal(graphs_listed(), mode_proactive ? 1 : 0); /* g2 alone */
    assert_int_equal(count_calls("cuGraphKernelNodeGetParams_v2"), 0);
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, new_stream()),
                     CUDA_SUCCESS);
    assert_int_equal(count_prefetches(), 0);
    assert_int_equal(exec_destroy(exec), CUDA_SUCCESS);
    assert_int_equal(destroy(g2), CUDA_SUCCESS);
}

/* Instantiates g and returns how many graphs the shim walked for it. */
static size_t graphs_walked(CUgraph g)
{
    CUgraphExec exec;
    f_reset();
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    size_t n = graphs_listed();
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    return n;
}

/*
 * The same for cuGraphDestroyNode, whose slot the double hands to the next
 * node of that graph; and a conditional node created (seen) at the handle of
 * one the shim still knows, because its destruction went past the shim,
 * replaces what the shim knew.
 */
static void test_graph_destroy_node_forgets_conditional(void **state)
{
    (void)state;
    PFN_cuGraphDestroyNode_v10000 destroy_node =
        GET(PFN_cuGraphDestroyNode_v10000, "cuGraphDestroyNode", 12000);
    PFN_cuGraphDestroyNode_v10000 unseen_destroy_node =
        (PFN_cuGraphDestroyNode_v10000)f_entry("cuGraphDestroyNode");
    assert_non_null(unseen_destroy_node);
    assert_ptr_not_equal((void *)unseen_destroy_node, (void *)destroy_node);
    vadd_bufs_t x[2], z, w[2];
    vadd_bufs_init(&x[0]);
    vadd_bufs_init(&x[1]);
    vadd_bufs_init(&z);
    vadd_bufs_init(&w[0]);
    vadd_bufs_init(&w[1]);
    CUgraph g, bodies[2], body;
    CUgraphNode node, again;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&g, 0), CUDA_SUCCESS);
    add_cond(hooked_add_node(), g, CU_GRAPH_COND_TYPE_IF, 2, bodies, &node);
    add_vadd(bodies[0], &x[0]);
    add_vadd(bodies[1], &x[1]);
    assert_int_equal(graphs_walked(g), mode_proactive ? 3 : 0);

    /* destroyed through the shim: forgotten, the unseen node at its handle is not walked */
    assert_int_equal(destroy_node(node), CUDA_SUCCESS);
    add_cond(unseen_add_node(), g, CU_GRAPH_COND_TYPE_IF, 1, &body, &again);
    assert_ptr_equal(again, node);
    add_vadd(body, &z);
    assert_int_equal(graphs_walked(g), mode_proactive ? 1 : 0);

    /* a seen WHILE node at that handle, destroyed past the shim; then a seen
     * SWITCH node there: only the SWITCH node's three bodies are walked */
    assert_int_equal(destroy_node(again), CUDA_SUCCESS);
    add_cond(hooked_add_node(), g, CU_GRAPH_COND_TYPE_WHILE, 1, &body, &again);
    assert_ptr_equal(again, node);
    assert_int_equal(graphs_walked(g), mode_proactive ? 2 : 0);
    assert_int_equal(unseen_destroy_node(again), CUDA_SUCCESS);
    CUgraph cases[3];
    add_cond(hooked_add_node(), g, CU_GRAPH_COND_TYPE_SWITCH, 3, cases, &again);
    assert_ptr_equal(again, node);
    add_vadd(cases[0], &w[0]);
    add_vadd(cases[2], &w[1]);
    assert_int_equal(graphs_walked(g), mode_proactive ? 4 : 0);
    CUgraphExec exec;
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    CUstream s = new_stream();
    f_reset();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    const CUdeviceptr bases[] = {w[0].a, w[0].b, w[0].c, w[1].a, w[1].b, w[1].c};
    const size_t sizes[] = {VADD_N * 4, VADD_N * 4, VADD_N * 4, VADD_N * 4, VADD_N * 4, VADD_N * 4};
    assert_prefetched_before("cuGraphLaunch", s, bases, sizes, 6);
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

/*
 * A conditional node inside the body of another dies with it: destroying
 * the outer node forgets the inner one too. The double hands the outer
 * body's handle to the next graph created, so a node the shim did not see
 * created lands at the inner node's handle.
 */
static void test_graph_destroy_forgets_nested_conditionals(void **state)
{
    (void)state;
    PFN_cuGraphCreate_v10000 create = GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000);
    PFN_cuGraphDestroy_v10000 destroy = GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000);
    vadd_bufs_t x, y;
    vadd_bufs_init(&x);
    vadd_bufs_init(&y);
    CUgraph g, g2, outer_body, inner_body, body2;
    CUgraphNode outer, inner, node2;
    assert_int_equal(create(&g, 0), CUDA_SUCCESS);
    add_cond(hooked_add_node(), g, CU_GRAPH_COND_TYPE_IF, 1, &outer_body, &outer);
    add_cond(hooked_add_node(), outer_body, CU_GRAPH_COND_TYPE_WHILE, 1, &inner_body, &inner);
    add_vadd(inner_body, &x);
    assert_int_equal(graphs_walked(g), mode_proactive ? 3 : 0);
    assert_int_equal(GET(PFN_cuGraphDestroyNode_v10000, "cuGraphDestroyNode", 12000)(outer),
                     CUDA_SUCCESS);
    assert_int_equal(create(&g2, 0), CUDA_SUCCESS);
    assert_ptr_equal(g2, outer_body); /* the double reused the handles */
    add_cond(unseen_add_node(), g2, CU_GRAPH_COND_TYPE_IF, 1, &body2, &node2);
    assert_ptr_equal(node2, inner);
    add_vadd(body2, &y);
    assert_int_equal(graphs_walked(g2), mode_proactive ? 1 : 0);
    assert_int_equal(destroy(g2), CUDA_SUCCESS);
    assert_int_equal(destroy(g), CUDA_SUCCESS);
}

/*
 * cuda.h (CUDA 13.0): a graph that contains conditional nodes "cannot be
 * cloned" and "cannot be used in a child node" (cuGraphClone: "Cloning is
 * not supported for graphs which contain ... conditional nodes";
 * cuGraphAddChildGraphNode: "this call will return an error"). So no copy of
 * a conditional node exists whose bodies the shim did not see created, and
 * the double refuses both, also for a graph holding the conditional node in
 * a child graph's graph (embedded there by a captured graph launch). On main
 * the double copied the node with new bodies, whose creation the shim never
 * saw (an instantiation of the clone left them unwalked, graph_cond_unknown).
 */
static void test_graph_with_conditionals_not_copied(void **state)
{
    (void)state;
    PFN_cuGraphCreate_v10000 create = GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000);
    PFN_cuGraphDestroy_v10000 destroy = GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000);
    PFN_cuGraphClone_v10000 clone_fn = GET(PFN_cuGraphClone_v10000, "cuGraphClone", 12000);
    PFN_cuGraphAddChildGraphNode_v10000 add_child =
        GET(PFN_cuGraphAddChildGraphNode_v10000, "cuGraphAddChildGraphNode", 12000);
    vadd_bufs_t x;
    vadd_bufs_init(&x);
    CUgraph g, body, outer, clone = NULL;
    CUgraphNode node, child = NULL;
    assert_int_equal(create(&g, 0), CUDA_SUCCESS);
    add_cond(hooked_add_node(), g, CU_GRAPH_COND_TYPE_IF, 1, &body, &node);
    add_vadd(body, &x);
    assert_int_not_equal(clone_fn(&clone, g), CUDA_SUCCESS);
    assert_null(clone);
    assert_int_equal(create(&outer, 0), CUDA_SUCCESS);
    assert_int_not_equal(add_child(&child, outer, NULL, 0, g), CUDA_SUCCESS);
    assert_null(child);
    /* nested one level down, through a captured launch of g's executable graph */
    CUgraphExec exec;
    assert_int_equal(GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags",
                         12000)(&exec, g, 0),
                     CUDA_SUCCESS);
    CUstream s = new_stream();
    CUgraph captured = NULL;
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(exec, s), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(s, &captured),
                     CUDA_SUCCESS);
    assert_int_not_equal(clone_fn(&clone, captured), CUDA_SUCCESS);
    assert_null(clone);
    /* a graph without one still is copied */
    assert_int_equal(clone_fn(&clone, outer), CUDA_SUCCESS);
    assert_non_null(clone);
    assert_int_equal(destroy(clone), CUDA_SUCCESS);
    assert_int_equal(destroy(captured), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    assert_int_equal(destroy(outer), CUDA_SUCCESS);
    assert_int_equal(destroy(g), CUDA_SUCCESS);
}

/* A graph captured from a stream (mode GLOBAL): the double records what is
 * queued on the capturing stream as nodes and runs them only when the graph
 * is launched. The graph must hold exactly the program's two kernels, with
 * their arguments: none of the shim's prefetches, event records or waits
 * (the shim leaves a capturing stream alone), and nothing may have run or
 * moved at capture time. Instantiation must show the shim both kernel nodes,
 * and the graph's launch must prefetch their data first (proactive) and
 * compute what the kernels compute launched one by one. */
static void test_captured_graph_holds_program_work_only(void **state)
{
    (void)state;
    const int n = 64;
    CUdeviceptr a = alloc(n * 4), b = alloc(n * 4), c = alloc(n * 4), d = alloc(n * 4);
    float *fa = (float *)(uintptr_t)a, *fb = (float *)(uintptr_t)b;
    float *fc = (float *)(uintptr_t)c, *fd = (float *)(uintptr_t)d;
    for (int i = 0; i < n; i++) {
        fa[i] = (float)i;
        fb[i] = 0.5f * (float)i;
        fc[i] = fd[i] = -1.0f;
    }
    CUstream s = new_stream();
    PFN_cuLaunchKernel_v4000 launch = GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel", 12000);
    void *args1[] = {&a, &b, &c, (void *)&n}; /* c = a + b */
    void *args2[] = {&c, &a, &d, (void *)&n}; /* d = c + a */
    f_reset();
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 64, 1, 1, 0, s, args1, NULL), CUDA_SUCCESS);
    assert_int_equal(launch(vadd_fn(), 1, 1, 1, 64, 1, 1, 0, s, args2, NULL), CUDA_SUCCESS);
    CUgraph g;
    assert_int_equal(GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(s, &g),
                     CUDA_SUCCESS);
    assert_true(fc[n - 1] == -1.0f && fd[n - 1] == -1.0f); /* captured, not run */
    assert_int_equal(count_prefetches(), 0);
    const CUdeviceptr first[2] = {a, c};
    assert_graph_vadds(g, first, 2);
    const CUdeviceptr bases[] = {a, b, c, d};
    const size_t sizes[] = {n * 4, n * 4, n * 4, n * 4};
    CUgraphExec exec = instantiate_and_launch(g, s, 2, bases, sizes, 4);
    assert_graph_vadds(g, first, 2); /* the launch added nothing to the graph */
    for (int i = 0; i < n; i++) {
        assert_true(fc[i] == 1.5f * (float)i);
        assert_true(fd[i] == 2.5f * (float)i);
    }
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(exec),
                     CUDA_SUCCESS);
    GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g);
}

int main(int argc, char **argv)
{
    if (shim_harness_open() != 0)
        return 1;
    if (argc > 1 && strcmp(argv[1], "cond-stats") == 0)
        return cond_stats_child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_inspected_at_instantiation),
        cmocka_unit_test(test_graph_child_nodes),
        cmocka_unit_test(test_graph_conditional_nodes),
        cmocka_unit_test(test_graph_conditional_stats),
        cmocka_unit_test(test_graph_destroy_forgets_conditionals),
        cmocka_unit_test(test_graph_destroy_node_forgets_conditional),
        cmocka_unit_test(test_graph_destroy_forgets_nested_conditionals),
        cmocka_unit_test(test_graph_with_conditionals_not_copied),
        cmocka_unit_test(test_captured_graph_holds_program_work_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
