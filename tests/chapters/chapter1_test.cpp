// SPDX-License-Identifier: MIT
// Chapter 1's claims: the program trains and evaluates like cifar10_train.py and
// cifar10_eval.py, checkpoints resume the step count, and the embedded data set is
// learnable by the CNN but not by a linear model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "base/temp_dir.hpp"
#include "data/cifar10.hpp"
#include "data/preprocess.hpp"
#include "data/synthetic.hpp"
#include "model/checkpoint.hpp"
#include "model/parameters.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::refused;
using testing::run;


TEST(SingleGpu, LogsLikeTheTutorialAndEndsWithASummary) {
  auto r = run("01_single_gpu", "--backend host --steps 3 --batch-size 16 --log-every 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(": step 0, loss = "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("examples/sec; "), std::string::npos) << r.output;
  EXPECT_EQ(r.last("steps"), "3");
  // The first logged loss is ln(10) + the weight decay of local3/local4, about 4.67.
  const double loss = r.number("final_loss");
  EXPECT_GT(loss, 4.2) << r.output;
  EXPECT_LT(loss, 4.9) << r.output;
}

TEST(SingleGpu, ResumeContinuesTheStepCountFromTheCheckpoint) {
  const base::TempDir scratch("ch1-resume");
  const std::filesystem::path& dir = scratch.path();
  auto first = run("01_single_gpu", "--backend host --steps 3 --batch-size 8 --checkpoint-dir " +
                   dir.string());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "model.ckpt-3")) << first.output;
  auto second = run("01_single_gpu", "--backend host --steps 2 --batch-size 8 --resume "
                    "--checkpoint-dir " + dir.string());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(second.last("global_step"), "5") << second.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "model.ckpt-5"));
}

TEST(SingleGpu, MissingDataDirIsAUsageErrorWithAHint) {
  auto r = run("01_single_gpu", "--backend host --steps 1 --data-dir /nonexistent/cifar");
  EXPECT_TRUE(refused(r, "cifar-10-binary"));
}

TEST(SingleGpu, ResumeWithoutCheckpointDirIsAUsageError) {
  auto r = run("01_single_gpu", "--backend host --steps 1 --resume");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(SingleGpu, HostThreadsChangeTheSpeedNotTheTraining) {
  const std::string flags = "--backend host --steps 3 --batch-size 16 --log-every 1";
  auto one = run("01_single_gpu", flags + " --host-threads 1");
  auto two = run("01_single_gpu", flags + " --host-threads 2");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  // The loops give the same bits; a BLAS may round a product with fewer rows
  // differently in the last bit (kernels/host/blas.hpp), and the summary prints four
  // decimals, so allow two units of the last printed digit.
  EXPECT_NEAR(one.number("final_loss"), two.number("final_loss"), 2e-4);
  auto zero = run("01_single_gpu", flags + " --host-threads 0");
  EXPECT_TRUE(refused(zero, "--host-threads"));
}

// A softmax regression on raw pixels (central crops, standardized), trained with plain
// SGD: it must stay well below the CNN, so the synthetic set needs the CNN's structure.
TEST(SyntheticSet, LinearClassifierOnRawPixelsStaysBelowSixtyPercent) {
  constexpr int kClasses = data::kNumClasses, kFeatures = data::kCropValues, kTrain = 10000, kTest = 2000;
  data::Dataset train = data::generate_synthetic(data::kDefaultSyntheticSeed, data::Split::kTrain, 0, kTrain);
  data::Dataset test = data::generate_synthetic(data::kDefaultSyntheticSeed, data::Split::kTest, 0, kTest);
  auto features = [](const data::Dataset& d) {
    std::vector<float> x(d.size() * kFeatures);
    for (std::size_t i = 0; i < d.size(); ++i) data::preprocess_for_eval(d.image(i), &x[i * kFeatures]);
    return x;
  };
  std::vector<float> xtrain = features(train), xtest = features(test);
  std::vector<float> w(kFeatures * kClasses, 0.0f), b(kClasses, 0.0f);
  const float lr = 0.01f;
  auto logits_of = [&](const float* x, float* logits) {
    for (int c = 0; c < kClasses; ++c) {
      float z = b[c];
      for (int f = 0; f < kFeatures; ++f) z += x[f] * w[f * kClasses + c];
      logits[c] = z;
    }
  };
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int i = 0; i < kTrain; ++i) {
      const float* x = &xtrain[i * kFeatures];
      float z[kClasses], top = -1e30f, sum = 0;
      logits_of(x, z);
      for (float v : z) top = std::max(top, v);
      for (float& v : z) sum += (v = std::exp(v - top));
      for (int c = 0; c < kClasses; ++c) {
        const float g = z[c] / sum - (c == train.labels[i] ? 1.0f : 0.0f);
        b[c] -= lr * g;
        for (int f = 0; f < kFeatures; ++f) w[f * kClasses + c] -= lr * g * x[f];
      }
    }
  }
  int correct = 0;
  for (int i = 0; i < kTest; ++i) {
    float z[kClasses];
    logits_of(&xtest[i * kFeatures], z);
    correct += (std::max_element(z, z + kClasses) - z) == test.labels[i];
  }
  const double accuracy = double(correct) / kTest;
  std::printf("softmax regression on raw pixels: %.3f test accuracy\n", accuracy);
  EXPECT_GT(accuracy, 0.12) << "above chance: the regression did learn something";
  EXPECT_LT(accuracy, 0.60);
}

