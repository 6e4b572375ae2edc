/*
 * Smallest end-to-end CUDA check: builds with nvcc everywhere, runs a vector
 * add on a GPU and compares with the host result. Exit 77 without a GPU.
 */
#include <cstdio>
#include <cuda_runtime.h>

__global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main()
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "no GPU: skipped\n");
        return 77;
    }
    const int n = 1 << 20;
    float *a, *b, *c;
    if (cudaMallocManaged(&a, n * sizeof(float)) != cudaSuccess ||
        cudaMallocManaged(&b, n * sizeof(float)) != cudaSuccess ||
        cudaMallocManaged(&c, n * sizeof(float)) != cudaSuccess) {
        std::fprintf(stderr, "cudaMallocManaged failed\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = (float)(2 * i);
    }
    vector_add<<<(n + 255) / 256, 256, 0, 0>>>(a, b, c, n);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        std::fprintf(stderr, "kernel failed\n");
        return 1;
    }
    int wrong = 0;
    for (int i = 0; i < n; i++)
        wrong += c[i] != (float)(3 * i);
    std::printf("vector_add: %d of %d wrong\n", wrong, n);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return wrong ? 1 : 0;
}
