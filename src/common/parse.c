/* Parsers of user-typed scalars; see parse.h for the accepted forms. */
#include "common/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *skip_blanks(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return s;
}

static int only_blanks(const char *s)
{
    return *skip_blanks(s) == '\0';
}

/* Decimal, or hex after 0x: never strtol's base 0, which reads 010 as octal. */
static int int_base(const char *digits)
{
    return digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') ? 16 : 10;
}

gmux_status_t com_parse_u64(const char *text, uint64_t *out)
{
    if (!text)
        return GMUX_ERR_INVALID;
    const char *s = skip_blanks(text);
    if (!isdigit((unsigned char)*s))
        return GMUX_ERR_PARSE;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, int_base(s));
    if (end == s || !only_blanks(end))
        return GMUX_ERR_PARSE;
    if (errno == ERANGE)
        return GMUX_ERR_RANGE;
    *out = (uint64_t)v;
    return GMUX_OK;
}

gmux_status_t com_parse_i64(const char *text, int64_t *out)
{
    if (!text)
        return GMUX_ERR_INVALID;
    const char *s = skip_blanks(text);
    const char *digits = (*s == '-' || *s == '+') ? s + 1 : s;
    if (!isdigit((unsigned char)*digits))
        return GMUX_ERR_PARSE;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, int_base(digits));
    if (end == s || !only_blanks(end))
        return GMUX_ERR_PARSE;
    if (errno == ERANGE)
        return GMUX_ERR_RANGE;
    *out = (int64_t)v;
    return GMUX_OK;
}

gmux_status_t com_parse_double(const char *text, double *out)
{
    if (!text)
        return GMUX_ERR_INVALID;
    const char *s = skip_blanks(text);
    if (*s == '\0')
        return GMUX_ERR_PARSE;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || !only_blanks(end))
        return GMUX_ERR_PARSE;
    if (errno == ERANGE || !isfinite(v))
        return GMUX_ERR_RANGE;
    *out = v;
    return GMUX_OK;
}

gmux_status_t com_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    if (!text)
        return GMUX_ERR_INVALID;
    const char *s = skip_blanks(text);
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strlen(yes[i]) == n && strncasecmp(s, yes[i], n) == 0) {
            *out = true;
            return GMUX_OK;
        }
        if (strlen(no[i]) == n && strncasecmp(s, no[i], n) == 0) {
            *out = false;
            return GMUX_OK;
        }
    }
    return GMUX_ERR_PARSE;
}

static int unit_shift(const char *unit, size_t n, unsigned *shift)
{
    static const struct {
        char letter;
        unsigned shift;
    } units[] = {{'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}};
    if (n == 0 || (n == 1 && tolower((unsigned char)unit[0]) == 'b')) {
        *shift = 0;
        return 1;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (tolower((unsigned char)unit[0]) != units[i].letter)
            continue;
        if (n == 1 || (n == 2 && tolower((unsigned char)unit[1]) == 'b') ||
            (n == 3 && tolower((unsigned char)unit[1]) == 'i' &&
             tolower((unsigned char)unit[2]) == 'b')) {
            *shift = units[i].shift;
            return 1;
        }
    }
    return 0;
}

gmux_status_t com_parse_size(const char *text, uint64_t *out)
{
    if (!text)
        return GMUX_ERR_INVALID;
    const char *s = skip_blanks(text);
    if (!isdigit((unsigned char)*s))
        return GMUX_ERR_PARSE;
    const char *p = s;
    while (isdigit((unsigned char)*p))
        p++;
    int has_fraction = (*p == '.');
    if (has_fraction) {
        p++;
        while (isdigit((unsigned char)*p))
            p++;
    }
    const char *unit = skip_blanks(p);
    size_t n = strlen(unit);
    while (n > 0 && isspace((unsigned char)unit[n - 1]))
        n--;
    unsigned shift;
    if (!unit_shift(unit, n, &shift))
        return GMUX_ERR_PARSE;

    if (!has_fraction) {
        errno = 0;
        unsigned long long v = strtoull(s, NULL, 10);
        if (errno == ERANGE || (shift && v > (UINT64_MAX >> shift)))
            return GMUX_ERR_RANGE;
        *out = (uint64_t)v << shift;
        return GMUX_OK;
    }
    double v = strtod(s, NULL) * (double)(1ull << shift);
    if (!isfinite(v) || v >= 18446744073709551616.0)
        return GMUX_ERR_RANGE;
    if (v != floor(v))
        return GMUX_ERR_PARSE; /* a fraction of a byte */
    *out = (uint64_t)v;
    return GMUX_OK;
}

const char *com_format_size(uint64_t bytes, char *buf, unsigned len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

/* v (at least 1 of unit units[0]) scaled by base until it prints in 3
 * digits, then printed with its unit letter. */
static const char *format_short(double v, double base, const char *units, char *buf, unsigned len)
{
    size_t u = 0;
    while (v >= 999.5 && units[u + 1]) { /* would print as 1000 or more */
        v /= base;
        u++;
    }
    snprintf(buf, len, v < 9.95 ? "%.1f%c" : "%.0f%c", v, units[u]);
    return buf;
}

const char *com_format_size_short(uint64_t bytes, char *buf, unsigned len)
{
    if (bytes < 1000) {
        snprintf(buf, len, "%lluB", (unsigned long long)bytes);
        return buf;
    }
    return format_short((double)bytes / 1024.0, 1024.0, "KMGTPE", buf, len);
}

const char *com_format_count_short(uint64_t n, char *buf, unsigned len)
{
    if (n < 100000) {
        snprintf(buf, len, "%llu", (unsigned long long)n);
        return buf;
    }
    return format_short((double)n / 1000.0, 1000.0, "kMGTPE", buf, len);
}

const char *com_format_duration(uint64_t ns, char *buf, unsigned len)
{
    uint64_t s = ns / 1000000000u;
    if (s < 60)
        snprintf(buf, len, "%llu.%llu s", (unsigned long long)s,
                 (unsigned long long)(ns / 100000000u % 10));
    else if (s < 3600)
        snprintf(buf, len, "%llum%02llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
    else if (s < 86400)
        snprintf(buf, len, "%lluh%02llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s / 60 % 60));
    else
        snprintf(buf, len, "%llud%02lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s / 3600 % 24));
    return buf;
}
