// SPDX-License-Identifier: MIT
// CUDA kernels for softmax cross-entropy and top-1 correctness (kernels/math/softmax.hpp).
// One thread per example: with 10 classes a row is too small to share between threads.
#include "base/cuda/check.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/math/softmax.hpp"

namespace towers::cuda {
namespace {

__global__ void softmax_cross_entropy_kernel(KernelStamp stamp, int batch, int classes,
                                             const float* logits, const int* labels, float* loss,
                                             float* dlogits) {
  stamp_begin(stamp);
  for (int b = first_index(); b < batch; b += index_stride()) {
    math::softmax_cross_entropy(b, logits, labels, batch, classes, loss, dlogits);
  }
  stamp_end(stamp);
}

__global__ void top1_correct_kernel(KernelStamp stamp, int batch, int classes, const float* logits,
                                    const int* labels, float* correct) {
  stamp_begin(stamp);
  for (int b = first_index(); b < batch; b += index_stride()) {
    correct[b] = math::top1_correct(b, logits, labels, classes);
  }
  stamp_end(stamp);
}

}  // namespace

void softmax_cross_entropy(const CudaLaunchContext& ctx, int batch, int classes,
                           const float* logits, const int* labels, float* loss,
                           float* dlogits) {
  if (batch == 0) return;
  softmax_cross_entropy_kernel<<<grid_size(batch), kBlockSize, 0, stream_of(ctx)>>>(
      next_stamp(ctx), batch, classes, logits, labels, loss, dlogits);
  CUDA_CHECK(cudaGetLastError());
}

void top1_correct(const CudaLaunchContext& ctx, int batch, int classes, const float* logits,
                  const int* labels, float* correct) {
  if (batch == 0) return;
  top1_correct_kernel<<<grid_size(batch), kBlockSize, 0, stream_of(ctx)>>>(
      next_stamp(ctx), batch, classes, logits, labels, correct);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace towers::cuda
