// Compiled with -G: debug sections (.section .debug_*), .file/.loc with inlined_at, and an
// unoptimised body with local memory.
extern "C" __global__ void debug_kernel(int *out, int n) {
    int acc = 0;
    for (int i = 0; i < n; ++i) acc += i * threadIdx.x;
    out[threadIdx.x] = acc;
}
