/* Operations many transports share: nothing to report, nothing to stop, no size limit. */
#include "transport/transport.h"

hiar_result_t hiar_transport_no_status(const void *state)
{
    (void)state;
    return HIAR_SUCCESS;
}

void hiar_transport_no_abort(void *state)
{
    (void)state;
}

size_t hiar_transport_unbounded(const void *state)
{
    (void)state;
    return (size_t)-1;
}
