/*
 * libFuzzer harness for what net reads from outside its process: ring slots
 * (a GPU or a buggy producer may write anything), the remote CQ data of
 * writes and control messages from peers. No input may crash the decoder or
 * the ordering state, and a released signal always has its carrier landed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/order.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 64) {
        uint64_t w[NET_DESC_WORDS];
        net_desc_t d;
        memcpy(w, data, sizeof(w));
        if (net_desc_decode(w, &d)) {
            uint64_t again[NET_DESC_WORDS];
            net_desc_encode(&d, again);
            if (memcmp(w, again, sizeof(w)) != 0)
                abort(); /* a valid descriptor re-encodes to the same words */
        }
        data += 64;
        size -= 64;
    }
    net_order_t o;
    net_order_init(&o);
    for (; size >= 17; data += 17, size -= 17) {
        uint64_t a, b;
        memcpy(&a, data + 1, 8);
        memcpy(&b, data + 9, 8);
        switch (data[0] % 3) {
        case 0: {
            net_cqd_t c;
            net_cqd_parse(a, &c);
            /* keep most writes near the stream's window so that they matter */
            uint32_t seq = net_order_expand(&o, c.seq & 0x3ff);
            (void)net_order_write(&o, seq, &c);
            break;
        }
        case 1: {
            net_msg_t m;
            memset(&m, 0, sizeof(m));
            m.version = NET_PROTO_VERSION;
            m.type = (uint8_t)(a % 4);
            m.signal_op = (uint8_t)((a >> 8) % 4);
            m.seq = o.landed + (uint32_t)((a >> 16) & 0x3ff);
            m.signal_id = (uint32_t)(a >> 32);
            m.value = b;
            (void)net_order_message(&o, &m);
            break;
        }
        default: {
            net_pend_t p;
            while (net_order_next(&o, &p))
                if (p.type == NET_MSG_SIGNAL && (uint32_t)(o.landed - p.seq - 1) >= (1u << 31))
                    abort(); /* released before its carrier landed */
            break;
        }
        }
    }
    net_order_fini(&o);
    return 0;
}
