/* Rate-limited logging of refused peers; see refusals.h. */
#include "daemon/refusals.h"

#include "common/clock.h"
#include "common/log.h"

static uint64_t interval(const dmn_refusals_t *r)
{
    return r->every_ns ? r->every_ns : COM_NS_PER_S;
}

bool dmn_refusal_say(dmn_refusals_t *r, uint64_t now)
{
    r->total++;
    if (r->total > 1 && now - r->said_at < interval(r)) {
        r->unsaid++;
        return false;
    }
    r->said_at = now;
    r->unsaid = 0;
    return true;
}

void dmn_refusals_flush(dmn_refusals_t *r, size_t n, uint64_t now)
{
    for (size_t k = 0; k < n; k++, r++) {
        if (r->unsaid == 0 || now - r->said_at < interval(r))
            continue;
        const char *verb = r->verb ? r->verb : "refused";
        COM_WARN(DAEMON, "%s: %llu more %s in the last %llu ms (%llu %s so far)", r->what,
                 (unsigned long long)r->unsaid, verb,
                 (unsigned long long)((now - r->said_at) / COM_NS_PER_MS),
                 (unsigned long long)r->total, verb);
        r->unsaid = 0;
        r->said_at = now;
    }
}
