/*
 * The driver double's execution side: kernels (host functions run at launch),
 * parameter layouts, and graphs of kernel, child-graph and conditional nodes.
 * Streams and events: fake_cuda_stream.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda_internal.h"

#define FAKE_MAX_PARAMS 64
#define FAKE_MAX_NODES  64

typedef struct fake_kernel {
    char name[32];
    unsigned n;
    size_t size[FAKE_MAX_PARAMS];
    size_t offset[FAKE_MAX_PARAMS];
    fake_kernel_fn fn;
} fake_kernel_t;

#define FAKE_MAX_KERNELS 64

static fake_kernel_t
    fake_kernels[FAKE_MAX_KERNELS]; /* static: kernels live as long as the driver */
static _Atomic size_t fake_nkernels;

/* Writes kernel k's name, layout (8-byte arguments aligned to 8, smaller
 * ones to their size) and body. */
static void fake_define_kernel(fake_kernel_t *k, const char *name, unsigned nparams,
                               const size_t *sizes, fake_kernel_fn fn)
{
    memset(k->name, 0, sizeof(k->name));
    strncpy(k->name, name, sizeof(k->name) - 1);
    k->n = nparams;
    k->fn = fn;
    size_t off = 0;
    for (unsigned i = 0; i < nparams; i++) {
        size_t align = sizes[i] >= 8 ? 8 : sizes[i];
        off = (off + align - 1) / align * align;
        k->size[i] = sizes[i];
        k->offset[i] = off;
        off += sizes[i];
    }
}

FAKE_API void *fake_register_kernel(const char *name, unsigned nparams, const size_t *sizes,
                                    fake_kernel_fn fn)
{
    size_t slot = atomic_fetch_add(&fake_nkernels, 1);
    if (nparams > FAKE_MAX_PARAMS || slot >= FAKE_MAX_KERNELS)
        return NULL;
    fake_kernel_t *k = &fake_kernels[slot];
    fake_define_kernel(k, name, nparams, sizes, fn);
    return k;
}

FAKE_API void fake_reload_kernel(void *f, const char *name, unsigned nparams, const size_t *sizes,
                                 fake_kernel_fn fn)
{
    if (f && nparams <= FAKE_MAX_PARAMS)
        fake_define_kernel((fake_kernel_t *)f, name, nparams, sizes, fn);
}

/* Modules and libraries are not modelled: unloading one is logged. */
CUresult fk_cuModuleUnload(CUmodule m)
{
    REC(U(m), 0, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuLibraryUnload(CUlibrary l)
{
    REC(U(l), 0, 0, 0);
    return CUDA_SUCCESS;
}

static CUresult fake_param_info(const fake_kernel_t *k, size_t i, size_t *off, size_t *size)
{
    if (!k || i >= k->n)
        return CUDA_ERROR_INVALID_VALUE;
    *off = k->offset[i];
    *size = k->size[i];
    return CUDA_SUCCESS;
}

CUresult fk_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    return fake_param_info((const fake_kernel_t *)f, i, off, size);
}

CUresult fk_cuKernelGetParamInfo(CUkernel k, size_t i, size_t *off, size_t *size)
{
    return fake_param_info((const fake_kernel_t *)k, i, off, size);
}

/* Runs kernel k with either argument form, as the driver would. */
static CUresult fake_run(const fake_kernel_t *k, const unsigned grid[3], const unsigned block[3],
                         void **params, void **extra)
{
    if (!k)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!fake_current())
        return CUDA_ERROR_INVALID_CONTEXT; /* none current on the launching thread */
    void *argv[FAKE_MAX_PARAMS];
    if (!params && extra) {
        unsigned char *buf = NULL;
        size_t size = 0;
        for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                size = *(size_t *)extra[i + 1];
        }
        for (unsigned i = 0; i < k->n; i++) {
            if (!buf || k->offset[i] + k->size[i] > size)
                return CUDA_ERROR_INVALID_VALUE;
            argv[i] = buf + k->offset[i];
        }
        params = argv;
    }
    if (k->n && !params)
        return CUDA_ERROR_INVALID_VALUE;
    if (k->fn)
        k->fn(params, grid, block);
    return CUDA_SUCCESS;
}

