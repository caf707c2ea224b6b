// Cluster-wide reduction: every CTA reduces into its shared memory, then rank 0 sums the
// partial results of all CTAs of its cluster through DSMEM and remote atomics.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(256)
cluster_reduce(const float *in, float *out) {
    __shared__ float part;
    __shared__ unsigned count;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) { part = 0.f; count = 0; }
    cluster.sync();
    float v = in[blockIdx.x * blockDim.x + threadIdx.x];
    atomicAdd(&part, v);
    unsigned *leader_count = cluster.map_shared_rank(&count, 0);
    if (threadIdx.x == 0) atomicAdd(leader_count, 1u);
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x < cluster.num_blocks()) {
        float *p = cluster.map_shared_rank(&part, threadIdx.x);
        atomicAdd(&out[blockIdx.x / cluster.num_blocks()], *p);
    }
    cluster.sync();
}
