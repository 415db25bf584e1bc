/* The only cuda/ header src/ includes: C entry points into the CUDA code. */
#ifndef HIAR_KERNELS_H
#define HIAR_KERNELS_H

#include "hiar.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *on_device = 1 when ptr is device (or managed) memory, 0 for host memory. */
hiar_result_t hiar_cuda_is_device_pointer(const void *ptr, int *on_device);

#ifdef __cplusplus
}
#endif

#endif