#define FAKE_LAUNCH(name)                                                                          \
    CUresult fk_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,           \
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,        \
                       void **extra)                                                               \
    {                                                                                              \
        (void)shmem;                                                                               \
        REC(U(f), U(s), gx, bx);                                                                   \
        const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};                            \
        return fake_run((const fake_kernel_t *)f, grid, block, params, extra);                     \
    }
FAKE_LAUNCH(cuLaunchKernel)
FAKE_LAUNCH(cuLaunchKernel_ptsz)
#undef FAKE_LAUNCH

#define FAKE_LAUNCH_COOP(name)                                                                     \
    CUresult fk_##name(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,           \
                       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params)        \
    {                                                                                              \
        (void)shmem;                                                                               \
        REC(U(f), U(s), gx, bx);                                                                   \
        const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};                            \
        return fake_run((const fake_kernel_t *)f, grid, block, params, NULL);                      \
    }
FAKE_LAUNCH_COOP(cuLaunchCooperativeKernel)
FAKE_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)
#undef FAKE_LAUNCH_COOP

#define FAKE_LAUNCH_EX(name)                                                                       \
    CUresult fk_##name(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)         \
    {                                                                                              \
        if (!c)                                                                                    \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        REC(U(f), U(c->hStream), c->gridDimX, c->blockDimX);                                       \
        const unsigned grid[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};                          \
        const unsigned block[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};                      \
        return fake_run((const fake_kernel_t *)f, grid, block, params, extra);                     \
    }
FAKE_LAUNCH_EX(cuLaunchKernelEx)
FAKE_LAUNCH_EX(cuLaunchKernelEx_ptsz)
#undef FAKE_LAUNCH_EX

/*
 * --- graphs: a list of nodes, kernel nodes with their argument values copied.
 *
 * Handles are reused the way a driver may reuse them, deterministically: a
 * destroyed graph goes on a free list that cuGraphCreate and new conditional
 * bodies take from first (last destroyed first), and a destroyed node's
 * slot is the next one its graph hands out. A dead graph or node is refused
 * (CUDA_ERROR_INVALID_VALUE) until it is handed out again, and its memory is
 * never freed, so a caller holding a stale handle gets an error or, after
 * reuse, the new graph: tests see which through the call log.
 */

#define FAKE_MAX_BODIES 8 /* bodies of one conditional node */

typedef struct fake_graph fake_graph_t;

typedef struct fake_node {
    bool live;
    CUgraphNodeType type; /* KERNEL, GRAPH (a child graph) or CONDITIONAL */
    CUDA_KERNEL_NODE_PARAMS p;
    void *argv[FAKE_MAX_PARAMS];
    unsigned char args[1024];
    fake_graph_t *child; /* GRAPH: the embedded graph (kept by the test, not cloned) */
    /* CONDITIONAL: the body graphs, owned by the node; phGraph_out points here */
    CUgraph bodies[FAKE_MAX_BODIES];
    unsigned nbodies;
} fake_node_t;

struct fake_graph {
    bool live;
    fake_graph_t *next_free;
    fake_node_t nodes[FAKE_MAX_NODES];
    size_t n; /* slots handed out so far, live or not */
};

typedef struct fake_exec {
    fake_graph_t *g;
} fake_exec_t;

static pthread_mutex_t fake_graph_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_graph_t *fake_graph_free; /* under fake_graph_lock */
static _Atomic uint64_t fake_next_cond_handle = 1;

static fake_graph_t *fake_graph_new(void)
{
    pthread_mutex_lock(&fake_graph_lock);
    fake_graph_t *g = fake_graph_free;
    if (g)
        fake_graph_free = g->next_free;
    pthread_mutex_unlock(&fake_graph_lock);
    if (!g && !(g = malloc(sizeof(*g))))
        return NULL;
    memset(g, 0, sizeof(*g));
    g->live = true;
    return g;
}

static void fake_graph_release(fake_graph_t *g);

/* Kills node and the bodies it owns. */
static void fake_node_release(fake_node_t *nd)
{
    if (nd->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        for (unsigned b = 0; b < nd->nbodies; b++)
            fake_graph_release((fake_graph_t *)nd->bodies[b]);
    nd->live = false;
}

/* Kills g with its nodes (not the child graphs: tests keep and destroy those). */
static void fake_graph_release(fake_graph_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->nodes[i].live)
            fake_node_release(&g->nodes[i]);
    g->live = false;
    pthread_mutex_lock(&fake_graph_lock);
    g->next_free = fake_graph_free;
    fake_graph_free = g;
    pthread_mutex_unlock(&fake_graph_lock);
}

