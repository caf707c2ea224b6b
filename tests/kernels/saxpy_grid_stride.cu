// Grid-stride loop with 64-bit indexing and an FMA.
extern "C" __global__ void saxpy(long long n, float alpha, const float *__restrict__ x, float *__restrict__ y) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x)
        y[i] = fmaf(alpha, x[i], y[i]);
}
