/* net_jobenv: see jobenv.h. */
#include "net/jobenv.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

int net_jobenv_count(const char *text, int def)
{
    if (!text || !*text)
        return def;
    char *end;
    long x = strtol(text, &end, 10);
    return *end || x < 0 || x > NET_JOBENV_COUNT_MAX ? -1 : (int)x;
}

gmux_status_t net_jobenv_hostport(const char *hostport, struct sockaddr_in *sa_p)
{
    char host[64];
    const char *colon = strrchr(hostport, ':');
    if (!colon || (size_t)(colon - hostport) >= sizeof(host))
        return GMUX_ERR_INVALID;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (*end || port <= 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return GMUX_ERR_INVALID;
    sa.sin_port = htons((uint16_t)port);
    *sa_p = sa;
    return GMUX_OK;
}