static fake_graph_t *fake_graph_of(CUgraph g)
{
    fake_graph_t *fg = (fake_graph_t *)g;
    return fg && fg->live ? fg : NULL;
}

static fake_node_t *fake_node_of(CUgraphNode node)
{
    fake_node_t *nd = (fake_node_t *)node;
    return nd && nd->live ? nd : NULL;
}

/* A free node slot of g, cleared (not live until the caller says so), or NULL. */
static fake_node_t *fake_node_slot(fake_graph_t *g)
{
    size_t i = 0;
    while (i < g->n && g->nodes[i].live)
        i++;
    if (i == FAKE_MAX_NODES)
        return NULL;
    if (i == g->n)
        g->n++;
    memset(&g->nodes[i], 0, sizeof(g->nodes[i]));
    return &g->nodes[i];
}

CUresult fk_cuGraphCreate(CUgraph *g, unsigned flags)
{
    (void)flags;
    fake_graph_t *fg = fake_graph_new();
    if (!fg)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *g = (CUgraph)fg;
    REC(U(fg), 0, 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphDestroy(CUgraph g)
{
    REC(U(g), 0, 0, 0);
    fake_graph_t *fg = fake_graph_of(g);
    if (!fg)
        return CUDA_ERROR_INVALID_VALUE;
    fake_graph_release(fg);
    return CUDA_SUCCESS;
}

static CUresult fake_add_kernel(CUgraphNode *node, fake_graph_t *fg,
                                const CUDA_KERNEL_NODE_PARAMS *p)
{
    const fake_kernel_t *k = (const fake_kernel_t *)p->func;
    if (!fg || !k || !p->kernelParams)
        return CUDA_ERROR_INVALID_VALUE;
    fake_node_t *nd = fake_node_slot(fg);
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    nd->type = CU_GRAPH_NODE_TYPE_KERNEL;
    nd->p = *p;
    for (unsigned i = 0; i < k->n; i++) {
        if (k->offset[i] + k->size[i] > sizeof(nd->args))
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(nd->args + k->offset[i], p->kernelParams[i], k->size[i]);
        nd->argv[i] = nd->args + k->offset[i];
    }
    nd->p.kernelParams = nd->argv;
    nd->p.extra = NULL;
    nd->live = true;
    *node = (CUgraphNode)nd;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphAddKernelNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                    size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    (void)deps;
    (void)ndeps;
    CUresult r = fake_add_kernel(node, fake_graph_of(g), p);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), 0, 0);
    return r;
}

/* A conditional node: its bodies are new empty graphs, handed out in
 * p->conditional.phGraph_out, which points into the node. */
static CUresult fake_add_conditional(CUgraphNode *node, fake_graph_t *fg,
                                     CUDA_CONDITIONAL_NODE_PARAMS *c)
{
    unsigned n = c->size;
    bool size_ok = (c->type == CU_GRAPH_COND_TYPE_IF && (n == 1 || n == 2)) ||
                   (c->type == CU_GRAPH_COND_TYPE_WHILE && n == 1) ||
                   (c->type == CU_GRAPH_COND_TYPE_SWITCH && n >= 1);
    if (!fg || !c->handle || !size_ok || n > FAKE_MAX_BODIES)
        return CUDA_ERROR_INVALID_VALUE;
    fake_node_t *nd = fake_node_slot(fg);
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    nd->type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    for (unsigned b = 0; b < n; b++) {
        fake_graph_t *body = fake_graph_new();
        if (!body) {
            nd->nbodies = b;
            fake_node_release(nd);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        nd->bodies[b] = (CUgraph)body;
    }
    nd->nbodies = n;
    nd->live = true;
    c->phGraph_out = nd->bodies;
    *node = (CUgraphNode)nd;
    return CUDA_SUCCESS;
}

/* cuGraphAddNode: kernel and conditional nodes. */
static CUresult fake_add_node(CUgraphNode *node, CUgraph g, CUgraphNodeParams *p)
{
    fake_graph_t *fg = fake_graph_of(g);
    if (!node || !fg || !p)
        return CUDA_ERROR_INVALID_VALUE;
    if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
        return fake_add_conditional(node, fg, &p->conditional);
    if (p->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_NOT_SUPPORTED;
    const CUDA_KERNEL_NODE_PARAMS_v3 *k = &p->kernel;
    const CUDA_KERNEL_NODE_PARAMS kp = {.func = k->func,
                                        .gridDimX = k->gridDimX,
                                        .gridDimY = k->gridDimY,
                                        .gridDimZ = k->gridDimZ,
                                        .blockDimX = k->blockDimX,
                                        .blockDimY = k->blockDimY,
                                        .blockDimZ = k->blockDimZ,
                                        .sharedMemBytes = k->sharedMemBytes,
                                        .kernelParams = k->kernelParams,
                                        .extra = k->extra,
                                        .kern = k->kern,
                                        .ctx = k->ctx};
    return fake_add_kernel(node, fg, &kp);
}

/* Logged as (node, graph, type, number of bodies). */
CUresult fk_cuGraphAddNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                           CUgraphNodeParams *p)
{
    (void)deps;
    (void)ndeps;
    CUresult r = fake_add_node(node, g, p);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), (uint64_t)p->type,
            p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? p->conditional.size : 0);
    return r;
}

