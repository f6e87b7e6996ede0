// SPDX-License-Identifier: MIT
// Chapter 6's claims: with overlap on, a bucket's all-reduce runs on the communication
// stream while the backward pass of earlier layers runs on the compute stream of the same
// device (read from the trace, and met by a rendezvous); with overlap off it never does; the buckets cover the
// gradient buffer in the order the backward pass finishes it; and the math is chapter 4's.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "model/parameters.hpp"
#include "parallel/buckets.hpp"
#include "program.hpp"

namespace towers {
namespace {

using testing::run;
using testing::saved_params;

const std::string kSmall = "--backend host --batch-size 8 --log-every 1 ";
// A slow link with latency, so that every copy of the ring takes milliseconds: the
// smallest bucket's all-reduce then cannot end before the backward pass's next layer does.
const std::string kLink = "--link-gbps 1 --link-latency-us 3000 ";

std::filesystem::path temp_file(const std::string& name) {
  return testing::temp_file("towers-ch6", name);
}

struct Span {
  std::string name;
  int device = 0, stream = 0;
  double start = 0, end = 0;
};

// The op spans of a Chrome-trace JSON written by --trace (one span per line).
std::vector<Span> read_trace(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<Span> spans;
  const std::regex op(R"re("ph":"X","cat":"[^"]*","name":"([^"]*)","pid":(\d+),"tid":(\d+),"ts":([0-9.e+-]+),"dur":([0-9.e+-]+))re");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, op)) continue;
    const double start = std::stod(m[4]);
    spans.push_back({m[1], std::stoi(m[2]), std::stoi(m[3]), start, start + std::stod(m[5])});
  }
  return spans;
}

bool is_ring(const Span& s) { return s.name.rfind("ring ", 0) == 0; }
bool is_backward(const Span& s) { return s.name.find(" grad") != std::string::npos; }

// How many (all-reduce, backward) pairs ran at the same time on two streams of one device.
int comm_compute_intersections(const std::vector<Span>& spans) {
  int pairs = 0;
  for (const Span& comm : spans) {
    if (!is_ring(comm)) continue;
    for (const Span& compute : spans) {
      if (is_backward(compute) && compute.device == comm.device &&
          compute.stream != comm.stream && compute.start < comm.end && comm.start < compute.end) {
        ++pairs;
      }
    }
  }
  return pairs;
}

TEST(Overlap, BucketAllReduceRunsWhileTheBackwardPassGoesOn) {
  const auto trace = temp_file("on.json");
  auto r = run("06_overlap", kSmall + kLink + "--steps 2 --devices 2 --trace " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("buckets"), "5") << "one bucket per layer by default\n" << r.output;
  EXPECT_EQ(r.last("allreduce"), "ring");
  const auto spans = read_trace(trace);
  ASSERT_FALSE(spans.empty()) << "no op spans in " << trace;
  EXPECT_GT(comm_compute_intersections(spans), 0)
      << "no all-reduce op ran beside a backward op of the same device";
  EXPECT_GT(r.number("overlap_comm"), 0.0) << r.output;
}

// Clock-free: tower 0's compute stream stops right after softmax_linear's gradients in a
// rendezvous that its communication stream joins after the first bucket's wait. They meet
// only if that wait is over while the backward pass is unfinished, so the bucket can
// start then; were it a wait for the whole pass, the compute probe would time out alone.
// (Which event each bucket waits for is checked on the trace, above.)
TEST(Overlap, CommunicationStreamMeetsTheUnfinishedBackwardPass) {
  auto r = run("06_overlap", kSmall + "--steps 2 --devices 2 --probe");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("comm_rendezvous"), "met") << r.output;
  EXPECT_EQ(r.last("rendezvous"), "met") << r.output;
}

