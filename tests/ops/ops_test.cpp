// SPDX-License-Identifier: MIT
// src/model/ops through streams: on the host backend every op gives exactly what its
// host loop gives (the ops wire their arguments right); on the cuda backend every kernel
// and cuBLAS call agrees with the host loop within a tolerance, printing the largest
// difference. Without a GPU the cuda test skips, out loud.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "kernels/cuda/kernels.hpp"
#include "kernels/host/blas.hpp"
#include "kernels/host/kernels.hpp"
#include "model/ops.hpp"
#include "runtime/runtime.hpp"

namespace towers {
namespace {

using testing::random_floats;

// One stream on device 0 of a runtime, with device buffers that live as long as it.
class StreamFixture {
 public:
  explicit StreamFixture(Runtime& runtime)
      : device_(runtime.device(0)), stream_(device_.create_stream()) {}

  Stream& stream() { return *stream_; }

  /// A device copy of `values`; the copy has finished when this returns.
  template <typename T>
  T* upload(const std::vector<T>& values) {
    const std::size_t bytes = values.size() * sizeof(T);
    Buffer pinned = device_.allocate_pinned(bytes);
    std::memcpy(pinned.data(), values.data(), bytes);
    buffers_.push_back(device_.allocate(bytes));
    stream_->copy(buffers_.back().data(), pinned.data(), bytes);
    stream_->synchronize();  // pinned must outlive the copy
    return buffers_.back().as<T>();
  }

  /// `n` zeroed floats on the device.
  float* zeros(int n) { return upload(std::vector<float>(n, 0.0f)); }

  /// Waits for the stream, then copies `n` device values back, as float.
  template <typename T>
  std::vector<float> download(const T* device_values, int n) {
    const std::size_t bytes = n * sizeof(T);
    Buffer pinned = device_.allocate_pinned(bytes);
    stream_->copy(pinned.data(), device_values, bytes);
    stream_->synchronize();
    const T* host_values = pinned.as<T>();
    return std::vector<float>(host_values, host_values + n);
  }

