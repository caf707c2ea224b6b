// An mbarrier with a transaction count guarding a bulk asynchronous copy (TMA-style
// cp.async.bulk), the producer/consumer pattern of Hopper kernels.
#include <cstdint>
extern "C" __global__ void bulk_copy(const int4 *__restrict__ src, int4 *dst) {
    __shared__ alignas(128) int4 tile[64];
    __shared__ alignas(8) uint64_t bar;
    unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned tile_addr = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar_addr), "r"(1));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_addr), "r"(1024) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(tile_addr), "l"(src + blockIdx.x * 64), "r"(1024), "r"(bar_addr) : "memory");
    }
    unsigned done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar_addr), "r"(0) : "memory");
    dst[blockIdx.x * 64 + threadIdx.x] = tile[threadIdx.x];
}
