// Q4_K one-row products (decode's matrix-vector product) written in CUDA,
// to learn what bounds kmv4.wgsl's algorithm on an NVIDIA GPU apart from
// Dawn's SPIR-V: the same work split in CUDA, and variants of it, timed on
// the same weights (docs/BENCHMARKS.md, "What bounds decode's Q4_K product").
// On the device machine (nvcc and Nsight Compute are there):
//
//   nvcc -O3 -arch=sm_90 -lineinfo bench/probe_kmv_cuda.cu -o /tmp/probe_kmv
//   /tmp/probe_kmv            # every variant at 4096x14336, 2048x5632, 2048x2048
//   ncu --set full --launch-skip 2 --launch-count 1 /tmp/probe_kmv V
//                             # variant V (0-based, main's table) alone at 4096x14336
//
// Variants (the table in main): word16 is kmv4's split (a unit is one
// 16-byte quant word of a block for ROWS rows, TPR invocations a row group,
// A read as f32 from global memory); stage the same with A first copied
// into shared memory in a bank-conflict-free order; q8 kmv4q's split on A
// rounded to 8 bits (SRC 0: rounded on the host and read from global
// memory; 1: copied into shared memory; 2: rounded by each workgroup, as
// kmv4q does). Weights are random bytes with small f16 scales, in enough
// copies that they stream from memory; times are the best of three runs of
// 400 back-to-back launches (the gap between kernels included). err: the
// largest difference from the first variant over the largest output (8-bit
// A differs by its rounding).
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __forceinline__ uint2 scale_min(uint32_t s0, uint32_t s1, uint32_t s2, uint32_t s) {
    uint32_t sh = 8u * (s & 3u);
    uint32_t b0 = (s0 >> sh) & 255u, b1 = (s1 >> sh) & 255u, b8 = (s2 >> sh) & 255u;
    uint2 lo = make_uint2(b0 & 63u, b1 & 63u);
    uint2 hi = make_uint2((b8 & 15u) | ((b0 >> 6u) << 4u), (b8 >> 4u) | ((b1 >> 6u) << 4u));
    return s >= 4u ? hi : lo;
}
__device__ __forceinline__ float2 h2f(uint32_t w) {
    __half2 h = *reinterpret_cast<__half2 *>(&w);
    return __half22float2(h);
}
__device__ __forceinline__ float4 bytes4(uint32_t w) {
    return make_float4((float)(w & 255u), (float)((w >> 8) & 255u), (float)((w >> 16) & 255u), (float)(w >> 24));
}
__device__ __forceinline__ float dot4s(float a, float4 q, float m, float4 x) {
    return (a * q.x - m) * x.x + (a * q.y - m) * x.y + (a * q.z - m) * x.z + (a * q.w - m) * x.w;
}

template <int TPR>
__device__ __forceinline__ void reduce_store(float *red, const float *acc, int ROWS, int t, int n0, int N, float *C,
                                             bool shfl) {
    int lid = threadIdx.x, WG = blockDim.x;
    if (shfl) {
        float v[8];
        for (int r = 0; r < ROWS; r++) {
            v[r] = acc[r];
            for (int o = 16; o > 0; o >>= 1) v[r] += __shfl_xor_sync(0xffffffffu, v[r], o);
        }
        if (TPR > 32) {
            if ((lid & 31) == 0)
                for (int r = 0; r < ROWS; r++) red[r * WG + lid / 32] = v[r];
            __syncthreads();
            if (t == 0)
                for (int r = 0; r < ROWS; r++) {
                    float s = 0;
                    for (int w = 0; w < TPR / 32; w++) s += red[r * WG + lid / 32 + w];
                    if (n0 + r < N) C[n0 + r] = s;
                }
        } else if (t == 0) {
            for (int r = 0; r < ROWS; r++)
                if (n0 + r < N) C[n0 + r] = v[r];
        }
        return;
    }
    for (int r = 0; r < ROWS; r++) red[r * WG + lid] = acc[r];
    __syncthreads();
    for (int h = TPR / 2; h > 0; h >>= 1) {
        if (t < h)
            for (int r = 0; r < ROWS; r++) red[r * WG + lid] += red[r * WG + lid + h];
        __syncthreads();
    }
    if (t == 0)
        for (int r = 0; r < ROWS; r++)
            if (n0 + r < N) C[n0 + r] = red[r * WG + lid];
}

