/*
 * libFuzzer harness for net_batch (src/net/coalesce.h): ring slots that a
 * GPU or a buggy producer wrote, decoded and merged as the proxy would.
 * Whatever the slots hold, a batch is a prefix of the valid descriptors of
 * one stream, gathers exactly their bytes within the size limit, and takes
 * a signal only from its last descriptor (the ordering rule depends on it).
 *
 * Input: byte 0 picks the gather limit, byte 1 whether to fold, then 64-byte
 * slots.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gmux/net.h>

#include "net/coalesce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SLOTS 80

static uint8_t src_buf[NET_BATCH_BYTES]; /* every PUT reads from here */
static net_batch_t b;

typedef struct slots {
    net_desc_t d[MAX_SLOTS];
    bool ok[MAX_SLOTS];
    int n;
} slots_t;

/* What the proxy's desc_valid checks of a put's shape. */
static bool shape_ok(const net_desc_t *d)
{
    if (d->opcode == NET_OP_PUT_VALUE)
        return d->size >= 1 && d->size <= 8;
    if (d->opcode == NET_OP_PUT)
        return d->size <= NET_BATCH_BYTES;
    return true;
}

static gmux_status_t peek(void *arg, uint64_t k, net_desc_t *d)
{
    slots_t *s = arg;
    if (k >= (uint64_t)s->n)
        return GMUX_ERR_BUSY;
    if (!s->ok[k])
        return GMUX_ERR_INVALID;
    *d = s->d[k];
    return GMUX_OK;
}

static const void *payload(const net_desc_t *d)
{
    return d->opcode == NET_OP_PUT ? (const void *)src_buf : (const void *)&d->src;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t limits[4] = {0, 16, 512, NET_BATCH_BYTES};
    if (size < 2 + 64)
        return 0;
    size_t gather_max = limits[data[0] % 4];
    bool fold = data[1] & 1;
    data += 2;
    size -= 2;
    static slots_t s;
    s.n = 0;
    for (; size >= 64 && s.n < MAX_SLOTS; data += 64, size -= 64, s.n++) {
        uint64_t w[NET_DESC_WORDS];
        memcpy(w, data, sizeof(w));
        w[7] |= NET_DESC_MAGIC << 8; /* mostly decodable, so that merging is reached */
        for (int i = 0; i < NET_DESC_WORDS; i++)
            w[i] |= NET_DESC_VALID;
        s.ok[s.n] = net_desc_decode(w, &s.d[s.n]) && shape_ok(&s.d[s.n]);
        if (s.ok[s.n] && s.d[s.n].opcode == NET_OP_PUT)
            s.d[s.n].src = (uint64_t)(uintptr_t)src_buf;
    }
    if (!s.ok[0] || (s.d[0].opcode != NET_OP_PUT && s.d[0].opcode != NET_OP_PUT_VALUE))
        return 0;
    net_batch_build(&b, &s.d[0], gather_max, fold, peek, &s);
    if (b.ndesc < 1 || b.ndesc > NET_BATCH_MAX || (int)b.ndesc > s.n)
        abort();
    size_t bytes = 0;
    for (uint32_t k = 0; k < b.ndesc; k++) {
        const net_desc_t *d = &s.d[k];
        if (!s.ok[k] || d->peer != s.d[0].peer || d->ctx != s.d[0].ctx)
            abort(); /* only valid descriptors of one stream */
        if (k + 1 < b.ndesc && d->signal_op != GMUX_SIGNAL_NONE)
            abort(); /* a signal before the end of a batch would lose its place */
        bool payload_desc = d->opcode == NET_OP_PUT || d->opcode == NET_OP_PUT_VALUE;
        if (b.gathered && payload_desc) {
            if (d->offset != s.d[0].offset + bytes ||
                memcmp(b.data + bytes, payload(d), d->size) != 0)
                abort();
            bytes += d->size;
        }
    }
    const net_desc_t *last = &s.d[b.ndesc - 1];
    if (b.d.signal_op != last->signal_op ||
        (last->signal_op &&
         (b.d.signal_id != last->signal_id || b.d.signal_value != last->signal_value)))
        abort(); /* the batch's signal is its last descriptor's, or none */
    if (b.gathered && (bytes != b.d.size || b.d.size > gather_max || b.ndesc < 2))
        abort();
    if (!b.gathered && b.ndesc > 2)
        abort();
    return 0;
}
