/*
 * Logging with a level and a subsystem, configured by GMUX_LOG.
 *
 * GMUX_LOG is a comma list of tokens:
 *   LEVEL            sets the level of the subsystems named in the same list,
 *                    or of all subsystems when none is named
 *   SUBSYSTEM        selects a subsystem for the bare LEVEL
 *   SUBSYSTEM=LEVEL  sets one subsystem
 * "debug,net" logs debug and above for net only (the others stay at the
 * default, warn); "info" logs info and above everywhere;
 * "warn,engine=trace" sets everything to warn but engine to trace.
 *
 * Cost when off: COM_LOG is one relaxed atomic byte load and a compare; the
 * arguments are not evaluated. The macro does no I/O itself: it calls
 * com_log_write(), which formats the line and hands it to the sink in one
 * piece (the default sink is a single write(2) to stderr, so lines of
 * concurrent threads and processes do not interleave).
 *
 * Each line is stamped with the process's elapsed time (seconds since its
 * first line) or, with GMUX_LOG_CLOCK=utc, the wall clock in ISO-8601 UTC
 * with milliseconds (2026-12-02T04:31:07.123Z), so that the lines of gmuxd,
 * of the programs under libgmux.so and of tests can be merged by time.
 * Either stamp is made without allocating, without locks and without the
 * time zone (gmtime_r takes glibc's tz lock): a line may be written from a
 * signal handler as before.
 *
 * Thread-safety: COM_LOG and com_log_write are safe from any thread.
 * com_log_configure and com_log_set_sink may race with logging threads
 * (levels are atomics: a line sees each subsystem's old or new level); a
 * sink change takes effect for later lines. A sink is called from the
 * logging threads, several at once, outside any lock, and one may still be
 * running for a line begun before com_log_set_sink returned: its arg must
 * outlive that, and it must not log itself. The settings set the levels
 * from GMUX_LOG at their first load and again only when its value changes
 * (common/settings.h), so a later library init does not undo them.
 */
#ifndef COM_LOG_H
#define COM_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <gmux/status.h>

typedef enum com_log_level {
    COM_LOG_OFF = 0,
    COM_LOG_ERROR = 1,
    COM_LOG_WARN = 2,
    COM_LOG_INFO = 3,
    COM_LOG_DEBUG = 4,
    COM_LOG_TRACE = 5,
} com_log_level_t;

/* X(ID, "name"): the subsystems, one per layer of the tree. */
#define COM_LOG_SUBSYS_LIST(X)                                                                     \
    X(COMMON, "common")                                                                            \
    X(ENGINE, "engine")                                                                            \
    X(SIM, "sim")                                                                                  \
    X(SHIM, "shim")                                                                                \
    X(DAEMON, "daemon")                                                                            \
    X(NET, "net")                                                                                  \
    X(CLI, "cli")

#define COM_LOG_SUBSYS_ENUM_(id, name) COM_SUBSYS_##id,
typedef enum com_log_subsys {
    COM_LOG_SUBSYS_LIST(COM_LOG_SUBSYS_ENUM_) COM_SUBSYS_COUNT
} com_log_subsys_t;
#undef COM_LOG_SUBSYS_ENUM_

#define COM_LOG_DEFAULT_LEVEL COM_LOG_WARN

/* Current level per subsystem; read through COM_LOG only. */
extern _Atomic unsigned char com_log_threshold_[COM_SUBSYS_COUNT];

#define COM_LOG_ENABLED(level, subsys)                                                             \
    ((unsigned)(level) <=                                                                          \
     atomic_load_explicit(&com_log_threshold_[COM_SUBSYS_##subsys], memory_order_relaxed))

#define COM_LOG(level, subsys, ...)                                                                \
    do {                                                                                           \
        if (COM_LOG_ENABLED(level, subsys))                                                        \
            com_log_write((level), COM_SUBSYS_##subsys, __FILE__, __LINE__, __VA_ARGS__);          \
    } while (0)

#define COM_ERROR(subsys, ...) COM_LOG(COM_LOG_ERROR, subsys, __VA_ARGS__)
#define COM_WARN(subsys, ...)  COM_LOG(COM_LOG_WARN, subsys, __VA_ARGS__)
#define COM_INFO(subsys, ...)  COM_LOG(COM_LOG_INFO, subsys, __VA_ARGS__)
#define COM_DEBUG(subsys, ...) COM_LOG(COM_LOG_DEBUG, subsys, __VA_ARGS__)
#define COM_TRACE(subsys, ...) COM_LOG(COM_LOG_TRACE, subsys, __VA_ARGS__)

/*
 * Parses a GMUX_LOG specification and, only if all of it is valid, applies it
 * (subsystems not mentioned return to the default level). NULL or "" restores
 * the defaults. On GMUX_ERR_PARSE, err names the offending token.
 */
gmux_status_t com_log_configure(const char *spec, char *err, size_t errlen);

/* Parses a GMUX_LOG specification as com_log_configure does, applying nothing. */
gmux_status_t com_log_check(const char *spec, char *err, size_t errlen);

/* Receives one finished line (no trailing newline). */
typedef void (*com_log_sink_fn)(com_log_level_t level, com_log_subsys_t subsys, const char *line,
                                void *arg);

/* Replaces the sink; NULL restores the default stderr sink. */
void com_log_set_sink(com_log_sink_fn fn, void *arg);

/* Formats and emits one line; use COM_LOG instead of calling this directly. */
void com_log_write(com_log_level_t level, com_log_subsys_t subsys, const char *file, int line,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* What a line's time stamp shows (GMUX_LOG_CLOCK). */
typedef enum com_log_clock {
    COM_LOG_CLOCK_ELAPSED = 0, /* seconds since the process's first line (monotonic) */
    COM_LOG_CLOCK_UTC = 1,     /* wall clock, ISO-8601 UTC with milliseconds */
} com_log_clock_t;

/* Size of a UTC stamp with its NUL: "2026-12-02T04:31:07.123Z". */
#define COM_LOG_UTC_LEN 25

/* Parses a GMUX_LOG_CLOCK value: "elapsed" (or "", the default) or "utc",
 * any case. GMUX_ERR_PARSE for anything else, *out untouched. */
gmux_status_t com_log_clock_parse(const char *text, com_log_clock_t *out);

/* Sets the stamp of later lines (an atomic; safe from any thread). */
void com_log_set_clock(com_log_clock_t clock);
com_log_clock_t com_log_get_clock(void);

/* Writes unix_ns (nanoseconds since 1970-01-01T00:00:00Z) as
 * "YYYY-MM-DDTHH:MM:SS.mmmZ", the milliseconds cut, not rounded, into buf;
 * returns its length, or 0 (buf untouched) when cap < COM_LOG_UTC_LEN.
 * Pure arithmetic: async-signal-safe. */
size_t com_log_format_utc(uint64_t unix_ns, char *buf, size_t cap);

const char *com_log_level_name(com_log_level_t level);
const char *com_log_subsys_name(com_log_subsys_t subsys);

#endif /* COM_LOG_H */