// kmv4's algorithm: unit = one 16-byte quant word of a block, for ROWS rows
template <int TPR, int ROWS, bool SHFL>
__global__ void k_word16(const float4 *__restrict__ A, const uint4 *__restrict__ B, float *C, int N, int nb) {
    extern __shared__ float red[];
    int t = threadIdx.x % TPR;
    int n0 = (blockIdx.x * (blockDim.x / TPR) + threadIdx.x / TPR) * ROWS;
    float acc[ROWS];
    int rows[ROWS];
    for (int r = 0; r < ROWS; r++) acc[r] = 0, rows[r] = min(n0 + r, N - 1) * nb * 9;
    int units = nb * 8;
    for (int u = t; u < units; u += TPR) {
        int blk = u >> 3, c = u & 7, j = c >> 1;
        int ai = blk * 64 + 16 * j + 4 * (c & 1);
        float4 x0 = A[ai], x1 = A[ai + 1], x2 = A[ai + 2], x3 = A[ai + 3];
        float4 y0 = A[ai + 8], y1 = A[ai + 9], y2 = A[ai + 10], y3 = A[ai + 11];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            int wb = rows[r] + blk * 9;
            uint4 hd = B[wb];
            uint4 q = B[wb + 1 + c];
            float2 dm = h2f(hd.x);
            uint2 s0 = scale_min(hd.y, hd.z, hd.w, 2 * j), s1 = scale_min(hd.y, hd.z, hd.w, 2 * j + 1);
            float a0 = dm.x * s0.x, m0 = dm.y * s0.y, a1 = dm.x * s1.x, m1 = dm.y * s1.y;
            uint32_t lo = 0x0f0f0f0fu;
            float s = dot4s(a0, bytes4(q.x & lo), m0, x0) + dot4s(a0, bytes4(q.y & lo), m0, x1) +
                      dot4s(a0, bytes4(q.z & lo), m0, x2) + dot4s(a0, bytes4(q.w & lo), m0, x3);
            s += dot4s(a1, bytes4((q.x >> 4) & lo), m1, y0) + dot4s(a1, bytes4((q.y >> 4) & lo), m1, y1) +
                 dot4s(a1, bytes4((q.z >> 4) & lo), m1, y2) + dot4s(a1, bytes4((q.w >> 4) & lo), m1, y3);
            acc[r] += s;
        }
    }
    reduce_store<TPR>(red, acc, ROWS, t, n0, N, C, SHFL);
}

// unit = one 4-byte quant word (8 values): neighbouring invocations read
// neighbouring A vec4s; UN units in flight per invocation
template <int TPR, int ROWS, int UN, bool SHFL>
__global__ void k_word4(const float4 *__restrict__ A, const uint4 *__restrict__ B, float *C, int N, int nb) {
    extern __shared__ float red[];
    const uint32_t *Bw = reinterpret_cast<const uint32_t *>(B);
    int t = threadIdx.x % TPR;
    int n0 = (blockIdx.x * (blockDim.x / TPR) + threadIdx.x / TPR) * ROWS;
    float acc[ROWS];
    int rows[ROWS];
    for (int r = 0; r < ROWS; r++) acc[r] = 0, rows[r] = min(n0 + r, N - 1) * nb * 36;
    int units = nb * 32;
    for (int u0 = t; u0 < units; u0 += TPR * UN) {
        uint32_t q[UN][ROWS];
        uint4 hd[UN][ROWS];
        float4 xl[UN], xh[UN];
#pragma unroll
        for (int k = 0; k < UN; k++) {
            int u = min(u0 + k * TPR, units - 1);
            int blk = u >> 5, c = u & 31, j = c >> 3, h = (c >> 2) & 1, w = c & 3;
            int ai = blk * 64 + 16 * j + 4 * h + w;
            xl[k] = A[ai];
            xh[k] = A[ai + 8];
#pragma unroll
            for (int r = 0; r < ROWS; r++) {
                int wb = rows[r] + blk * 36;
                hd[k][r] = B[wb >> 2];
                q[k][r] = Bw[wb + 4 + c];
            }
        }
#pragma unroll
        for (int k = 0; k < UN; k++) {
            if (u0 + k * TPR >= units) break;
            int u = u0 + k * TPR;
            int c = u & 31, j = c >> 3;
#pragma unroll
            for (int r = 0; r < ROWS; r++) {
                uint4 d = hd[k][r];
                float2 dm = h2f(d.x);
                uint2 s0 = scale_min(d.y, d.z, d.w, 2 * j), s1 = scale_min(d.y, d.z, d.w, 2 * j + 1);
                uint32_t lo = 0x0f0f0f0fu;
                acc[r] += dot4s(dm.x * s0.x, bytes4(q[k][r] & lo), dm.y * s0.y, xl[k]) +
                          dot4s(dm.x * s1.x, bytes4((q[k][r] >> 4) & lo), dm.y * s1.y, xh[k]);
            }
        }
    }
    reduce_store<TPR>(red, acc, ROWS, t, n0, N, C, SHFL);
}


