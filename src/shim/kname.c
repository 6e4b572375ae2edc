/* shim_kernel_name: see kname.h. */
#include "shim/kname.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define KNAME_HASH_DIGITS 16u
/* the digest form: prefix, '~', the hash */
#define KNAME_PREFIX (SHIM_KNAME_MAX - 1u - KNAME_HASH_DIGITS)

static bool kname_plain(const char *s, size_t len)
{
    if (len > SHIM_KNAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

static uint64_t kname_fnv1a(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void shim_kernel_name(const char *drv, char out[SHIM_KNAME_MAX + 1])
{
    size_t len = drv ? strlen(drv) : 0;
    if (kname_plain(drv ? drv : "", len)) {
        memcpy(out, drv ? drv : "", len + 1);
        return;
    }
    size_t n = len < KNAME_PREFIX ? len : KNAME_PREFIX;
    for (size_t i = 0; i < n; i++) {
        char c = drv[i];
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        out[i] = keep ? c : '_';
    }
    snprintf(out + n, SHIM_KNAME_MAX + 1 - n, "~%016llx",
             (unsigned long long)kname_fnv1a(drv, len));
}
