// Calls to non-inlined device functions, a recursive function, and printf (vprintf).
#include <cstdio>
__device__ __noinline__ float poly(float x, int k) { return k == 0 ? 1.f : x * poly(x, k - 1) + 1.f; }
__device__ __noinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
extern "C" __global__ void device_calls(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = poly(in[i], clampi(i, 0, 4));
    if (i == 0) printf("n=%d first=%f\n", n, out[0]);
}