__device__ __forceinline__ float4 mbytes4(uint32_t w) {   // bytes as floats by the 2^23 trick (as bytes.wgsl)
    return make_float4(__int_as_float(0x4B000000u | (w & 255u)) - 8388608.f,
                       __int_as_float(0x4B000000u | ((w >> 8) & 255u)) - 8388608.f,
                       __int_as_float(0x4B000000u | ((w >> 16) & 255u)) - 8388608.f,
                       __int_as_float(0x4B000000u | (w >> 24)) - 8388608.f);
}
__device__ __forceinline__ float d4(float4 q, float4 x) { return q.x * x.x + q.y * x.y + q.z * x.z + q.w * x.w; }
__device__ __forceinline__ int swz(int v) { return v ^ ((v >> 4) & 3); }

// kmv4's units with A (K floats) staged in shared memory first, swizzled so
// that a unit's float4 reads meet no bank conflicts; the first unit's weight
// words are asked for before the staging. FACT: a (q . x) - m sum(x), with
// the sums of A's 16-value groups made while staging.
template <int TPR, int ROWS, bool FACT>
__global__ void k_stage(const float4 *__restrict__ A, const uint4 *__restrict__ B, float *C, int N, int nb) {
    extern __shared__ float4 sm[];
    int K4 = nb * 64;
    float4 *As = sm;
    float *xs = reinterpret_cast<float *>(sm + K4);
    float *red = xs + nb * 16;
    int t = threadIdx.x % TPR;
    int n0 = (blockIdx.x * (blockDim.x / TPR) + threadIdx.x / TPR) * ROWS;
    float acc[ROWS];
    int rows[ROWS];
    for (int r = 0; r < ROWS; r++) acc[r] = 0, rows[r] = min(n0 + r, N - 1) * nb * 9;
    int units = nb * 8;
    uint4 hd[ROWS], q[ROWS];
    int u = t;
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        int uu = min(u, units - 1);
        hd[r] = B[rows[r] + (uu >> 3) * 9];
        q[r] = B[rows[r] + (uu >> 3) * 9 + 1 + (uu & 7)];
    }
    for (int v = threadIdx.x; v < K4; v += blockDim.x) As[swz(v)] = A[v];
    if (FACT) {
        for (int g = threadIdx.x; g < nb * 16; g += blockDim.x) {
            float4 a0 = A[4 * g], a1 = A[4 * g + 1], a2 = A[4 * g + 2], a3 = A[4 * g + 3];
            xs[g] = (a0.x + a0.y + a0.z + a0.w) + (a1.x + a1.y + a1.z + a1.w) + (a2.x + a2.y + a2.z + a2.w) +
                    (a3.x + a3.y + a3.z + a3.w);
        }
    }
    __syncthreads();
    for (; u < units; u += TPR) {
        int blk = u >> 3, c = u & 7, j = c >> 1, h = c & 1;
        int un = min(u + TPR, units - 1);
        uint4 nhd[ROWS], nq[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            nhd[r] = B[rows[r] + (un >> 3) * 9];
            nq[r] = B[rows[r] + (un >> 3) * 9 + 1 + (un & 7)];
        }
        int v0 = blk * 64 + 16 * j + 4 * h;
        float4 x0 = As[swz(v0)], x1 = As[swz(v0 + 1)], x2 = As[swz(v0 + 2)], x3 = As[swz(v0 + 3)];
        float4 y0 = As[swz(v0 + 8)], y1 = As[swz(v0 + 9)], y2 = As[swz(v0 + 10)], y3 = As[swz(v0 + 11)];
        float xl = 0, xh = 0;
        if (FACT) xl = xs[blk * 16 + 4 * j + h], xh = xs[blk * 16 + 4 * j + h + 2];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            float2 dm = h2f(hd[r].x);
            uint2 s0 = scale_min(hd[r].y, hd[r].z, hd[r].w, 2 * j), s1 = scale_min(hd[r].y, hd[r].z, hd[r].w, 2 * j + 1);
            float a0 = dm.x * s0.x, m0 = dm.y * s0.y, a1 = dm.x * s1.x, m1 = dm.y * s1.y;
            uint32_t lo = 0x0f0f0f0fu;
            uint4 qq = q[r];
            if (FACT) {
                float sl = d4(mbytes4(qq.x & lo), x0) + d4(mbytes4(qq.y & lo), x1) + d4(mbytes4(qq.z & lo), x2) +
                           d4(mbytes4(qq.w & lo), x3);
                float sh = d4(mbytes4((qq.x >> 4) & lo), y0) + d4(mbytes4((qq.y >> 4) & lo), y1) +
                           d4(mbytes4((qq.z >> 4) & lo), y2) + d4(mbytes4((qq.w >> 4) & lo), y3);
                acc[r] += a0 * sl - m0 * xl + a1 * sh - m1 * xh;
            } else {
                float s = dot4s(a0, mbytes4(qq.x & lo), m0, x0) + dot4s(a0, mbytes4(qq.y & lo), m0, x1) +
                          dot4s(a0, mbytes4(qq.z & lo), m0, x2) + dot4s(a0, mbytes4(qq.w & lo), m0, x3);
                s += dot4s(a1, mbytes4((qq.x >> 4) & lo), m1, y0) + dot4s(a1, mbytes4((qq.y >> 4) & lo), m1, y1) +
                     dot4s(a1, mbytes4((qq.z >> 4) & lo), m1, y2) + dot4s(a1, mbytes4((qq.w >> 4) & lo), m1, y3);
                acc[r] += s;
            }
            hd[r] = nhd[r];
            q[r] = nq[r];
        }
    }
    reduce_store<TPR>(red, acc, ROWS, t, n0, N, C, true);
}


