/*
 * libFuzzer harness for what gmux launch hands a rank in its environment
 * (src/net/jobenv.c): the input, up to its first NUL, is given both as a
 * count (GMUX_RANK, GMUX_SIZE, GMUX_NNODES: net_jobenv_count) and as
 * GMUX_BOOTSTRAP's address (net_jobenv_hostport). No input may crash them,
 * and each must agree with a plain reading of its rules written here:
 *   - a count: the default for an empty text; else blanks (isspace), a sign,
 *     decimal digits or 0x and hex digits (one at least), blanks and nothing
 *     after them (com_parse_i64's rule), a value from 0 to 2^20 (-0 is 0);
 *     else -1;
 *   - an address: the text before its last ':' is a dotted quad inet_pton
 *     takes (under 64 characters), the text after it a count as above from
 *     1 to 65535; what is taken reads back the same once printed.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/jobenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The count text means under the rules above, or -1; max bounds it. */
static long plain_count(const char *s, long max)
{
    while (isspace((unsigned char)*s))
        s++;
    bool neg = *s == '-';
    if (*s == '+' || *s == '-')
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        if (!isxdigit((unsigned char)s[2]))
            return -1; /* "0x" alone: 0 and junk */
        base = 16;
        s += 2;
    }
    long v = 0;
    for (; base == 16 ? isxdigit((unsigned char)*s) : isdigit((unsigned char)*s); s++) {
        int d = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
        if ((v = v * base + d) > max)
            v = max + 1; /* stays above max, never overflows */
    }
    while (isspace((unsigned char)*s))
        s++;
    if (*s || v > max || (neg && v != 0))
        return -1;
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256];
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';

    int c = net_jobenv_count(text, 7);
    if (c != (text[0] ? plain_count(text, NET_JOBENV_COUNT_MAX) : 7))
        abort();

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    gmux_status_t st = net_jobenv_hostport(text, &sa);
    if (st != GMUX_OK && st != GMUX_ERR_INVALID)
        abort();
    const char *colon = strrchr(text, ':');
    bool want = false;
    if (colon && colon - text < 64) {
        char host[64];
        struct in_addr in;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        long port = plain_count(colon + 1, 65535);
        want = port >= 1 && inet_pton(AF_INET, host, &in) == 1;
    }
    if ((st == GMUX_OK) != want)
        abort();
    if (st != GMUX_OK)
        return 0;
    char again[64], addr[INET_ADDRSTRLEN];
    if (sa.sin_family != AF_INET || !inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof(addr)))
        abort();
    snprintf(again, sizeof(again), "%s:%u", addr, (unsigned)ntohs(sa.sin_port));
    struct sockaddr_in sb;
    memset(&sb, 0, sizeof(sb));
    if (net_jobenv_hostport(again, &sb) != GMUX_OK || memcmp(&sa, &sb, sizeof(sa)) != 0)
        abort();
    return 0;
}
