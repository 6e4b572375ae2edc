/* String tables of gmux_status_t, generated from GMUX_STATUS_LIST. */
#include <gmux/status.h>

#include "common/export.h"

#define STATUS_CASE_MSG_(name, value, msg)                                                         \
    case name:                                                                                     \
        return msg;
#define STATUS_CASE_NAME_(name, value, msg)                                                        \
    case name:                                                                                     \
        return #name;

GMUX_API const char *gmux_status_str(gmux_status_t status)
{
    switch (status) {
        GMUX_STATUS_LIST(STATUS_CASE_MSG_)
    }
    return "unknown status";
}

GMUX_API const char *gmux_status_name(gmux_status_t status)
{
    switch (status) {
        GMUX_STATUS_LIST(STATUS_CASE_NAME_)
    }
    return "GMUX_STATUS_UNKNOWN";
}