// With buckets of several layers (--bucket-mb 1: softmax_linear+local4 first) the compute
// side must stop after the bucket's last layer, not after softmax_linear: the bucket waits
// for local4, which a compute stream held in the probe never reaches (it timed out, always).
TEST(Overlap, CommunicationProbeMeetsWhenTheFirstBucketHoldsSeveralLayers) {
  ASSERT_GT(make_buckets(1.0).size(), 1u);
  ASSERT_GT(make_buckets(1.0).front().last_layer, 0) << "the first bucket must hold two layers";
  auto r = run("06_overlap", kSmall + "--steps 2 --devices 2 --probe --bucket-mb 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("comm_rendezvous"), "met") << r.output;
}

// One bucket: the communication stream starts after the whole backward pass, so there is
// nothing to prove and no probe (a probe there would meet and claim an overlap).
TEST(Overlap, OneBucketHasNoCommunicationProbe) {
  auto r = run("06_overlap", kSmall + "--steps 2 --devices 2 --probe --bucket-mb 1000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("buckets"), "1") << r.output;
  EXPECT_EQ(r.output.find("comm_rendezvous"), std::string::npos) << r.output;
}

TEST(Overlap, OffMeansChapter4sScheduleWithNothingBeside) {
  const auto trace = temp_file("off.json");
  auto r = run("06_overlap",
               kSmall + kLink + "--steps 2 --devices 2 --overlap off --trace " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.last("buckets"), "1") << r.output;
  const auto spans = read_trace(trace);
  ASSERT_FALSE(spans.empty()) << "no op spans in " << trace;
  int rings = 0;
  for (const Span& s : spans) rings += is_ring(s);
  EXPECT_GT(rings, 0) << "the trace must show the all-reduce";
  EXPECT_EQ(comm_compute_intersections(spans), 0);
  EXPECT_LT(r.number("overlap_comm"), 0.05) << r.output;
  EXPECT_GT(r.number("exposed_comm_ms"), 0.0) << r.output;
}

// With two towers every element's mean is (g0 + g1) / 2 or (g1 + g0) / 2, equal in float
// whatever bucket or ring chunk the element falls in, so buckets cannot change a bit.
TEST(Overlap, TwoTowersReachChapter4sParametersBitForBit) {
  auto ch4 = temp_file("ch4.ckpt"), ch6 = temp_file("ch6.ckpt");
  auto a = run("04_nccl_iterator", kSmall + "--steps 2 --devices 2 --save-params " + ch4.string());
  auto b = run("06_overlap", kSmall + "--steps 2 --devices 2 --save-params " + ch6.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(saved_params(ch4), saved_params(ch6));
}

// With four towers the ring adds element j's four gradients in an order set by the ring
// chunk j falls in, and a bucket's chunks are not the whole buffer's. So here we check
// --overlap off, which is chapter 4's very schedule, bit for bit; and overlap on within
// float rounding of the update (see chapter4_test's FourTowers test for the bound).
TEST(Overlap, FourTowersOverlapOffIsChapter4BitForBit) {
  auto ch4 = temp_file("ch4-4.ckpt"), off = temp_file("off-4.ckpt");
  auto a = run("04_nccl_iterator", kSmall + "--steps 1 --devices 4 --save-params " + ch4.string());
  auto b = run("06_overlap",
               kSmall + "--steps 1 --devices 4 --overlap off --save-params " + off.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(saved_params(ch4), saved_params(off));
}

TEST(Overlap, BadFlagsAreRefusedBeforeTheRun) {
  for (const std::string flags : {"--overlap maybe", "--bucket-mb -1", "--link-gbps 0",
                                  "--link-latency-us -5"}) {
    auto r = run("06_overlap", kSmall + "--steps 1 --devices 2 " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_TRUE(r.summaries.empty()) << flags;
  }
}

// --link-gbps auto sizes the link once, before the first step, says so on a `link:` line,
// and the summary carries the bandwidth it chose (its measurement: harness/link_sizing);
// a number given is printed as given; on GPUs and in chapter 5 (no towers to measure)
// auto is refused, saying why; the word is checked like the numbers ("fast" is refused).
TEST(Overlap, LinkGbpsAutoSizesTheLinkOnceAndSaysSo) {
  auto sized = run("06_overlap", kSmall + "--steps 1 --devices 2 --link-gbps auto");
  ASSERT_EQ(sized.exit_code, 0) << sized.output;
  EXPECT_NE(sized.output.find("link: --link-gbps auto: one tower's backward pass took"),
            std::string::npos) << sized.output;
  EXPECT_GT(sized.number("link_gbps"), 0) << sized.output;
  auto given = run("06_overlap", kSmall + "--steps 1 --devices 2 --link-gbps 2.5");
  ASSERT_EQ(given.exit_code, 0) << given.output;
  EXPECT_EQ(given.last("link_gbps"), "2.5000") << given.output;
  EXPECT_EQ(given.output.find("link: --link-gbps auto"), std::string::npos) << given.output;
  auto unlimited = run("06_overlap", kSmall + "--steps 1 --devices 2");
  EXPECT_EQ(unlimited.last("link_gbps"), "") << "no link, no key:\n" << unlimited.output;
  auto on_gpus = run("06_overlap", "--batch-size 8 --steps 1 --backend cuda --link-gbps auto");
  EXPECT_EQ(on_gpus.exit_code, 2) << on_gpus.output;
  EXPECT_NE(on_gpus.output.find("on GPUs the real link is used"), std::string::npos)
      << on_gpus.output;
  // Chapter 5 is built only with MPI (the tsan preset builds without it).
  if (std::filesystem::exists(std::string(TOWERS_BIN_DIR) + "/05_ranks")) {
    auto ranks = run("05_ranks", kSmall + "--steps 1 --link-gbps auto");
    EXPECT_EQ(ranks.exit_code, 2) << ranks.output;
    EXPECT_NE(ranks.output.find("--link-gbps"), std::string::npos) << ranks.output;
  }
  auto word = run("06_overlap", kSmall + "--steps 1 --devices 2 --link-gbps fast");
  EXPECT_EQ(word.exit_code, 2) << word.output;
  EXPECT_NE(word.output.find("or auto"), std::string::npos) << word.output;
}

TEST(Buckets, OnePerLayerInBackwardOrderCoveringTheBuffer) {
  const auto buckets = make_buckets(0);
  ASSERT_EQ(buckets.size(), 5u);
  EXPECT_EQ(buckets.front().layers, "softmax_linear");
  EXPECT_EQ(buckets.back().layers, "conv1");
  std::size_t end = model::kNumParameters;  // each bucket ends where the previous began
  for (const Bucket& b : buckets) {
    EXPECT_EQ(b.offset + b.count, end) << b.layers;
    end = b.offset;
  }
  EXPECT_EQ(end, 0u);
}

TEST(Buckets, ACapJoinsConsecutiveLayersThatFit) {
  // softmax_linear 7.7 kB + local4 296 kB fit in 1 MiB; local3 (3.5 MB) stands alone;
  // conv2 (410 kB) + conv1 (19 kB) fit together.
  const auto buckets = make_buckets(1.0);
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].layers, "softmax_linear+local4");
  EXPECT_EQ(buckets[1].layers, "local3");
  EXPECT_EQ(buckets[2].layers, "conv2+conv1");
  EXPECT_EQ(buckets[2].offset, 0u);
  const auto one = make_buckets(25.0);  // DDP's default cap holds the whole model
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].count, model::kNumParameters);
  EXPECT_EQ(one[0].last_layer, 4) << "it is complete only when conv1 is";
}

}  // namespace
}  // namespace towers