CUresult fk_cuGraphAddNode_v2(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                              const CUgraphEdgeData *edges, size_t ndeps, CUgraphNodeParams *p)
{
    (void)deps;
    (void)edges;
    (void)ndeps;
    CUresult r = fake_add_node(node, g, p);
    if (r == CUDA_SUCCESS)
        REC(U(*node), U(g), (uint64_t)p->type,
            p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? p->conditional.size : 0);
    return r;
}

/* Handles are counters; the double never evaluates a condition. */
CUresult fk_cuGraphConditionalHandleCreate(CUgraphConditionalHandle *h, CUgraph g, CUcontext ctx,
                                           unsigned def, unsigned flags)
{
    (void)ctx;
    (void)def;
    (void)flags;
    if (!h || !fake_graph_of(g))
        return CUDA_ERROR_INVALID_VALUE;
    *h = atomic_fetch_add(&fake_next_cond_handle, 1);
    REC(*h, U(g), 0, 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphDestroyNode(CUgraphNode node)
{
    REC(U(node), 0, 0, 0);
    fake_node_t *nd = fake_node_of(node);
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    fake_node_release(nd);
    return CUDA_SUCCESS;
}

/* Logged as (graph, 0, 0, 0), refused for a dead graph (a stale handle). */
CUresult fk_cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    REC(U(g), 0, 0, 0);
    fake_graph_t *fg = fake_graph_of(g);
    if (!fg || !n)
        return CUDA_ERROR_INVALID_VALUE;
    size_t k = 0;
    for (size_t i = 0; i < fg->n; i++) {
        if (!fg->nodes[i].live)
            continue;
        if (nodes && k < *n)
            nodes[k] = (CUgraphNode)&fg->nodes[i];
        k++;
    }
    *n = k;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    fake_node_t *nd = fake_node_of(node);
    if (!nd || !type)
        return CUDA_ERROR_INVALID_VALUE;
    *type = nd->type;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
    REC(U(node), 0, 0, 0);
    fake_node_t *nd = fake_node_of(node);
    if (!nd || nd->type != CU_GRAPH_NODE_TYPE_KERNEL)
        return CUDA_ERROR_INVALID_VALUE;
    *p = nd->p;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphAddChildGraphNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps,
                                     size_t ndeps, CUgraph child)
{
    (void)deps;
    (void)ndeps;
    fake_graph_t *fg = fake_graph_of(g);
    fake_node_t *nd = fg && child ? fake_node_slot(fg) : NULL;
    if (!nd)
        return CUDA_ERROR_INVALID_VALUE;
    nd->type = CU_GRAPH_NODE_TYPE_GRAPH;
    nd->child = (fake_graph_t *)child;
    nd->live = true;
    *node = (CUgraphNode)nd;
    REC(U(nd), U(g), U(child), 0);
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph *graph)
{
    REC(U(node), 0, 0, 0);
    fake_node_t *nd = fake_node_of(node);
    if (!nd || nd->type != CU_GRAPH_NODE_TYPE_GRAPH)
        return CUDA_ERROR_INVALID_VALUE;
    *graph = (CUgraph)nd->child;
    return CUDA_SUCCESS;
}

CUresult fk_cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
    (void)flags;
    if (!fake_graph_of(g))
        return CUDA_ERROR_INVALID_VALUE;
    fake_exec_t *e = calloc(1, sizeof(*e));
    if (!e)
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->g = (fake_graph_t *)g;
    *exec = (CUgraphExec)e;
    REC(U(e), U(g), 0, 0);
    return CUDA_SUCCESS;
}

