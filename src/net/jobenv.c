/* net_jobenv: see jobenv.h. */
#include "net/jobenv.h"

#include <arpa/inet.h>
#include <string.h>

#include "common/parse.h"

/* text as com_parse_i64 reads it, from lo to hi; else -1. */
static long jobenv_number(const char *text, long lo, long hi)
{
    int64_t x;
    return com_parse_i64(text, &x) != GMUX_OK || x < lo || x > hi ? -1 : (long)x;
}

int net_jobenv_count(const char *text, int def)
{
    if (!text || !*text)
        return def;
    return (int)jobenv_number(text, 0, NET_JOBENV_COUNT_MAX);
}

gmux_status_t net_jobenv_hostport(const char *hostport, struct sockaddr_in *sa_p)
{
    char host[64];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof(host))
        return GMUX_ERR_INVALID;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    long port = jobenv_number(colon + 1, 1, 65535);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (port < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return GMUX_ERR_INVALID;
    sa.sin_port = htons((uint16_t)port);
    *sa_p = sa;
    return GMUX_OK;
}
