/*
 * Conversion of errno values into gmux_status_t, done once at the border of
 * each module that calls the C library or the kernel.
 */
#ifndef COM_ERRORS_H
#define COM_ERRORS_H

#include <errno.h>

#include <gmux/status.h>

static inline gmux_status_t com_status_from_errno(int err)
{
    switch (err) {
    case 0:
        return GMUX_OK;
    case ENOMEM:
        return GMUX_ERR_NOMEM;
    case EINVAL:
        return GMUX_ERR_INVALID;
    case ENOENT:
        return GMUX_ERR_NOT_FOUND;
    case EEXIST:
    case EADDRINUSE:
        return GMUX_ERR_EXISTS;
    case EAGAIN:
    case EBUSY:
        return GMUX_ERR_BUSY;
    case ETIMEDOUT:
        return GMUX_ERR_TIMEOUT;
    case EACCES:
    case EPERM:
        return GMUX_ERR_PERM;
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
        return GMUX_ERR_PEER;
    case EPIPE:
        return GMUX_ERR_CLOSED;
    case ERANGE:
    case EOVERFLOW:
        return GMUX_ERR_RANGE;
    case ENOSYS:
    case EOPNOTSUPP:
        return GMUX_ERR_UNSUPPORTED;
    default:
        return GMUX_ERR_IO;
    }
}

#endif /* COM_ERRORS_H */
