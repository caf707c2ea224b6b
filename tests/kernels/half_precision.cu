// Packed half-precision arithmetic and conversions.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_axpy(const __half2 *x, __half2 *y, __nv_bfloat16 *z, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half2 a = __float2half2_rn(s);
    __half2 r = __hfma2(a, x[i], y[i]);
    y[i] = __hmax2(r, __float2half2_rn(0.f));
    z[i] = __float2bfloat16(__low2float(r) * 0.5f + __high2float(r));
}
