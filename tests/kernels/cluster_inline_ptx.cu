// Cluster features written as inline PTX: special registers, mapa, getctarank,
// ld/st.shared::cluster, barrier.cluster with release/acquire, fences and elect.sync.
extern "C" __global__ void __cluster_dims__(2, 2, 1) cluster_inline(unsigned *out) {
    __shared__ unsigned slot[4];
    unsigned rank, nrank, cx, cy, clx, isx, addr, remote, owner, elected, v;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(cx));
    asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(cy));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(clx));
    asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(isx));
    addr = (unsigned)__cvta_generic_to_shared(&slot[threadIdx.x & 3]);
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"((rank + 1) % nrank));
    asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(owner) : "r"(remote));
    asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(remote), "r"(rank) : "memory");
    asm volatile("fence.acq_rel.cluster;" ::: "memory");
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
    asm volatile("{ .reg .pred e; .reg .b32 r; elect.sync r|e, 0xffffffff; selp.u32 %0, 1, 0, e; }" : "=r"(elected));
    out[(blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x] =
        rank ^ (nrank << 4) ^ (cx << 8) ^ (cy << 10) ^ (clx << 12) ^ (isx << 20) ^ (owner << 21) ^ (v << 24) ^ (elected << 31);
}
