/*
 * Parsing of the scalar values that users type: in GMUX_* settings, on the
 * command line (--budget 40GiB, --set k=v) and in text files. One set of
 * rules everywhere, so "2MiB" means the same thing to every command.
 *
 * Every function parses the whole string (surrounding blanks allowed) and
 * writes *out only on success. Thread-safety: pure.
 */
#ifndef COM_PARSE_H
#define COM_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include <gmux/status.h>

/* Decimal or 0x-hex signed integer. GMUX_ERR_PARSE or GMUX_ERR_RANGE. */
gmux_status_t com_parse_i64(const char *text, int64_t *out);

/* Decimal or 0x-hex unsigned integer (no sign). */
gmux_status_t com_parse_u64(const char *text, uint64_t *out);

/* A finite double. */
gmux_status_t com_parse_double(const char *text, double *out);

/* 1/0, true/false, yes/no, on/off (any case). */
gmux_status_t com_parse_bool(const char *text, bool *out);

/*
 * A byte count: an integer or decimal number with an optional unit.
 * Binary units K, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB (any case)
 * all mean powers of 1024; a bare number or "B" is bytes. "1.5GiB" is allowed
 * and must come out a whole number of bytes.
 */
gmux_status_t com_parse_size(const char *text, uint64_t *out);

/* Formats a byte count for people ("1.50 GiB", "512 B") into buf. */
const char *com_format_size(uint64_t bytes, char *buf, unsigned len);

/*
 * The same for a narrow table column: at most 4 characters, at most 3
 * significant digits, rounded to nearest ("0B", "999B", "1.0K", "1.5G",
 * "512M", "40G"), within 5% of the count. K, M, G, T, P, E are powers of
 * 1024, as com_parse_size reads them.
 */
const char *com_format_size_short(uint64_t bytes, char *buf, unsigned len);

/* A count for a narrow table column: exact below 100000 (at most 5
 * characters), else 3 significant digits at most with k, M, G, T, P, E
 * (powers of 1000): "99999", "100k", "1.5M". */
const char *com_format_count_short(uint64_t n, char *buf, unsigned len);

/* A duration for people, the two largest units, cut (not rounded) below:
 * "0.0 s" to "59.9 s", then "1m00s" to "59m59s", "1h00m" to "23h59m",
 * "1d00h" and on. */
const char *com_format_duration(uint64_t ns, char *buf, unsigned len);

#endif /* COM_PARSE_H */
