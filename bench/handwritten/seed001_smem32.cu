// Seed 001's shared-memory tiling kernel, as the post writes it: a block of
// 32 x 32 threads computes a 32 x 32 tile of C, one element per thread; for
// each 32-wide step of k the threads load one element each of a tile of A
// and of B into shared memory, zero past the matrix's edge.  Row-major,
// layout NN, any shape.  The epilogue adds alpha and beta (the post stores
// the sum), reading C only where beta is not 0.
#define BLOCK_SIZE 32

extern "C" __device__ int tessel_block[3] = {BLOCK_SIZE, BLOCK_SIZE, 1};
extern "C" __device__ int tessel_tile[2] = {BLOCK_SIZE, BLOCK_SIZE};

extern "C" __global__ void gemm(const float *__restrict__ A,
                                const float *__restrict__ B,
                                float *__restrict__ C, int M, int N, int K,
                                float alpha, float beta)
{
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;

  __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
  __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];

  float acc = 0.0f;
  int numTiles = (K + BLOCK_SIZE - 1) / BLOCK_SIZE;

  for (int t = 0; t < numTiles; ++t) {
    int kA = t * BLOCK_SIZE + threadIdx.x;
    int kB = t * BLOCK_SIZE + threadIdx.y;

    if (row < M && kA < K)
      As[threadIdx.y][threadIdx.x] = A[row * K + kA];
    else
      As[threadIdx.y][threadIdx.x] = 0.0f;

    if (kB < K && col < N)
      Bs[threadIdx.y][threadIdx.x] = B[kB * N + col];
    else
      Bs[threadIdx.y][threadIdx.x] = 0.0f;

    __syncthreads();

#pragma unroll
    for (int k = 0; k < BLOCK_SIZE; ++k)
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];

    __syncthreads();
  }

  if (row < M && col < N)
    C[row * N + col] = beta == 0.0f ? alpha * acc
                                    : alpha * acc + beta * C[row * N + col];
}