// ---- 8-bit A (q8_1-like: per 32 values an f16 d = amax / 127, q = round(a / d), and d * sum q) ----
// kmv4q's units: lane (blk, c) takes quant word c of a block (j = c / 2, h = c % 2): A's values
// 64 j + 16 h + (0..15) (16 bytes) and 32 further; SRC 0: A8 from global memory as given;
// 1: staged into shared memory (weights asked for first); 2: rounded from f32 A into shared memory
template <int TPR, int ROWS, int SRC>
__global__ void k_q8(const float4 *__restrict__ A, const uint4 *__restrict__ A8, const float2 *__restrict__ AD,
                     const uint4 *__restrict__ B, float *C, int N, int nb) {
    extern __shared__ uint4 smq[];
    int K = nb * 256;
    uint4 *aq = smq;                                            // K / 16 words
    float2 *ad = reinterpret_cast<float2 *>(smq + K / 16);      // K / 32
    float *red = reinterpret_cast<float *>(ad + K / 32);
    int t = threadIdx.x % TPR;
    int n0 = (blockIdx.x * (blockDim.x / TPR) + threadIdx.x / TPR) * ROWS;
    float acc[ROWS];
    int rows[ROWS];
    for (int r = 0; r < ROWS; r++) acc[r] = 0, rows[r] = min(n0 + r, N - 1) * nb * 9;
    int units = nb * 8;
    uint4 hd[ROWS], q[ROWS];
    int u = t;
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
        int uu = min(u, units - 1);
        hd[r] = B[rows[r] + (uu >> 3) * 9];
        q[r] = B[rows[r] + (uu >> 3) * 9 + 1 + (uu & 7)];
    }
    if (SRC == 1) {
        for (int i = threadIdx.x; i < K / 16; i += blockDim.x) aq[i] = A8[i];
        for (int i = threadIdx.x; i < K / 32; i += blockDim.x) ad[i] = AD[i];
        __syncthreads();
    } else if (SRC == 2) {
        for (int i = threadIdx.x; i < K / 16; i += blockDim.x) {   // piece i: values 16 i .. 16 i + 15
            float4 x[4] = {A[4 * i], A[4 * i + 1], A[4 * i + 2], A[4 * i + 3]};
            float m = 0;
            for (int k = 0; k < 4; k++) m = fmaxf(m, fmaxf(fmaxf(fabsf(x[k].x), fabsf(x[k].y)), fmaxf(fabsf(x[k].z), fabsf(x[k].w))));
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
            float d = __half2float(__float2half(m / 127.f));
            float id = d > 0 ? 1.f / d : 0.f;
            uint32_t w[4];
            int sum = 0;
            for (int k = 0; k < 4; k++) {
                int a = __float2int_rn(x[k].x * id), b = __float2int_rn(x[k].y * id), c = __float2int_rn(x[k].z * id),
                    e = __float2int_rn(x[k].w * id);
                sum += a + b + c + e;
                w[k] = (a & 255) | ((b & 255) << 8) | ((c & 255) << 16) | ((uint32_t)(e & 255) << 24);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            aq[i] = make_uint4(w[0], w[1], w[2], w[3]);
            if ((i & 1) == 0) ad[i >> 1] = make_float2(d, d * sum);
        }
        __syncthreads();
    }
    uint32_t lo = 0x0f0f0f0fu;
    for (; u < units; u += TPR) {
        int blk = u >> 3, c = u & 7, j = c >> 1, h = c & 1;
        int un = min(u + TPR, units - 1);
        uint4 nhd[ROWS], nq[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            nhd[r] = B[rows[r] + (un >> 3) * 9];
            nq[r] = B[rows[r] + (un >> 3) * 9 + 1 + (un & 7)];
        }
        uint4 qa0, qa1;
        float2 e0, e1;
        if (SRC == 0) {
            qa0 = A8[blk * 16 + 4 * j + h], qa1 = A8[blk * 16 + 4 * j + 2 + h];
            e0 = AD[blk * 8 + 2 * j], e1 = AD[blk * 8 + 2 * j + 1];
        } else {
            qa0 = aq[blk * 16 + 4 * j + h], qa1 = aq[blk * 16 + 4 * j + 2 + h];
            e0 = ad[blk * 8 + 2 * j], e1 = ad[blk * 8 + 2 * j + 1];
        }
        float hm = h == 0 ? 1.f : 0.f;
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            float2 dm = h2f(hd[r].x);
            uint2 s0 = scale_min(hd[r].y, hd[r].z, hd[r].w, 2 * j), s1 = scale_min(hd[r].y, hd[r].z, hd[r].w, 2 * j + 1);
            uint4 qq = q[r];
            int i0 = __dp4a((int)(qq.x & lo), (int)qa0.x, 0);
            i0 = __dp4a((int)(qq.y & lo), (int)qa0.y, i0);
            i0 = __dp4a((int)(qq.z & lo), (int)qa0.z, i0);
            i0 = __dp4a((int)(qq.w & lo), (int)qa0.w, i0);
            int i1 = __dp4a((int)((qq.x >> 4) & lo), (int)qa1.x, 0);
            i1 = __dp4a((int)((qq.y >> 4) & lo), (int)qa1.y, i1);
            i1 = __dp4a((int)((qq.z >> 4) & lo), (int)qa1.z, i1);
            i1 = __dp4a((int)((qq.w >> 4) & lo), (int)qa1.w, i1);
            acc[r] += dm.x * ((float)s0.x * e0.x * (float)i0 + (float)s1.x * e1.x * (float)i1) -
                      hm * dm.y * ((float)s0.y * e0.y + (float)s1.y * e1.y);
            hd[r] = nhd[r];
            q[r] = nq[r];
        }
    }
    reduce_store<TPR>(red, acc, ROWS, t, n0, N, C, true);
}

