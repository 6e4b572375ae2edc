/* The shared part of the libgmux.so tests against the driver double (shim_harness.h). */
#include "shim_harness.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

void *drv;
PFN_cuGetProcAddress_v12000 gpa;
fake_reset_fn f_reset;
fake_log_count_fn f_count;
fake_log_get_fn f_get;
fake_register_kernel_fn f_register;
fake_entry_fn f_entry;
int mode_proactive, mode_redirect, mode_prefetch;

int shim_harness_open(void)
{
    const char *mode = getenv("GMUX_POLICY");
    mode = mode ? mode : "proactive";
    mode_proactive = strcmp(mode, "proactive") == 0;
    const char *managed = getenv("GMUX_SHIM_MANAGED");
    mode_redirect = strcmp(mode, "off") != 0 && !(managed && strcmp(managed, "0") == 0);
    /* only managed memory is prefetched */
    mode_prefetch = mode_proactive && mode_redirect;
    drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv) {
        fprintf(stderr, "test double libcuda.so.1 not found: %s\n", dlerror());
        return -1;
    }
    gpa = (PFN_cuGetProcAddress_v12000)dlsym(drv, "cuGetProcAddress_v2");
    f_reset = (fake_reset_fn)dlsym(drv, "fake_reset");
    f_count = (fake_log_count_fn)dlsym(drv, "fake_log_count");
    f_get = (fake_log_get_fn)dlsym(drv, "fake_log_get");
    f_register = (fake_register_kernel_fn)dlsym(drv, "fake_register_kernel");
    f_entry = (fake_entry_fn)dlsym(drv, "fake_entry");
    if (!gpa || !f_reset || !f_count || !f_get || !f_register || !f_entry) {
        fprintf(stderr, "libcuda.so.1 is not the test double\n");
        return -1;
    }
    return 0;
}

/* The entry point cudart would get for (base, version, flags). */
void *get(const char *base, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult q;
    assert_int_equal(gpa(base, &p, version, flags, &q), CUDA_SUCCESS);
    return p;
}

/* Index of the first call of fn at or after from, or -1. */
long find_call(const char *fn, size_t from)
{
    for (size_t i = from; i < f_count(); i++)
        if (strcmp(f_get(i)->fn, fn) == 0)
            return (long)i;
    return -1;
}

size_t count_calls(const char *fn)
{
    size_t n = 0;
    for (long i = find_call(fn, 0); i >= 0; i = find_call(fn, (size_t)i + 1))
        n++;
    return n;
}

/* Prefetch log entries of either form (a batch logs one entry per range). */
size_t count_prefetches(void)
{
    return count_calls("cuMemPrefetchAsync_v2") + count_calls("cuMemPrefetchBatchAsync");
}

/* The form the shim must use for n ranges: one batch where the driver takes
 * batches (the double does unless FAKE_CUDA_NO_BATCH=1), single calls else. */
const char *prefetch_form(size_t n)
{
    const char *no = getenv("FAKE_CUDA_NO_BATCH");
    bool batch = n > 1 && !(no && strcmp(no, "1") == 0);
    return batch ? "cuMemPrefetchBatchAsync" : "cuMemPrefetchAsync_v2";
}

CUdeviceptr alloc(size_t size)
{
    CUdeviceptr p = 0;
    assert_int_equal(GET(PFN_cuMemAlloc_v3020, "cuMemAlloc", 12000)(&p, size), CUDA_SUCCESS);
    return p;
}

CUstream new_stream(void)
{
    return new_stream_flags(CU_STREAM_DEFAULT);
}

CUstream new_stream_flags(unsigned flags)
{
    CUstream s = NULL;
    assert_int_equal(GET(PFN_cuStreamCreate_v2000, "cuStreamCreate", 12000)(&s, flags),
                     CUDA_SUCCESS);
    return s;
}

int ordered(long before, long after)
{
    fake_ordered_fn f = (fake_ordered_fn)dlsym(drv, "fake_ordered");
    assert_non_null(f);
    return f((size_t)before, (size_t)after);
}

static void k_vadd(void **args, const unsigned grid[3], const unsigned block[3])
{
    (void)grid;
    (void)block;
    const float *a = *(float **)args[0], *b = *(float **)args[1];
    float *c = *(float **)args[2];
    int n = *(int *)args[3];
    for (int i = 0; i < n; i++)
        c[i] = a[i] + b[i];
}

CUfunction vadd_fn(void)
{
    static CUfunction f;
    static const size_t sizes[] = {8, 8, 8, 4};
    if (!f)
        f = f_register("vadd", 4, sizes, k_vadd);
    return f;
}

