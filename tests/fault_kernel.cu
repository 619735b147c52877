// A hand-written kernel that writes through an invalid C pointer: its
// first launch faults with an illegal address, as a miscompiled kernel
// would, and the CUDA context is lost (test_bench_faults.sh on a GPU).
extern "C" __device__ int tessel_block[3] = {32, 1, 1};
extern "C" __device__ int tessel_tile[2] = {1, 32};

extern "C" __global__ void gemm(const float *A, const float *B, float *C,
                                int M, int N, int K, float alpha, float beta)
{
  C[(long long)(threadIdx.x + 1) << 40] = alpha;
}
