/* Fixture for the layer check: core.h may not include gpu.h. */
#include "pxl/gpu.h"
