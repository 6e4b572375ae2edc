/* Whole protocol messages on a blocking socket: see msg_io.h. */
#include "msg_io.h"

#include <unistd.h>

int tmsg_read(int fd, uint8_t *buf, dmn_msg_t *m)
{
    size_t len = 0, want = DMN_PROTO_HDR_SIZE;
    while (len < want) {
        ssize_t n = read(fd, buf + len, want - len);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        dmn_hdr_t h;
        if (len == DMN_PROTO_HDR_SIZE && want == DMN_PROTO_HDR_SIZE) {
            if (dmn_proto_read_hdr(buf, len, &h) != GMUX_OK)
                return -1;
            want += h.length;
        }
    }
    return dmn_proto_decode(buf, len, m) == GMUX_OK ? 0 : -1;
}

int tmsg_write_all(int fd, const uint8_t *buf, size_t len)
{
    if (len == 0)
        return -1;
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}
