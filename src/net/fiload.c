/* net_fi: see fiload.h. */
#include "net/fiload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "common/log.h"

#define NET_FI_LIBRARY "libfabric.so.1"

/* Every function bound, with the version node libfabric 1.17's headers
 * bind a direct call to (objdump -T libfabric.so.1: the default, "@@"). */
#define NET_FI_SYMBOLS(X)                                                                          \
    X(getinfo, "FABRIC_1.3", int,                                                                  \
      (uint32_t, const char *, const char *, uint64_t, const struct fi_info *, struct fi_info **)) \
    X(dupinfo, "FABRIC_1.3", struct fi_info *, (const struct fi_info *))                           \
    X(freeinfo, "FABRIC_1.3", void, (struct fi_info *))                                            \
    X(fabric, "FABRIC_1.1", int, (struct fi_fabric_attr *, struct fid_fabric **, void *))          \
    X(strerror, "FABRIC_1.0", const char *, (int))                                                 \
    X(version, "FABRIC_1.0", uint32_t, (void))

#define NET_FI_FIELD_(name, ver, ret, args) ret(*name) args;
static struct {
    NET_FI_SYMBOLS(NET_FI_FIELD_)
} fi;
#undef NET_FI_FIELD_

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static gmux_status_t load_status = GMUX_ERR_UNSUPPORTED;

static void load(void)
{
    /* RTLD_LOCAL: nothing of libfabric's joins the program's namespace
     * through us (a program that links it itself gets the same copy) */
    void *lib = dlopen(NET_FI_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        COM_ERROR(NET, "loading libfabric: %s", dlerror());
        return;
    }
#define NET_FI_BIND_(name, ver, ret, args)                                                         \
    if (!(*(void **)&fi.name = dlvsym(lib, "fi_" #name, ver))) {                                   \
        COM_ERROR(NET, "libfabric lacks fi_%s@%s", #name, ver);                                    \
        return; /* stays loaded: a library's unload is never worth the risk */                     \
    }
    NET_FI_SYMBOLS(NET_FI_BIND_)
#undef NET_FI_BIND_
    load_status = GMUX_OK;
}

gmux_status_t net_fi_load(void)
{
    pthread_once(&load_once, load);
    return load_status;
}

bool net_fi_loaded(void)
{
    void *lib = dlopen(NET_FI_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    if (!lib)
        return false;
    dlclose(lib); /* only drops the reference RTLD_NOLOAD took */
    return true;
}

int net_fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info)
{
    return fi.getinfo(version, node, service, flags, hints, info);
}

struct fi_info *net_fi_allocinfo(void)
{
    return fi.dupinfo(NULL); /* what the header's inline fi_allocinfo does */
}

void net_fi_freeinfo(struct fi_info *info)
{
    fi.freeinfo(info);
}

int net_fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    return fi.fabric(attr, fabric, context);
}

const char *net_fi_strerror(int errnum)
{
    if (net_fi_load() != GMUX_OK)
        return "(libfabric not loaded)";
    return fi.strerror(errnum);
}

uint32_t net_fi_version(void)
{
    if (net_fi_load() != GMUX_OK)
        return 0;
    return fi.version();
}