__global__ void k_copy(const float4 *__restrict__ a, float4 *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i];
}

static uint4 *g_A8;
static float2 *g_AD;
struct Shape {
    int N, K;
};

template <typename F>
static float time_it(F launch, int ncopy, int reps) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    for (int i = 0; i < 200; i++) launch(i % ncopy);   // warm
    CK(cudaDeviceSynchronize());
    float best = 1e30f;
    for (int rep = 0; rep < 3; rep++) {
        cudaEventRecord(e0);
        for (int i = 0; i < reps; i++) launch(i % ncopy);
        cudaEventRecord(e1);
        CK(cudaEventSynchronize(e1));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) best = ms;
    }
    return best * 1000.f / reps;
}

int main(int argc, char **argv) {
    int only = argc > 1 ? atoi(argv[1]) : -1;   // for ncu: one variant, one shape, few launches
    Shape shapes[3] = {{14336, 4096}, {5632, 2048}, {2048, 2048}};
    size_t maxbytes = (size_t)14336 * 4096 / 256 * 144;
    int ncopy_max = 8;
    std::vector<uint8_t> h(maxbytes);
    srand(1);
    for (size_t i = 0; i < maxbytes; i++) h[i] = rand() & 255;
    // keep d, dmin finite and small: every block's first 4 bytes two f16 of about 0.01
    for (size_t b = 0; b < maxbytes / 144; b++) {
        uint16_t v = 0x2000 | (rand() & 0x3ff);
        memcpy(&h[b * 144], &v, 2), memcpy(&h[b * 144 + 2], &v, 2);
    }
    uint8_t *pool;   // ncopy_max copies back to back; a shape's copies are slices of it
    CK(cudaMalloc(&pool, maxbytes * ncopy_max));
    for (int i = 0; i < ncopy_max; i++) CK(cudaMemcpy(pool + i * maxbytes, h.data(), maxbytes, cudaMemcpyHostToDevice));
    float4 *A;
    float *C;
    CK(cudaMalloc(&A, 4096 * 4));
    CK(cudaMalloc(&C, 14336 * 4 * 8));
    std::vector<float> ha(4096);
    for (int i = 0; i < 4096; i++) ha[i] = (rand() % 2001 - 1000) / 1000.f;
    CK(cudaMemcpy(A, ha.data(), 4096 * 4, cudaMemcpyHostToDevice));
    // A rounded to 8 bits on the host (per 32: d = f16(amax / 127), q = round(a / d))
    std::vector<int8_t> h8(4096);
    std::vector<float> hd2(4096 / 32 * 2);
    for (int b = 0; b < 4096 / 32; b++) {
        float m = 0;
        for (int i = 0; i < 32; i++) m = fmaxf(m, fabsf(ha[32 * b + i]));
        float d = __half2float(__float2half(m / 127.f));
        int sum = 0;
        for (int i = 0; i < 32; i++) {
            int qv = (int)lrintf(ha[32 * b + i] / d);
            h8[32 * b + i] = (int8_t)qv, sum += qv;
        }
        hd2[2 * b] = d, hd2[2 * b + 1] = d * sum;
    }
    uint4 *A8;
    float2 *AD;
    CK(cudaMalloc(&A8, 4096));
    CK(cudaMalloc(&AD, 4096 / 32 * 8));
    CK(cudaMemcpy(A8, h8.data(), 4096, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(AD, hd2.data(), 4096 / 32 * 8, cudaMemcpyHostToDevice));
    g_A8 = A8, g_AD = AD;
    // copy bandwidth (not with a variant named: the profiler's launches are then the variant's alone)
    if (only < 0) {
        size_t n = 64u << 20;   // floats
        float4 *x, *y;
        CK(cudaMalloc(&x, n * 4));
        CK(cudaMalloc(&y, n * 4));
        float us = time_it([&](int) { k_copy<<<132 * 8, 512>>>(x, y, n / 4); }, 1, 20);
        printf("copy 256 MB: %.1f us, %.0f GB/s (read + write)\n", us, 2.0 * n * 4 / us / 1e3);
        cudaFree(x), cudaFree(y);
    }
    std::vector<float> ref;
    struct V {
        const char *name;
        void (*run)(const float4 *, const uint4 *, float *, int, int, int);
    };
#define W16(TPR, ROWS, SH)                                                                                              \
    {"word16 tpr" #TPR " rows" #ROWS " shfl" #SH, [](const float4 *a, const uint4 *b, float *c, int N, int nb, int wg) { \
         int g = (N + ROWS * (wg / TPR) - 1) / (ROWS * (wg / TPR));                                                     \
         k_word16<TPR, ROWS, SH><<<g, wg, wg * ROWS * 4>>>(a, b, c, N, nb);                                            \
     }}
#define W4(TPR, ROWS, UN, SH)                                                                                           \
    {"word4 tpr" #TPR " rows" #ROWS " un" #UN " shfl" #SH,                                                              \
     [](const float4 *a, const uint4 *b, float *c, int N, int nb, int wg) {                                             \
         int g = (N + ROWS * (wg / TPR) - 1) / (ROWS * (wg / TPR));                                                     \
         k_word4<TPR, ROWS, UN, SH><<<g, wg, wg * ROWS * 4>>>(a, b, c, N, nb);                                         \
     }}
#define ST(TPR, ROWS, F)                                                                                                \
    {"stage tpr" #TPR " rows" #ROWS " fact" #F, [](const float4 *a, const uint4 *b, float *c, int N, int nb, int wg) {   \
         int g = (N + ROWS * (wg / TPR) - 1) / (ROWS * (wg / TPR));                                                     \
         size_t sh = (size_t)nb * 64 * 16 + (size_t)nb * 16 * 4 + (size_t)wg * ROWS * 4;                                \
         k_stage<TPR, ROWS, F><<<g, wg, sh>>>(a, b, c, N, nb);                                                          \
     }}
