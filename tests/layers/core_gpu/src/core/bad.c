/* Fixture for the layer check: core may not include pxl/gpu.h. */
#include "pxl/gpu.h"
