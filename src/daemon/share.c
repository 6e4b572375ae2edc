/* The share mode decision; see share.h. */
#include "daemon/share.h"

#include <string.h>

#include "common/log.h"
#include "common/settings.h"

void dmn_share_init(dmn_share_t *s, const dmn_share_params_t *p)
{
    memset(s, 0, sizeof(*s));
    s->p = p ? *p : (dmn_share_params_t){1, 0, 10};
    if (s->p.headroom_pct > DMN_SHARE_HEADROOM_MAX)
        s->p.headroom_pct = DMN_SHARE_HEADROOM_MAX;
    s->mode = DMN_MODE_SLICED;
}

gmux_status_t dmn_share_params_from_settings(dmn_share_params_t *p)
{
    int64_t h = COM_SETTING_INT(DAEMON_SHARE_HEADROOM);
    if (h < 0 || h > (int64_t)DMN_SHARE_HEADROOM_MAX) {
        COM_ERROR(DAEMON, "GMUX_DAEMON_SHARE_HEADROOM: %lld is not a percentage in 0..%u",
                  (long long)h, DMN_SHARE_HEADROOM_MAX);
        return GMUX_ERR_RANGE;
    }
    *p = (dmn_share_params_t){COM_SETTING_BOOL(DAEMON_SHARE) ? 1 : 0,
                              COM_SETTING_SIZE(DAEMON_CAPACITY), (uint32_t)h};
    return GMUX_OK;
}

uint64_t dmn_share_footprint(uint64_t budget, uint64_t total, uint64_t working_set)
{
    uint64_t f = budget > total ? budget : total;
    return working_set > f ? working_set : f;
}

/* pct% of bytes, without overflow for any device size. */
static uint64_t percent_of(uint64_t bytes, uint32_t pct)
{
    return bytes / 100 * pct + bytes % 100 * pct / 100;
}

uint64_t dmn_share_leave_bytes(const dmn_share_t *s)
{
    return percent_of(s->capacity, 100 - s->p.headroom_pct);
}

uint64_t dmn_share_enter_bytes(const dmn_share_t *s)
{
    uint32_t keep = 100 - s->p.headroom_pct;
    return percent_of(s->capacity, keep > DMN_SHARE_BAND_PCT ? keep - DMN_SHARE_BAND_PCT : 0);
}

uint64_t dmn_share_capacity(const dmn_share_t *s, uint64_t reported_device)
{
    return s->p.capacity ? s->p.capacity : reported_device;
}

int dmn_share_update(dmn_share_t *s, uint64_t footprint, uint64_t reported_device)
{
    s->capacity = dmn_share_capacity(s, reported_device);
    s->footprint = footprint;
    uint32_t mode = s->mode;
    if (!s->p.enabled || s->capacity == 0)
        mode = DMN_MODE_SLICED;
    else if (s->mode == DMN_MODE_SHARED && footprint > dmn_share_leave_bytes(s))
        mode = DMN_MODE_SLICED;
    else if (s->mode == DMN_MODE_SLICED && footprint <= dmn_share_enter_bytes(s))
        mode = DMN_MODE_SHARED;
    if (mode == s->mode)
        return 0;
    s->mode = mode;
    s->changes++;
    COM_INFO(DAEMON, "mode %s: footprints %llu of %llu bytes", dmn_mode_name(mode),
             (unsigned long long)footprint, (unsigned long long)s->capacity);
    return 1;
}
