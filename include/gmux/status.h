/*
 * gmux status codes: the one error type of every gmux interface.
 *
 * 0 is success, every error is negative. The codes and their messages are
 * declared once, in GMUX_STATUS_LIST, and both the enum and the string table
 * are generated from it. Foreign codes (errno, CUresult, -FI_E*) are turned
 * into these at the border of the module that calls the foreign API.
 *
 * Thread-safety: everything here is pure.
 */
#ifndef GMUX_STATUS_H
#define GMUX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message) */
#define GMUX_STATUS_LIST(X)                                                                        \
    X(GMUX_OK, 0, "success")                                                                       \
    X(GMUX_ERR_INVALID, -1, "invalid argument")                                                    \
    X(GMUX_ERR_NOMEM, -2, "out of memory")                                                         \
    X(GMUX_ERR_IO, -3, "input/output error")                                                       \
    X(GMUX_ERR_PARSE, -4, "malformed input")                                                       \
    X(GMUX_ERR_RANGE, -5, "value out of range")                                                    \
    X(GMUX_ERR_NOT_FOUND, -6, "not found")                                                         \
    X(GMUX_ERR_EXISTS, -7, "already exists")                                                       \
    X(GMUX_ERR_BUSY, -8, "resource busy, try again")                                               \
    X(GMUX_ERR_TIMEOUT, -9, "timed out")                                                           \
    X(GMUX_ERR_UNSUPPORTED, -10, "not supported")                                                  \
    X(GMUX_ERR_VERSION, -11, "version mismatch")                                                   \
    X(GMUX_ERR_PEER, -12, "peer failed or unreachable")                                            \
    X(GMUX_ERR_TRANSPORT, -13, "transport error")                                                  \
    X(GMUX_ERR_DRIVER, -14, "GPU driver error")                                                    \
    X(GMUX_ERR_CAPACITY, -15, "capacity exceeded")                                                 \
    X(GMUX_ERR_STATE, -16, "operation not valid in this state")                                    \
    X(GMUX_ERR_CLOSED, -17, "connection closed")                                                   \
    X(GMUX_ERR_PERM, -18, "permission denied")

#define GMUX_STATUS_ENUM_(name, value, msg) name = (value),
typedef enum gmux_status { GMUX_STATUS_LIST(GMUX_STATUS_ENUM_) } gmux_status_t;
#undef GMUX_STATUS_ENUM_

/* The message of a status; never NULL, "unknown status" for a value not in the list. */
const char *gmux_status_str(gmux_status_t status);

/* The identifier of a status ("GMUX_ERR_TIMEOUT"); never NULL. */
const char *gmux_status_name(gmux_status_t status);

#ifdef __cplusplus
}
#endif

#endif /* GMUX_STATUS_H */
