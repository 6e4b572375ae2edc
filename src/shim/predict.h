/*
 * Template prediction in the shim. With GMUX_TEMPLATES naming a database
 * (`gmux profile -o FILE -- CMD` writes one; docs/templates.md), the proactive
 * policy asks the engine's predictor (src/engine/predictor.h) for the bytes a
 * launch will touch, instead of taking every whole region its pointer
 * arguments point into. It does so while the program's managed memory exceeds
 * the device (the policy then prefetches at every launch, and whole regions
 * would move far more than the launch needs); while it fits, each region is
 * prefetched whole once per generation, which no prediction beats.
 *
 * A launch is presented to the predictor as `gmux trace` records it: every
 * decoded 8-byte word an argument ('p' when it falls in a tracked region,
 * else 'v'), the kernel named by cuFuncGetName, so a database learnt from a
 * trace of the same program applies. Kernels or arguments without a trusted
 * template get whole regions from the predictor itself.
 *
 * A database that cannot be read is reported once (file, line, why) and the
 * shim goes on with whole regions: a launch never fails for it.
 *
 * Thread-safety: safe from any thread. LOCKING: a rwlock over the predictor:
 * predictions take it shared, the first launch of a kernel (binding it to the
 * database) exclusive. Callers hold no shim lock; the region table's lock is
 * taken inside, after this one.
 */
#ifndef SHIM_PREDICT_H
#define SHIM_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim/policy.h"
#include "shim/regions.h"

/* Whether a database is loaded (reads GMUX_TEMPLATES on first use). */
bool shim_predict_enabled(void);

/*
 * The managed ranges launch l is predicted to touch, into out (at most max).
 * Returns how many; 0 with *ok_p false when there is no prediction (no
 * database, no function, a kernel the table has no room for, more ranges
 * than max): the caller takes whole regions. *narrow_p tells whether any
 * range is smaller than its region (a template, not the predictor's own
 * whole-region fallback, decided it).
 */
size_t shim_predict_ranges(const shim_launch_info_t *l, shim_range_t *out, size_t max, bool *ok_p,
                           bool *narrow_p);

/*
 * A module or library was unloaded: forgets which kernel (name, template)
 * every function handle was bound to, since a function of a module loaded
 * later may get one of those handles. Functions are bound again, by name, at
 * their next launch; kernel names and their templates stay.
 */
void shim_predict_forget_functions(void);

#endif /* SHIM_PREDICT_H */
