/* The order in which adapters are requested; exposed for tests. */
#ifndef PXL_GPU_ADAPTER_PLAN_H
#define PXL_GPU_ADAPTER_PLAN_H
#include "webgpu_api.h"
#include <stddef.h>

typedef struct pxl_adapter_attempt {
    WGPUBackendType backend; /* Undefined: the platform default */
    WGPUFeatureLevel level;
    const char *what;
} pxl_adapter_attempt;

const pxl_adapter_attempt *pxl_gpu_adapter_plan(size_t *n);
#endif
