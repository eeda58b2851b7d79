// busy: keeps the GPU that CUDA_VISIBLE_DEVICES gives it busy for argv[1]
// seconds with 256 MiB allocated, and says which GPU that is by PCI
// address, so scripts/gpu-check.sh can check it against gpulaunch's plan.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

__global__ void spin(float *buf, size_t n, long long cycles) {
  long long start = clock64();
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = i < n ? buf[i] : 0.f;
  while (clock64() - start < cycles) x = x * 0.999f + 1.f;
  if (i < n) buf[i] = x;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 10;
  const char *inst = getenv("GPULAUNCH_INSTANCE");
  int dev = 0;
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
    fprintf(stderr, "busy: no CUDA device: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  char bus[32];
  cudaDeviceGetPCIBusId(bus, sizeof bus, dev);
  printf("instance %s: %s at %s (CUDA_VISIBLE_DEVICES=%s)\n", inst ? inst : "?", p.name, bus, getenv("CUDA_VISIBLE_DEVICES"));
  fflush(stdout);
  size_t n = (256u << 20) / sizeof(float);
  float *buf;
  if (cudaMalloc(&buf, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMemset(buf, 0, n * sizeof(float));
  time_t end = time(NULL) + (time_t)seconds;
  while (time(NULL) < end) {
    spin<<<p.multiProcessorCount * 4, 256>>>(buf, n, (long long)p.clockRate * 50);  // ~50 ms
    cudaDeviceSynchronize();
  }
  cudaFree(buf);
  return 0;
}
