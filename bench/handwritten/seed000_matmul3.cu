// Seed 000's matmul3, 2D register tiling: a block of 8 x 8 threads
// computes a 32 x 32 tile of C, 4 x 4 results per thread.  Each step of k
// stages a 32 x 32 tile of A and of B in shared memory (every thread copies
// 16 elements), then each thread reads 4 values of A and 4 of B per k into
// registers (rA, rB) and accumulates their outer product.  B is stored as
// an N x K matrix (C = A B^T): layout NT.  The post's tests at the edge do
// not cover its loads, so M, N and K must be multiples of 32.  The post
// adds the sum to C; here the epilogue applies alpha and beta, reading C
// only where beta is not 0.
#define TILESZ 8
#define WID 32

extern "C" __device__ int tessel_block[3] = {TILESZ, TILESZ, 1};
extern "C" __device__ int tessel_tile[2] = {TILESZ * 4, TILESZ * 4};
extern "C" __device__ int tessel_multiple[3] = {TILESZ * 4, TILESZ * 4, WID};

extern "C" __global__ void gemm(const float *A, const float *B, float *C,
                                int M, int N, int K, float alpha, float beta)
{
  __shared__ float sA[TILESZ * 4][WID];
  __shared__ float sB[TILESZ * 4][WID];
  int row = threadIdx.y + blockIdx.y * blockDim.y;
  int col = threadIdx.x + blockIdx.x * blockDim.x;
  int r = threadIdx.y;
  int c = threadIdx.x;
  float sum[4 * 4] = {0.0f};
  float rA[4];
  float rB[4];
  A += blockIdx.y * blockDim.y * K * 4;
  B += blockIdx.x * blockDim.x * K * 4;
  int stride = (TILESZ * TILESZ) / WID;
  for (int t = 0; t < K / WID; t++) {
    int idx = r * TILESZ + c;
    int xx = idx / WID;
    int yy = idx % WID;
    for (int j = 0; j < TILESZ * 4; j += stride) {
      sA[xx][yy] = A[xx * K + yy];
      xx += stride;
    }
    xx = idx / WID;
    for (int j = 0; j < TILESZ * 4; j += stride) {
      sB[xx][yy] = B[xx * K + yy];
      xx += stride;
    }
    A += WID;
    B += WID;
    __syncthreads();
    for (int k = 0; k < WID; k++) {
      for (int j = 0; j < 4; j++) rA[j] = sA[4 * r + j][k];
      for (int j = 0; j < 4; j++) rB[j] = sB[4 * c + j][k];
      for (int j = 0; j < 4; j++)
        for (int l = 0; l < 4; l++) sum[j * 4 + l] += rA[j] * rB[l];
    }
    __syncthreads();
  }
  (void)M;
  for (int i = 0; i < 4; i++) {
    int ix = (row * 4 + i) * N + col * 4;
    for (int j = 0; j < 4; j++, ix++)
      C[ix] = beta == 0.0f ? alpha * sum[i * 4 + j]
                           : alpha * sum[i * 4 + j] + beta * C[ix];
  }
}
