// a -> b -> a: the embedder must refuse it.
#include "b.wgsl"