 private:
  Device& device_;
  std::unique_ptr<Stream> stream_;
  std::vector<Buffer> buffers_;
};

// What one op gave through the stream, next to what its host loop gives.
struct OpResult {
  std::string name;
  std::vector<float> expected;  // the host loop, called directly
  std::vector<float> actual;    // the op, through a stream of the backend under test
  double tolerance;             // cuda vs host: abs and rel; host vs host is exact
};

// Runs every op once on seeded inputs at model-like sizes (relu is large enough that the
// grid-stride loop wraps around).
std::vector<OpResult> run_every_op(Runtime& runtime) {
  StreamFixture f(runtime);
  Stream& s = f.stream();
  std::vector<OpResult> results;

  {  // gemm, all transposes: c[m, n] = op(a) op(b) + c
    const int m = 96, n = 64, k = 75;
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const auto a = random_floats(m * k, 100 + t), b = random_floats(k * n, 110 + t);
      auto c = random_floats(m * n, 120 + t);
      const int lda = ta ? m : k, ldb = tb ? k : n;
      float *da = f.upload(a), *db = f.upload(b), *dc = f.upload(c);
      host::gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), n);
      ops::gemm(s, ta, tb, m, n, k, 1.0f, da, lda, db, ldb, 0.5f, dc, n);
      results.push_back({"gemm " + std::to_string(t), c, f.download(dc, m * n), 1e-4});
    }
  }
  {  // gemv both ways, dot, axpy, scal
    const int m = 50, n = 30;
    const auto a = random_floats(m * n, 130), x = random_floats(m, 131);
    std::vector<float> y(n, 0.0f);
    float* da = f.upload(a);
    float* dx = f.upload(x);
    float* dy = f.zeros(n);
    host::gemv(true, m, n, 1.0f, a.data(), n, x.data(), 0.0f, y.data());
    ops::gemv(s, true, m, n, 1.0f, da, n, dx, 0.0f, dy);
    results.push_back({"gemv T", y, f.download(dy, n), 1e-5});
    std::vector<float> z(m, 1.0f);
    float* dz = f.upload(z);
    host::gemv(false, m, n, 2.0f, a.data(), n, y.data(), 1.0f, z.data());
    ops::gemv(s, false, m, n, 2.0f, da, n, dy, 1.0f, dz);
    results.push_back({"gemv N", z, f.download(dz, m), 1e-5});
    float dot = 0;
    float* ddot = f.zeros(1);
    host::dot(m, x.data(), x.data(), &dot);
    ops::dot(s, m, dx, dx, ddot);
    results.push_back({"dot", {dot}, f.download(ddot, 1), 1e-5});
    host::axpy(m, -0.5f, x.data(), z.data());
    ops::axpy(s, m, -0.5f, dx, dz);
    host::scal(m, 3.0f, z.data());
    ops::scal(s, m, 3.0f, dz);
    results.push_back({"axpy + scal", z, f.download(dz, m), 1e-5});
  }
  const math::Nhwc image{4, 24, 24, 3};  // a small conv1 input
  {  // im2col, col2im
    const int k = 5, cols = image.pixels() * math::im2col_columns(k, image.channels);
    const auto x = random_floats(image.size(), 140), dcol = random_floats(cols, 141);
    std::vector<float> col(cols), dx(image.size());
    float *dxin = f.upload(x), *dcol_d = f.upload(dcol), *dcol_out = f.zeros(cols),
          *dx_out = f.zeros(image.size());
    host::im2col(x.data(), image, k, col.data());
    ops::im2col(s, dxin, image, k, dcol_out);
    results.push_back({"im2col", col, f.download(dcol_out, cols), 0.0});
    host::col2im(dcol.data(), image, k, dx.data());
    ops::col2im(s, dcol_d, image, k, dx_out);
    results.push_back({"col2im", dx, f.download(dx_out, image.size()), 1e-5});
  }
  {  // elementwise
    const int rows = 300, channels = 64, n = rows * channels;
    const auto y0 = random_floats(n, 150), bias = random_floats(channels, 151);
    auto y = y0;
    float *dyv = f.upload(y0), *dbias = f.upload(bias);
    host::bias_add(rows, channels, bias.data(), y.data());
    ops::bias_add(s, rows, channels, dbias, dyv);
    results.push_back({"bias_add", y, f.download(dyv, n), 1e-6});

    const int big = 1 << 21;  // > kMaxBlocks * kBlockSize: each thread visits several
    const auto x = random_floats(big, 152), g = random_floats(big, 153);
    std::vector<float> r(big), dr(big);
    float *dx = f.upload(x), *dg = f.upload(g), *dout = f.zeros(big), *dgrad = f.zeros(big);
    host::relu_forward(big, x.data(), r.data());
    ops::relu_forward(s, big, dx, dout);
    results.push_back({"relu_forward", r, f.download(dout, big), 0.0});
    host::relu_backward(big, r.data(), g.data(), dr.data());
    ops::relu_backward(s, big, dout, dg, dgrad);
    results.push_back({"relu_backward", dr, f.download(dgrad, big), 0.0});

    std::vector<float> ones(n);
    host::fill(n, 1.0f, ones.data());
    float* dones = f.zeros(n);
    ops::fill(s, n, 1.0f, dones);
    results.push_back({"fill", ones, f.download(dones, n), 0.0});

    auto w = y0, shadow = bias;
    float *dw = f.upload(w), *dshadow = f.upload(shadow);
    host::sgd_update(n, 0.1f, y.data(), w.data());
    ops::sgd_update(s, n, 0.1f, dyv, dw);
    results.push_back({"sgd_update", w, f.download(dw, n), 1e-6});
    host::ema_update(channels, 0.9999f, y0.data(), shadow.data());
    ops::ema_update(s, channels, 0.9999f, f.upload(y0), dshadow);
    results.push_back({"ema_update", shadow, f.download(dshadow, channels), 1e-6});

    // Chapter 8's optimizers, state included. Tolerance 0: no fused multiply-add, and sqrtf
    // and the division are correctly rounded on both sides (kernels/math/elementwise.hpp).
    auto mw = y0, velocity = x;
    velocity.resize(n);
    float *dmw = f.upload(mw), *dvelocity = f.upload(velocity);
    host::momentum_update(n, 0.01f, 0.9f, y.data(), velocity.data(), mw.data());
    ops::momentum_update(s, n, 0.01f, 0.9f, dyv, dvelocity, dmw);
    results.push_back({"momentum velocity", velocity, f.download(dvelocity, n), 0.0});
    results.push_back({"momentum_update", mw, f.download(dmw, n), 0.0});
    math::AdamScalars adam;
    adam.step_size = 0.001f;
    auto aw = y0, am = x, av = g;
    am.resize(n);
    av.resize(n);
    for (float& e : av) e *= e;  // a second moment is never negative
    float *daw = f.upload(aw), *dam = f.upload(am), *dav = f.upload(av);
    host::adam_update(n, adam, y.data(), am.data(), av.data(), aw.data());
    ops::adam_update(s, n, adam, dyv, dam, dav, daw);
    results.push_back({"adam m", am, f.download(dam, n), 0.0});
    results.push_back({"adam v", av, f.download(dav, n), 0.0});
    results.push_back({"adam_update", aw, f.download(daw, n), 0.0});
  }
  {  // max pool, LRN: conv1's 24x24x64 -> 12x12x64
    const math::Nhwc in{2, 24, 24, 64};
    const math::Nhwc out = math::max_pool_output_shape(in);
    const auto x = random_floats(in.size(), 160), dy = random_floats(out.size(), 161);
    std::vector<float> y(out.size()), dx(in.size());
    std::vector<int> argmax(out.size());
    float *dxin = f.upload(x), *ddy = f.upload(dy), *dyout = f.zeros(out.size()),
          *dxout = f.zeros(in.size());
    int* dargmax = f.upload(std::vector<int>(out.size(), 0));
    host::max_pool_forward(x.data(), in, y.data(), argmax.data());
    ops::max_pool_forward(s, dxin, in, dyout, dargmax);
    results.push_back({"max_pool_forward", y, f.download(dyout, out.size()), 0.0});
    results.push_back({"max_pool argmax", std::vector<float>(argmax.begin(), argmax.end()),
                       f.download(dargmax, out.size()), 0.0});
    host::max_pool_backward(dy.data(), argmax.data(), in, dx.data());
    ops::max_pool_backward(s, ddy, dargmax, in, dxout);
    results.push_back({"max_pool_backward", dx, f.download(dxout, in.size()), 1e-6});

    const int pixels = out.pixels(), channels = out.channels, n = out.size();
    const math::LrnParams p;
    std::vector<float> ly(n), scale(n), ldx(n);
    float *dly = f.zeros(n), *dscale = f.zeros(n), *dldx = f.zeros(n);
    host::lrn_forward(pixels, channels, p, y.data(), ly.data(), scale.data());
    ops::lrn_forward(s, pixels, channels, p, dyout, dly, dscale);
    results.push_back({"lrn_forward", ly, f.download(dly, n), 1e-5});
    results.push_back({"lrn scale", scale, f.download(dscale, n), 1e-6});
    host::lrn_backward(pixels, channels, p, y.data(), ly.data(), scale.data(), dy.data(),
                       ldx.data());
    ops::lrn_backward(s, pixels, channels, p, dyout, dly, dscale, ddy, dldx);
    results.push_back({"lrn_backward", ldx, f.download(dldx, n), 1e-5});
  }
  {  // softmax cross-entropy, top-1
    const int batch = 128, classes = 10;
    const auto logits = random_floats(batch * classes, 170, -5.0f, 5.0f);
    std::vector<int> labels(batch);
    for (int b = 0; b < batch; ++b) labels[b] = (b * 7) % classes;
    std::vector<float> loss(batch), dlogits(batch * classes), correct(batch);
    float *dlog = f.upload(logits), *dloss = f.zeros(batch), *dd = f.zeros(batch * classes),
          *dcorrect = f.zeros(batch);
    int* dlabels = f.upload(labels);
    host::softmax_cross_entropy(batch, classes, logits.data(), labels.data(), loss.data(),
                                dlogits.data());
    ops::softmax_cross_entropy(s, batch, classes, dlog, dlabels, dloss, dd);
    results.push_back({"softmax_xent loss", loss, f.download(dloss, batch), 1e-5});
    results.push_back({"softmax_xent dlogits", dlogits, f.download(dd, batch * classes), 1e-5});
    host::top1_correct(batch, classes, logits.data(), labels.data(), correct.data());
    ops::top1_correct(s, batch, classes, dlog, dlabels, dcorrect);
    results.push_back({"top1_correct", correct, f.download(dcorrect, batch), 0.0});
  }
  return results;
}

TEST(OpsOnStreams, HostBackendGivesExactlyTheHostLoops) {
  auto runtime = Runtime::create({BackendChoice::kHost, 1});
  for (const OpResult& r : run_every_op(*runtime)) {
    testing::expect_close("host stream: " + r.name, r.actual, r.expected, 0.0, 0.0);
  }
}

TEST(OpsOnStreams, CudaBackendMatchesTheHostLoops) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "needs a CUDA device, found 0";
  auto runtime = Runtime::create({BackendChoice::kCuda, 1});
  for (const OpResult& r : run_every_op(*runtime)) {
    testing::expect_close("cuda vs host: " + r.name, r.actual, r.expected, r.tolerance,
                          r.tolerance);
  }
}

TEST(OpsOnStreams, CudaLaunchersThrowInABuildWithoutCuda) {
  if (cuda_compiled()) GTEST_SKIP() << "this build has CUDA";
  EXPECT_THROW(cuda::relu_forward(CudaLaunchContext{}, 1, nullptr, nullptr), std::logic_error);
}

}  // namespace
}  // namespace towers