// --accumulate m takes one update from the mean of m micro-batches' gradients. The mean
// of the micro-batches' mean losses is the batch's mean loss, so the update equals one
// batch of B up to rounding (summed in another order: not the same bits); a sum instead
// of a mean would move the parameters m times as far. Chapter 9's test holds the bits.
TEST(SingleGpu, AccumulatingMicroBatchesTakesTheBatchMeanStep) {
  const base::TempDir scratch("ch1-accumulate");
  const auto one = scratch.path() / "one.params", four = scratch.path() / "four.params";
  const std::string flags = "--backend host --host-threads 1 --batch-size 8 --save-params ";
  auto r1 = run("01_single_gpu", flags + one.string() + " --steps 1");
  auto r4 = run("01_single_gpu", flags + four.string() + " --steps 1 --accumulate 4");
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  ASSERT_EQ(r4.exit_code, 0) << r4.output;
  EXPECT_EQ(r4.last("accumulate"), "4");
  std::vector<float> p0(model::kNumParameters);  // --seed 1's initial values
  model::initialize_parameters(1, p0.data());
  const auto p1 = model::load_checkpoint(one).params;
  const auto p4 = model::load_checkpoint(four).params;
  double step = 0, difference = 0;  // squared norms
  for (std::size_t i = 0; i < model::kNumParameters; ++i) {
    step += (p1[i] - p0[i]) * (p1[i] - p0[i]);
    difference += (p4[i] - p1[i]) * (p4[i] - p1[i]);
  }
  ASSERT_GT(step, 0.0);
  EXPECT_LT(std::sqrt(difference), 1e-3 * std::sqrt(step)) << "not the batch's mean step";
  auto odd = run("01_single_gpu", "--backend host --steps 1 --batch-size 10 --accumulate 4");
  EXPECT_TRUE(refused(odd, "not a multiple of --accumulate 4"));
}

// A device too small for the batch's activations (issue 38's sibling of chapter 9's): the
// advice named --towers-per-device and --towers, which this program lacks, and the run
// ended with exit status 1. Now a usage error before step 0, in this program's flags.
TEST(SingleGpu, AnOutOfMemorySaysWhatToDoInThisProgramsFlags) {
  auto r = run("01_single_gpu", "--backend host --steps 1 --batch-size 9320");
  EXPECT_TRUE(refused(r, "out of memory on host:0"));
  EXPECT_NE(r.output.find("Use a smaller --batch-size, or --accumulate m"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("--towers"), std::string::npos) << "a flag chapter 1 lacks: " << r.output;
  EXPECT_EQ(r.output.find("step 0,"), std::string::npos) << "ran before refusing: " << r.output;
}

}  // namespace
}  // namespace towers
