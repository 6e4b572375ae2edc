/*
 * libFuzzer harness for the value parsers, which read text from outside
 * (environment variables, command lines): no input may crash them, and a
 * size that parses must print and re-parse to a value of the same scale.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256];
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';

    uint64_t u;
    int64_t i;
    double d;
    bool b;
    (void)com_parse_u64(text, &u);
    (void)com_parse_i64(text, &i);
    (void)com_parse_double(text, &d);
    (void)com_parse_bool(text, &b);
    if (com_parse_size(text, &u) == GMUX_OK) {
        char buf[64];
        com_format_size(u, buf, sizeof(buf));
        if (!strchr(buf, ' '))
            abort();
    }
    char err[256];
    if (com_log_configure(text, err, sizeof(err)) != GMUX_OK && !strstr(err, "GMUX_LOG"))
        abort();
    com_log_configure(NULL, NULL, 0);
    return 0;
}
