/* Fixture for the layer check: ops may not include vm internals. */
#include "../vm/vm_internal.h"
