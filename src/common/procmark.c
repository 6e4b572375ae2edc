/* com_procmark: see procmark.h. */
#include "common/procmark.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* "gmux-mark-" and 16 hex digits of the key's FNV-1a hash */
#define MARK_NAME_MAX 32

static void mark_name(const char *key, char name[MARK_NAME_MAX])
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    snprintf(name, MARK_NAME_MAX, "gmux-mark-%016" PRIx64, h);
}

/* Whether a mapping of memfd `name` is in /proc/self/maps ("/memfd:NAME"
 * then " (deleted)" or the end of the line). */
static bool mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return false;
    char want[MARK_NAME_MAX + 8];
    snprintf(want, sizeof(want), "/memfd:%s", name);
    size_t n = strlen(want);
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f)) {
        const char *at = strstr(line, want);
        found = at && (at[n] == '\n' || at[n] == ' ' || at[n] == '\0');
    }
    fclose(f);
    return found;
}

bool com_procmark_test(const char *key)
{
    char name[MARK_NAME_MAX];
    mark_name(key, name);
    return mapped(name);
}

bool com_procmark_test_and_set(const char *key)
{
    char name[MARK_NAME_MAX];
    mark_name(key, name);
    if (mapped(name))
        return true;
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return false;
    /* never accessed: PROT_NONE needs no file size behind it */
    void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE, MAP_SHARED, fd, 0);
    close(fd); /* the mapping keeps the memfd, and its name in the maps */
    (void)p;   /* MAP_FAILED: unmarked, the next copy tells again */
    return false;
}
