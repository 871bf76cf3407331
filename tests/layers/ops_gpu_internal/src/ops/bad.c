/* Fixture for the layer check: ops may not include gpu internals. */
#include "gpu/gpu_internal.h"
