/*
 * gpu_ceiling.cu — what plain hand-written kernels reach on this GPU, beside the generated
 * reduce kernel (gpu_bench): device-to-device copy (cudaMemcpy and a kernel), a += b in place
 * and c = a + b, float4 accesses with 4 in flight per thread, for several grids; and a += b
 * while as many more blocks spin on a flag (what the idle rank's blocks do in gpu_bench's 2-rank
 * reduce); and a += b with each block owning one contiguous part (as the generated kernels'
 * blocks own theirs) against tiles dealt to the blocks in turn. Built with nvcc on the GPU machine only (tests/gpu/profile.sh); the project's build
 * never needs CUDA. Bandwidth counts bytes read plus bytes written.
 */
#include <algorithm>
#include <cstdio>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
#define U 4

__global__ void copy4(float4 *d, const float4 *a, size_t n) {
  for (size_t i0 = blockIdx.x * (size_t)blockDim.x * U + threadIdx.x; i0 < n; i0 += (size_t)gridDim.x * blockDim.x * U) {
    float4 x[U];
    for (int u = 0; u < U; u++) if (i0 + u * blockDim.x < n) x[u] = a[i0 + u * blockDim.x];
    for (int u = 0; u < U; u++) if (i0 + u * blockDim.x < n) d[i0 + u * blockDim.x] = x[u];
  }
}

/* d = a + b over blocks [0, work); blocks [work, gridDim.x) spin (thread 0) until all are done */
__global__ void add4(float4 *d, const float4 *a, const float4 *b, size_t n, unsigned work, unsigned *done) {
  if (blockIdx.x >= work) {
    if (threadIdx.x == 0) while (*(volatile unsigned *)done < work) {}
    return;
  }
  for (size_t i0 = blockIdx.x * (size_t)blockDim.x * U + threadIdx.x; i0 < n; i0 += (size_t)work * blockDim.x * U) {
    float4 x[U], y[U];
    for (int u = 0; u < U; u++) if (i0 + u * blockDim.x < n) { x[u] = a[i0 + u * blockDim.x]; y[u] = b[i0 + u * blockDim.x]; }
    for (int u = 0; u < U; u++)
      if (i0 + u * blockDim.x < n) d[i0 + u * blockDim.x] = make_float4(__fadd_rn(x[u].x, y[u].x), __fadd_rn(x[u].y, y[u].y),
                                                                     __fadd_rn(x[u].z, y[u].z), __fadd_rn(x[u].w, y[u].w));
  }
  __syncthreads();
  if (threadIdx.x == 0) { __threadfence(); atomicAdd(done, 1u); }
}

/* d = a + b where block b owns a part of the array, as the generated kernels' blocks own their
 * part of a chunk: tiles == 0: one contiguous range per block (n / gridDim.x vectors); else tiles
 * of U * blockDim.x vectors dealt round-robin (tile t to block t % gridDim.x) */
__global__ void add4_part(float4 *d, const float4 *a, const float4 *b, size_t n, int tiles) {
  size_t per = (size_t)U * blockDim.x, lo, hi, step;
  if (tiles) { lo = blockIdx.x * per; hi = n; step = per * gridDim.x; }
  else { lo = n * blockIdx.x / gridDim.x; hi = n * (blockIdx.x + 1) / gridDim.x; step = per; }
  for (size_t t = lo; t < hi; t += step) {
    size_t i0 = t + threadIdx.x;
    float4 x[U], y[U];
    for (int u = 0; u < U; u++) if (i0 + u * blockDim.x < hi) { x[u] = a[i0 + u * blockDim.x]; y[u] = b[i0 + u * blockDim.x]; }
    for (int u = 0; u < U; u++)
      if (i0 + u * blockDim.x < hi) d[i0 + u * blockDim.x] = make_float4(__fadd_rn(x[u].x, y[u].x), __fadd_rn(x[u].y, y[u].y),
                                                                      __fadd_rn(x[u].z, y[u].z), __fadd_rn(x[u].w, y[u].w));
  }
}

int main(int argc, char **argv) {
  size_t bytes = (size_t)(argc > 1 ? atol(argv[1]) : 1024) << 20, n = bytes / 16;
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float4 *a, *b, *c;
  unsigned *done;
  CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); CK(cudaMalloc(&c, bytes)); CK(cudaMalloc(&done, 4));
  CK(cudaMemset(a, 0x3f, bytes)); CK(cudaMemset(b, 0x3e, bytes));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  auto median_ms = [&](auto launch) {
    float t[9];
    launch();
    for (int r = 0; r < 9; r++) {
      cudaEventRecord(e0);
      launch();
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      cudaEventElapsedTime(&t[r], e0, e1);
    }
    std::sort(t, t + 9);
    return t[4];
  };
  printf("| %zu MiB buffers, %d SMs | blocks x threads | ms | GB/s (read + write) |\n|---|---|---|---|\n", bytes >> 20, sms);
  float ms = median_ms([&] { cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice); });
  printf("| cudaMemcpy D2D | | %.3f | %.0f |\n", ms, 2e-6 * bytes / ms);
  double copy = 2e-6 * bytes / ms;
  for (int tiles = 0; tiles < 2; tiles++)
    for (int g = 33; g <= 132; g *= 2)
      for (int th = 256; th <= 512; th *= 2) {
        ms = median_ms([&] { add4_part<<<g, th>>>(a, a, b, n, tiles); });
        printf("| a += b, a %s per block | %d x %d | %.3f | %.0f (%.0f%% of cudaMemcpy) |\n", tiles ? "tile in turn" : "contiguous part", g, th,
               ms, 3e-6 * bytes / ms, 3e-4 * bytes / ms / copy);
      }
  int grids[] = {132, 264, 528, 1056};
  for (int gi = 0; gi < 4; gi++)
    for (int th = 256; th <= 512; th *= 2) {
      int g = grids[gi] * sms / 132;
      ms = median_ms([&] { copy4<<<g, th>>>(c, a, n); });
      printf("| copy kernel | %d x %d | %.3f | %.0f |\n", g, th, ms, 2e-6 * bytes / ms);
      ms = median_ms([&] { add4<<<g, th>>>(a, a, b, n, g, done); });
      printf("| a += b | %d x %d | %.3f | %.0f (%.0f%% of cudaMemcpy) |\n", g, th, ms, 3e-6 * bytes / ms, 3e-4 * bytes / ms / copy);
      ms = median_ms([&] { add4<<<g, th>>>(c, a, b, n, g, done); });
      printf("| c = a + b | %d x %d | %.3f | %.0f |\n", g, th, ms, 3e-6 * bytes / ms);
      if (g <= sms) {
        ms = median_ms([&] { cudaMemsetAsync(done, 0, 4); add4<<<2 * g, th>>>(a, a, b, n, g, done); });
        printf("| a += b, %d more blocks spinning | %d x %d | %.3f | %.0f |\n", g, g, th, ms, 3e-6 * bytes / ms);
      }
    }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  return 0;
}
