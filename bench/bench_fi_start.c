/*
 * What libfabric's start-up costs a process, piece by piece (docs/net.md,
 * "Transports"; docs/bench/net.md, "net: libfabric start-up"). Linked
 * without libfabric: it opens libfabric's dependencies one at a time, so
 * that each one's constructors are timed alone, then libfabric, then times
 * two fi_getinfo calls for one provider. Wall and process CPU time per step,
 * one JSON line.
 *   bench_fi_start [PROVIDER]   (default shm)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>

static double ms(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

typedef int (*getinfo_fn)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                          struct fi_info **);
typedef struct fi_info *(*dupinfo_fn)(const struct fi_info *);

int main(int argc, char **argv)
{
    const char *prov = argc > 1 ? argv[1] : "shm";
    /* libfabric.so.1's NEEDED entries on Debian 12, leaves first; one that
     * is missing here is skipped */
    static const char *const libs[] = {
        "libnl-3.so.200",         "libnl-route-3.so.200", "libibverbs.so.1",
        "librdmacm.so.1",         "libefa.so.1",          "libinfinipath.so.4",
        "libpsm_infinipath.so.1", "libpsm2.so.2",         "libfabric.so.1"};
    printf("{\"bench\":\"fi_start\",\"provider\":\"%s\"", prov);
    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        double w = ms(CLOCK_MONOTONIC), c = ms(CLOCK_PROCESS_CPUTIME_ID);
        void *h = dlopen(libs[i], RTLD_NOW | RTLD_GLOBAL);
        if (!h && i + 1 == sizeof(libs) / sizeof(libs[0])) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        if (h)
            printf(",\"%s\":{\"wall_ms\":%.1f,\"cpu_ms\":%.1f}", libs[i], ms(CLOCK_MONOTONIC) - w,
                   ms(CLOCK_PROCESS_CPUTIME_ID) - c);
    }
    getinfo_fn getinfo = (getinfo_fn)dlsym(RTLD_DEFAULT, "fi_getinfo");
    dupinfo_fn dupinfo = (dupinfo_fn)dlsym(RTLD_DEFAULT, "fi_dupinfo");
    if (!getinfo || !dupinfo)
        return 1;
    for (int k = 1; k <= 2; k++) {
        struct fi_info *hints = dupinfo(NULL), *info = NULL;
        if (!hints)
            return 1;
        hints->ep_attr->type = FI_EP_RDM;
        hints->caps = FI_RMA | FI_MSG;
        hints->fabric_attr->prov_name = strdup(prov);
        double w = ms(CLOCK_MONOTONIC), c = ms(CLOCK_PROCESS_CPUTIME_ID);
        int ret = getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
        printf(",\"fi_getinfo_%d\":{\"wall_ms\":%.1f,\"cpu_ms\":%.1f,\"ret\":%d}", k,
               ms(CLOCK_MONOTONIC) - w, ms(CLOCK_PROCESS_CPUTIME_ID) - c, ret);
    }
    const char *fp = getenv("FI_PROVIDER");
    printf(",\"FI_PROVIDER\":\"%s\"}\n", fp ? fp : "");
    return 0;
}
