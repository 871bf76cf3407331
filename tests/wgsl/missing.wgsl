// Includes a file that does not exist.
#include "no_such_file.wgsl"
