/* libFuzzer harness for the calibration reader: no input may crash it, and
 * parameters it accepts always pass the simulator's own range check. */
#include <stdint.h>
#include <stdlib.h>

#include "sim/calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sim_params_t p;
    sim_params_default(&p);
    char applied[256], err[256];
    if (sim_calib_apply_text(&p, (const char *)data, size, applied, sizeof(applied), err,
                             sizeof(err)) == GMUX_OK &&
        sim_params_check(&p, err, sizeof(err)) != GMUX_OK)
        abort();
    return 0;
}