#define Q8(TPR, ROWS, SRC)                                                                                              \
    {"q8 tpr" #TPR " rows" #ROWS " src" #SRC, [](const float4 *a, const uint4 *b, float *c, int N, int nb, int wg) {     \
         int g = (N + ROWS * (wg / TPR) - 1) / (ROWS * (wg / TPR));                                                     \
         size_t sh = (size_t)nb * 256 + (size_t)nb * 8 * 8 + (size_t)wg * ROWS * 4;                                     \
         k_q8<TPR, ROWS, SRC><<<g, wg, sh>>>(a, g_A8, g_AD, b, c, N, nb);                                              \
     }}
    V vs[] = {W16(64, 2, false), W16(32, 2, false), W16(64, 2, true), W16(32, 2, true), W16(32, 1, true),
              W4(32, 1, 4, true),  W4(64, 1, 2, true),  ST(64, 2, false), ST(32, 2, true),  Q8(32, 2, 0),
              Q8(32, 1, 0),        Q8(32, 2, 1),        Q8(32, 2, 2),     Q8(64, 2, 2)};
    int nv = sizeof vs / sizeof vs[0];
    int wgs[1] = {256};
    cudaFuncSetAttribute(k_stage<64, 2, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10);
    for (int si = 0; si < 3; si++) {
        Shape s = shapes[si];
        int nb = s.K / 256;
        size_t bytes = (size_t)s.N * nb * 144;
        int ncopy = (int)(maxbytes * ncopy_max / bytes);   // slices of the pool, far more than the L2 holds
        if (ncopy > 64) ncopy = 64;
        auto Bi = [&](int i) { return reinterpret_cast<const uint4 *>(pool + (size_t)i * bytes); };
        for (int vi = 0; vi < nv; vi++) {
            for (int wi = 0; wi < 1; wi++) {
                if (only >= 0 && (vi != only || si != 0 || wi != 0)) continue;
                int wg = wgs[wi];
                if (only >= 0) {
                    for (int i = 0; i < 5; i++) vs[vi].run(A, Bi(i), C, s.N, nb, wg);
                    CK(cudaDeviceSynchronize());
                    continue;
                }
                float us = time_it([&](int i) { vs[vi].run(A, Bi(i), C, s.N, nb, wg); }, ncopy, 400);
                std::vector<float> out(s.N);
                CK(cudaMemcpy(out.data(), C, s.N * 4, cudaMemcpyDeviceToHost));
                double err = 0, big = 0;
                if (vi == 0 && wi == 0) ref = out;
                for (int n = 0; n < s.N; n++) err = fmax(err, fabs(out[n] - ref[n])), big = fmax(big, fabs(ref[n]));
                err /= big > 0 ? big : 1;
                printf("%5dx%-5d %-32s wg%-3d %7.2f us %6.0f GB/s  err %.1e\n", s.K, s.N, vs[vi].name, wg, us,
                       bytes / us / 1e3, err);
            }
        }
    }
    return 0;
}
