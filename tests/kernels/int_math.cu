// Integer arithmetic ptxas lowers in interesting ways: division, remainder, 64-bit multiply,
// bit manipulation intrinsics and funnel shifts.
extern "C" __global__ void int_math(const int *a, const unsigned *b, long long *out) {
    int i = threadIdx.x;
    int x = a[i];
    unsigned y = b[i] | 1u;
    long long r = (long long)(x / (int)y) + (x % 7) + (long long)x * (long long)y;
    r += __popc(y) + __clz(x) + __brev(y) + __funnelshift_l(x, y, 5) + __byte_perm(x, y, 0x5410);
    r += (unsigned long long)y / 3u + __umulhi(y, 0x9e3779b9u) + __mul24(x, 5);
    out[i] = r;
}