CUDA_MEMCPY3D copy3d(CUmemorytype dt, uintptr_t dst, size_t dpitch, CUmemorytype st, uintptr_t src,
                     size_t spitch, size_t w, size_t h, size_t d)
{
    CUDA_MEMCPY3D c = {.dstMemoryType = dt,
                       .dstPitch = dpitch,
                       .dstHeight = h,
                       .srcMemoryType = st,
                       .srcPitch = spitch,
                       .srcHeight = h,
                       .WidthInBytes = w,
                       .Height = h,
                       .Depth = d};
    if (dt == CU_MEMORYTYPE_HOST)
        c.dstHost = (void *)dst;
    else
        c.dstDevice = dst;
    if (st == CU_MEMORYTYPE_HOST)
        c.srcHost = (const void *)src;
    else
        c.srcDevice = src;
    return c;
}

void launch_vadd(CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n)
{
    void *args[] = {&a, &b, &c, &n};
    assert_int_equal(GET(PFN_cuLaunchKernel_v4000, "cuLaunchKernel",
                         12000)(vadd_fn(), 1, 1, 1, (unsigned)n, 1, 1, 0, s, args, NULL),
                     CUDA_SUCCESS);
}

/* Asserts the prefetch/record/wait/launch sequence for one launch of regions[] on stream s. */
void assert_prefetched_before(const char *launch_fn, CUstream s, const CUdeviceptr *bases,
                              const size_t *sizes, size_t n)
{
    long launch = find_call(launch_fn, 0);
    assert_true(launch >= 0);
    if (!mode_prefetch) {
        assert_int_equal(count_prefetches(), 0);
        assert_int_equal(count_calls("cuStreamWaitEvent"), 0);
        return;
    }
    const char *form = prefetch_form(n);
    assert_int_equal(count_calls(form), n);
    assert_int_equal(count_prefetches(), n);
    uint64_t mig = 0;
    long last_prefetch = -1;
    for (size_t k = 0; k < n; k++) {
        bool seen = false;
        for (long i = find_call(form, 0); i >= 0; i = find_call(form, (size_t)i + 1)) {
            const fake_call_t *c = f_get((size_t)i);
            if (c->a[0] == bases[k]) {
                seen = true;
                assert_int_equal(c->a[1], sizes[k]);
                assert_int_equal(c->a[2] >> 32, CU_MEM_LOCATION_TYPE_DEVICE);
                assert_true(c->a[3] != (uint64_t)(uintptr_t)s);
                mig = mig ? mig : c->a[3];
                assert_int_equal(c->a[3], mig); /* all on the one migration stream */
                if (i > last_prefetch)
                    last_prefetch = i;
            }
        }
        assert_true(seen);
    }
    long rec = find_call("cuEventRecord", (size_t)last_prefetch);
    assert_true(rec > last_prefetch);
    assert_int_equal(f_get((size_t)rec)->a[1], mig);
    long wait = find_call("cuStreamWaitEvent", (size_t)rec);
    assert_true(wait > rec);
    assert_true(wait < launch);
    assert_int_equal(f_get((size_t)wait)->a[0],
                     (uint64_t)(uintptr_t)(s ? s : CU_STREAM_PER_THREAD));
    assert_int_equal(f_get((size_t)wait)->a[1], f_get((size_t)rec)->a[0]);
}

void assert_prefetched_only(const CUdeviceptr *mine, size_t n, long after, long before)
{
    if (!mode_prefetch) {
        assert_int_equal(count_prefetches(), 0);
        return;
    }
    assert_int_equal(count_prefetches(), n);
    long last = -1;
    for (size_t i = 0; i < f_count(); i++) {
        const fake_call_t *c = f_get(i);
        if (strcmp(c->fn, "cuMemPrefetchAsync_v2") != 0 &&
            strcmp(c->fn, "cuMemPrefetchBatchAsync") != 0)
            continue;
        bool one_of = false;
        for (size_t k = 0; k < n; k++)
            one_of = one_of || c->a[0] == mine[k];
        assert_true(one_of);
        assert_true((long)i > after && (long)i < before);
        last = (long)i;
    }
    long wait = find_call("cuStreamWaitEvent", (size_t)last);
    assert_true(wait > last && wait < before);
    assert_int_equal(f_get((size_t)wait)->a[0], (uint64_t)(uintptr_t)CU_STREAM_PER_THREAD);
}

