// Floating-point library calls and conversions: fast-math intrinsics, IEEE division and square
// root, double precision, and float<->int conversions with rounding modes.
extern "C" __global__ void fp_math(const float *x, const double *d, float *out, double *dout, int *iout) {
    int i = threadIdx.x;
    float v = x[i];
    out[i] = __expf(v) + __logf(fabsf(v) + 1.f) + __sinf(v) * __cosf(v) + rsqrtf(v * v + 1.f) + v / (v + 3.f) + sqrtf(fabsf(v));
    dout[i] = d[i] * d[i] + 1.0 / (d[i] + 2.0) + (double)v;
    iout[i] = __float2int_rn(v) + __float2int_rz(v * 3.f) + (int)__double2uint_rd(d[i]) + __float_as_int(v);
}
