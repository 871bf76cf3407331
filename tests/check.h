/* Minimal test helpers: CHECK records a failure and goes on; the test exits 1 if any failed. */
#ifndef PXL_TESTS_CHECK_H
#define PXL_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PXL_SKIP 77 /* ctest SKIP_RETURN_CODE */

static int g_failures;

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
            g_failures++;                                                                 \
        }                                                                                 \
    } while (0)

#define CHECK_MSG(cond, ...)                                                              \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            g_failures++;                                                                 \
        }                                                                                 \
    } while (0)

/* A deterministic xorshift generator for test inputs; one sequence per test program. */
static inline uint32_t test_rnd(void) {
    static uint64_t s = 0x9e3779b97f4a7c15ull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (uint32_t)(s >> 16);
}

/* A seedable generator (SplitMix64) for inputs that must not depend on what ran before. */
static inline uint64_t test_rng(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline int test_result(const char *name) {
    if (g_failures) fprintf(stderr, "%s: %d check(s) failed\n", name, g_failures);
    else fprintf(stderr, "%s: all checks passed\n", name);
    return g_failures ? 1 : 0;
}

#endif