/* Runs the live nodes in the order of their slots (the tests add them in
 * dependency order), child graphs in place. Conditional nodes are passed
 * over: the double has no device-side condition to evaluate. */
static CUresult fake_graph_nodes_run(const fake_graph_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        const fake_node_t *nd = &g->nodes[i];
        if (!nd->live || nd->type == CU_GRAPH_NODE_TYPE_CONDITIONAL)
            continue;
        if (nd->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            CUresult r = fake_graph_nodes_run(nd->child);
            if (r != CUDA_SUCCESS)
                return r;
            continue;
        }
        const CUDA_KERNEL_NODE_PARAMS *p = &nd->p;
        const unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
        const unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
        CUresult r = fake_run((const fake_kernel_t *)p->func, grid, block, p->kernelParams, NULL);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_graph_run(CUgraphExec exec)
{
    fake_exec_t *e = (fake_exec_t *)exec;
    return e ? fake_graph_nodes_run(e->g) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult fk_cuGraphLaunch(CUgraphExec exec, CUstream s)
{
    REC(U(exec), U(s), 0, 0);
    return fake_graph_run(exec);
}

CUresult fk_cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s)
{
    REC(U(exec), U(s), 0, 0);
    return fake_graph_run(exec);
}

CUresult fk_cuGraphExecDestroy(CUgraphExec exec)
{
    REC(U(exec), 0, 0, 0);
    free(exec);
    return CUDA_SUCCESS;
}

CUresult fk_cuFuncGetName(const char **name, CUfunction f)
{
    REC(U(f), 0, 0, 0);
    if (!name || !f)
        return CUDA_ERROR_INVALID_VALUE;
    *name = ((const fake_kernel_t *)f)->name;
    return CUDA_SUCCESS;
}

CUresult fk_cuCtxSynchronize(void)
{
    REC0();
    if (fake_unsafe_refused())
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return CUDA_SUCCESS; /* kernels run synchronously at launch */
}

/* --- fake CUPTI: ranges host kernels declared -------------------------------- */

#define FAKE_MAX_TOUCHED 256

static pthread_mutex_t fake_touch_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t fake_touch_addr[FAKE_MAX_TOUCHED], fake_touch_len[FAKE_MAX_TOUCHED];
static uint8_t fake_touch_mode[FAKE_MAX_TOUCHED];
static size_t fake_ntouched;

FAKE_API void fake_touch(const void *addr, uint64_t len, int mode)
{
    pthread_mutex_lock(&fake_touch_lock);
    if (fake_ntouched < FAKE_MAX_TOUCHED) {
        fake_touch_addr[fake_ntouched] = U(addr);
        fake_touch_len[fake_ntouched] = len;
        fake_touch_mode[fake_ntouched] = (uint8_t)mode;
        fake_ntouched++;
    }
    pthread_mutex_unlock(&fake_touch_lock);
}

static uint64_t fake_kernel_ns; /* under fake_touch_lock */

FAKE_API void fake_spend(uint64_t ns)
{
    pthread_mutex_lock(&fake_touch_lock);
    fake_kernel_ns += ns;
    pthread_mutex_unlock(&fake_touch_lock);
}

FAKE_API uint64_t gmux_test_cupti_kernel_ns(void)
{
    pthread_mutex_lock(&fake_touch_lock);
    uint64_t ns = fake_kernel_ns;
    fake_kernel_ns = 0;
    pthread_mutex_unlock(&fake_touch_lock);
    return ns;
}

FAKE_API size_t gmux_test_cupti_touched(uint64_t *addr, uint64_t *len, uint8_t *mode, size_t max)
{
    pthread_mutex_lock(&fake_touch_lock);
    size_t n = fake_ntouched < max ? fake_ntouched : max;
    for (size_t i = 0; i < n; i++) {
        addr[i] = fake_touch_addr[i];
        len[i] = fake_touch_len[i];
        mode[i] = fake_touch_mode[i];
    }
    fake_ntouched = 0;
    pthread_mutex_unlock(&fake_touch_lock);
    return n;
}