void assert_graph_vadds(void *g, const CUdeviceptr *first, size_t n)
{
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    assert_non_null(nodes);
    fake_node_info_t info[8];
    assert_int_equal(nodes(g, info, 8), n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(info[i].kind, FAKE_NODE_KERNEL);
        assert_ptr_equal(info[i].func, vadd_fn());
        assert_int_equal(info[i].a0, first[i]);
    }
}

CUgraphExec graph_run(CUgraph g, CUstream s, size_t *mark_p)
{
    CUgraphExec e = NULL;
    assert_int_equal(
        GET(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags", 12000)(&e, g, 0),
        CUDA_SUCCESS);
    if (mark_p)
        *mark_p = f_count();
    assert_int_equal(GET(PFN_cuGraphLaunch_v10000, "cuGraphLaunch", 12000)(e, s), CUDA_SUCCESS);
    return e;
}

void graph_done(CUgraphExec e, CUgraph g)
{
    assert_int_equal(GET(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy", 12000)(e),
                     CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(g), CUDA_SUCCESS);
}

size_t shim_prefetches_since(size_t from, CUdeviceptr base, size_t *of_p, long *at_p)
{
    size_t n = 0, of = 0;
    for (size_t i = from; i < f_count(); i++) {
        const fake_call_t *c = f_get(i);
        if (strcmp(c->fn, "cuMemPrefetchAsync_v2") != 0 &&
            strcmp(c->fn, "cuMemPrefetchBatchAsync") != 0)
            continue;
        assert_int_equal(c->a[2] >> 32, CU_MEM_LOCATION_TYPE_DEVICE);
        n++;
        if (c->a[0] == base) {
            of++;
            *at_p = (long)i;
        }
    }
    *of_p = of;
    return n;
}

CUdeviceptr managed_region(size_t size)
{
    if (mode_redirect)
        return alloc(size);
    CUdeviceptr p = 0;
    assert_int_equal(GET(PFN_cuMemAllocManaged_v6000, "cuMemAllocManaged",
                         12000)(&p, size, CU_MEM_ATTACH_GLOBAL),
                     CUDA_SUCCESS);
    return p;
}

void capture_begin(CUstream s)
{
    assert_int_equal(GET(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture",
                         12000)(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
}

CUresult capture_end(CUstream s, CUgraph *g)
{
    return GET(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture", 12000)(s, g);
}

void capture_join(CUstream s, CUstream from)
{
    CUevent e;
    assert_int_equal(GET(PFN_cuEventCreate_v2000, "cuEventCreate", 12000)(&e, 0), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuEventRecord_v2000, "cuEventRecord", 12000)(e, from), CUDA_SUCCESS);
    assert_int_equal(GET(PFN_cuStreamWaitEvent_v3020, "cuStreamWaitEvent", 12000)(s, e, 0),
                     CUDA_SUCCESS);
}

size_t graph_nodes_of(CUgraph g, int kind)
{
    fake_graph_nodes_fn nodes = (fake_graph_nodes_fn)dlsym(drv, "fake_graph_nodes");
    assert_non_null(nodes);
    fake_node_info_t v[32];
    size_t n = nodes(g, v, 32), k = 0;
    assert_true(n <= 32);
    for (size_t i = 0; i < n; i++)
        k += v[i].kind == kind;
    return k;
}

size_t shim_prefetches_of(size_t from, CUdeviceptr base)
{
    size_t of = 0;
    long at = -1;
    (void)shim_prefetches_since(from, base, &of, &at);
    return of;
}

size_t unrelated_destroy_walks(void)
{
    CUgraph other = NULL;
    assert_int_equal(GET(PFN_cuGraphCreate_v10000, "cuGraphCreate", 12000)(&other, 0),
                     CUDA_SUCCESS);
    size_t walks = count_calls("cuGraphGetNodes");
    assert_int_equal(GET(PFN_cuGraphDestroy_v10000, "cuGraphDestroy", 12000)(other), CUDA_SUCCESS);
    return count_calls("cuGraphGetNodes") - walks;
}

CUgraphNode graph_node_of_type(CUgraph g, CUgraphNodeType type)
{
    CUgraphNode nodes[16], found = NULL;
    size_t n = 16;
    assert_int_equal(GET(PFN_cuGraphGetNodes_v10000, "cuGraphGetNodes", 12000)(g, nodes, &n),
                     CUDA_SUCCESS);
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        assert_int_equal(
            GET(PFN_cuGraphNodeGetType_v10000, "cuGraphNodeGetType", 12000)(nodes[i], &t),
            CUDA_SUCCESS);
        if (t == type) {
            assert_null(found);
            found = nodes[i];
        }
    }
    assert_non_null(found);
    return found;
}
