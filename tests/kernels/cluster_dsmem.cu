// Thread-block cluster with distributed shared memory via cooperative_groups: each CTA reads
// its neighbour's shared memory after a cluster barrier.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_exchange(int *out) {
    __shared__ int buf[128];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned rank = cluster.block_rank();
    buf[threadIdx.x] = rank * 1000 + threadIdx.x;
    cluster.sync();
    int *peer = cluster.map_shared_rank(buf, (rank + 1) % cluster.num_blocks());
    out[blockIdx.x * blockDim.x + threadIdx.x] = peer[threadIdx.x];
    cluster.sync();
}
