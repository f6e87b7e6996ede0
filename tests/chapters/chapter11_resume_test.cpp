// SPDX-License-Identifier: MIT
// Chapter 11's composed run survives what chapter 5's ranks survive (issue 40, item 4):
//
//   - one rank of a mesh killed with SIGKILL mid-run (--fail-how kill), then --resume: the
//     last checkpoint and --save-params equal an uninterrupted run's byte for byte, for
//     data x tensor, data x pipeline, tensor x pipeline (with one replica and with two)
//     and data alone (each kind of rank: its slice, its range, its range of a slice, its
//     copy, and its input restarted where the job stood, across an epoch), with SGD, and with an optimizer that keeps state
//     (momentum on data x tensor, Adam on data x pipeline, on tensor x pipeline, at ZeRO-1
//     on data x tensor and on data x pipeline, momentum at ZeRO-2 on data x tensor, and
//     Adam at ZeRO-3 on data alone: the velocity or
//     moments of every slice, range, range of a slice and shard put together in the file
//     and taken back); these are the meshes that may keep checkpoints
//     (mesh_checkpoint_problem's positive list, every mesh the run accepts today);
//   - a checkpoint is chapter 1's file: 01_single_gpu --resume continues it, bit for bit
//     where the numerics class says so (a pipeline is 01_single_gpu --accumulate m), and
//     08_sharded --resume continues one with Adam's moments, at another ZeRO stage, bit for
//     bit; a resume with another --optimizer is refused before step 0; ZeRO-1 beside
//     both tensor and pipeline parallelism writes ZeRO-0's file byte for byte, and
//     resumed from it ends on the straight ZeRO-0 run's file;
//   - the file holds the whole model, not the mesh: it resumes on other --tp and --pp
//     (a pipeline of 2 stages resumed on 3 ends where 2 would have), and a mesh whose
//     replicas read another number of images per step is refused before step 0, saying
//     which product of flags to give;
//   - a dead rank and a stalled rank end the job within the bound, named with their place
//     on the mesh.
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "../data/temp_dir.hpp"
#include "data/cifar10.hpp"
#include "data/synthetic.hpp"
#include "exact_resume.hpp"
#include "kill_nine.hpp"
#include "model/checkpoint.hpp"
#include "program.hpp"
#include "ranks.hpp"

namespace towers {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::ProgramRun;
using testing::RankRun;
using testing::run_ranks;

bool has(const ProgramRun& r, const std::string& text) {
  return r.output.find(text) != std::string::npos;
}

// A refusal every rank reaches is said once, by rank 0: `text` is in the output exactly once.
void expect_said_once(const ProgramRun& r, const std::string& text) {
  const auto first = r.output.find(text);
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(text, first + 1), std::string::npos) << "said once\n" << r.output;
}

// A tiny CIFAR-10 folder of 5 files of 3 records (chapter 5's): replicas that read 4
// images a step in all (--dp 2 --batch-size 2) finish an epoch every 3 steps, so a kill
// after step 4 or 5 lands mid-epoch and the run crosses epochs on both sides of it.
std::string tiny_data(const fs::path& dir) {
  const fs::path data = dir / "data";
  fs::create_directories(data);
  const data::Dataset train = data::generate_synthetic(11, data::Split::kTrain, 0, 5 * 3);
  for (int f = 0; f < 5; ++f) {
    data::write_records(data / ("data_batch_" + std::to_string(f + 1) + ".bin"), train, f * 3, 3);
  }
  return "--log-every 1 --batch-size 2 --data-dir " + data.string() + " ";
}

struct Mesh {
  int dp, tp, pp;
  int fail_rank;  // a rank that is not 0: rank 0 writes the checkpoints
  const char* name;
  const char* training = "";  // --optimizer and --zero, when not SGD at ZeRO-0
  int ranks() const { return dp * tp * pp; }
  std::string args() const {
    return "--dp " + std::to_string(dp) + " --tp " + std::to_string(tp) + " --pp " +
           std::to_string(pp) + (pp > 1 ? " --micro-batches 2 " : " ") + training + " ";
  }
};
void PrintTo(const Mesh& m, std::ostream* out) { *out << m.name; }

// The mesh as a KillNineJob (kill_nine.hpp): the run to be killed has rank `fail_rank`
// SIGKILL itself at the start of step 5, after the checkpoints of steps 1 to 5 began.
testing::KillNineJob mesh_job(const Mesh& m) {
  return {[m](const std::string& args) -> ProgramRun {
            return run_ranks("11_mesh", m.ranks(), m.args() + args);
          },
          [m](const std::string& args, const fs::path&, ProgramRun& killed) {
            const std::string fail = " --fail-rank " + std::to_string(m.fail_rank) +
                                     " --fail-at-step 5 --fail-how kill";
            killed = run_ranks("11_mesh", m.ranks(), m.args() + args + fail);
            ASSERT_NE(killed.exit_code, 0) << "not killed:\n" << killed.output;
            EXPECT_TRUE(has(killed, "fail-rank: rank " + std::to_string(m.fail_rank) +
                                        " fails (kill) at step 5")) << killed.output;
          }};
}

class MeshKillNine : public ::testing::TestWithParam<Mesh> {};

// Ten steps in one go; ten again saving every step, one rank killed at step 5, then the
// rest with --resume: the last checkpoint (parameters, moving averages, input position)
// and --save-params equal byte for byte (kill_nine.hpp's check, as chapter 5's).
// With momentum or Adam the files hold their state (format 3), so the byte-for-byte
// check covers the velocity or moments of every rank's slice, range or shard.
TEST_P(MeshKillNine, OneRankKilledThenResumeEndsByteForByteAsAnUninterruptedRun) {
  data::testing::TempDir dir;
  testing::expect_kill_nine_and_exact_resume(dir.path(), tiny_data(dir.path()), mesh_job(GetParam()));
  const std::string training = GetParam().training;
  const std::string last = (dir.path() / "straight" / model::checkpoint_name(10)).string();
  if (training.empty() || !fs::exists(last)) return;
  const model::TrainingState saved = model::load_checkpoint(last);
  const bool adam = training.find("adam") != std::string::npos;
  EXPECT_EQ(saved.optimizer, adam ? model::Optimizer::kAdam : model::Optimizer::kMomentum);
  EXPECT_EQ(saved.format_version, model::kOptimizerFormatVersion);
  EXPECT_EQ(saved.optimizer_state.size(), (adam ? 2u : 1u) * saved.params.size());
}

INSTANTIATE_TEST_SUITE_P(
    Meshes, MeshKillNine,
    ::testing::Values(Mesh{2, 2, 1, 3, "data2_x_tensor2"}, Mesh{2, 1, 2, 1, "data2_x_pipeline2"},
                      Mesh{2, 1, 1, 1, "data2"}, Mesh{1, 2, 2, 3, "tensor2_x_pipeline2"},
                      Mesh{2, 2, 2, 5, "data2_x_tensor2_x_pipeline2"},
                      Mesh{2, 2, 1, 1, "data2_x_tensor2_momentum", "--optimizer momentum"},
                      Mesh{2, 1, 2, 2, "data2_x_pipeline2_adam", "--optimizer adam"},
                      Mesh{2, 1, 1, 1, "data2_zero3_adam", "--zero 3 --optimizer adam"},
                      Mesh{1, 2, 2, 3, "tensor2_x_pipeline2_adam", "--optimizer adam"},
                      Mesh{2, 2, 1, 3, "data2_x_tensor2_zero1_adam", "--zero 1 --optimizer adam"},
                      Mesh{2, 2, 1, 1, "data2_x_tensor2_zero2_momentum", "--zero 2 --optimizer momentum"},
                      Mesh{2, 1, 2, 1, "data2_x_pipeline2_zero1_adam", "--zero 1 --optimizer adam"}),
    [](const ::testing::TestParamInfo<Mesh>& info) { return std::string(info.param.name); });

// A pipeline of two stages, micro-batches of one image: its numerics class is
// 01_single_gpu --accumulate 2, bit for bit, and 09_pipeline's on any number of stages.
const std::string kPipeline = "--micro-batches 2 --batch-size 2 --log-every 1 ";

// MeshKillNine holds a mesh's file to a file of the same mesh: a shard or slice put in the
// wrong place by the save and taken from that same wrong place by the resume would pass
// it. Here a ZeRO rank's shards are put together by one mesh and taken back by another
// that holds no shards (ZeRO-1 and ZeRO-2 are ZeRO-0's bits): Adam's moments must land in
// chapter 1's layout for the unsharded ranks to continue the run bit for bit.
TEST(MeshCheckpoint, ShardsPutTogetherResumeAMeshWithoutShardsBitForBit) {
  data::testing::TempDir dir;
  const std::string adam = "--dp 2 --optimizer adam --batch-size 2 --log-every 1 ";
  // A tensor rank's shards (ZeRO-2's path is ZeRO-1's and more) and a stage's.
  for (const std::string mesh : {"--tp 2 --zero 2", "--pp 2 --micro-batches 2 --zero 1"}) {
    const std::string zero0 = std::regex_replace(mesh, std::regex("--zero [12]"), "--zero 0");
    const fs::path folder = dir.path() / "sharded", straight = dir.path() / "straight.params",
                   resumed = dir.path() / "resumed.params";
    fs::remove_all(folder);
    const RankRun a = run_ranks("11_mesh", 4, adam + zero0 + " --steps 4 --save-params " +
                                                  straight.string());
    ASSERT_EQ(a.exit_code, 0) << mesh << "\n" << a.output;
    const RankRun b = run_ranks("11_mesh", 4, adam + mesh + " --steps 2 --checkpoint-dir " +
                                                  folder.string());
    ASSERT_EQ(b.exit_code, 0) << mesh << "\n" << b.output;
    const RankRun c = run_ranks("11_mesh", 4, adam + zero0 + " --steps 2 --resume --checkpoint-dir " +
                                                  folder.string() + " --save-params " +
                                                  resumed.string());
    ASSERT_EQ(c.exit_code, 0) << mesh << "\n" << c.output;
    EXPECT_EQ(c.last("global_step"), "4") << c.output;
    EXPECT_TRUE(bytes_of(straight) == bytes_of(resumed))
        << mesh << ": the unsharded mesh did not continue the sharded one's file bit for bit";
  }
}

// ZeRO-1 beside both tensor and pipeline parallelism: each stage's range of its tensor
// slice sharded over the replicas. Its bits are ZeRO-0's (chapter11_run_test), so its
// file is ZeRO-0's, byte for byte: the shards of the moving averages and of Adam's
// moments put together at the range's place in the slice, then in chapter 1's layout (a
// shard seeded or put from the flat layout at the range's offset, which in the slice's
// layout is another variable's, would differ). And resumed from that file it takes its
// shards back and ends on the straight ZeRO-0 run's file of step 4.
TEST(MeshCheckpoint, ZeroOneBesideBothIsZeroZerosFileAndResumes) {
  data::testing::TempDir dir;
  const std::string mesh = "--dp 2 --tp 2 --pp 2 --micro-batches 2 --optimizer adam "
                           "--batch-size 2 --log-every 1 --checkpoint-every 2 ";
  const fs::path straight = dir.path() / "straight", sharded = dir.path() / "sharded";
  const RankRun a = run_ranks("11_mesh", 8, mesh + "--zero 0 --steps 4 --checkpoint-dir " +
                                                straight.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const RankRun b = run_ranks("11_mesh", 8, mesh + "--zero 1 --steps 2 --checkpoint-dir " +
                                                sharded.string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const std::string two = model::checkpoint_name(2), four = model::checkpoint_name(4);
  EXPECT_TRUE(bytes_of(straight / two) == bytes_of(sharded / two))
      << "the ZeRO-1 mesh's file of step 2 is not ZeRO-0's";
  const RankRun c = run_ranks("11_mesh", 8, mesh + "--zero 1 --steps 2 --resume --checkpoint-dir " +
                                                sharded.string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(c.last("global_step"), "4") << c.output;
  EXPECT_TRUE(bytes_of(straight / four) == bytes_of(sharded / four))
      << "the resumed ZeRO-1 mesh did not end on the straight ZeRO-0 run's file";
}

// A checkpoint of the mesh is chapter 1's file, put together from the stages' ranges:
// 01_single_gpu resumes it and ends, bit for bit, where the mesh would have; and it holds
// the whole model, so a pipeline of three stages resumes it and ends there too. Another
// tensor degree resumes it as well (the numbers then differ within chapter 10's bound).
TEST(MeshCheckpoint, IsChapter1sFileAndResumesOnAnotherMesh) {
  data::testing::TempDir dir;
  const fs::path three = dir.path() / "three", straight = dir.path() / "straight";
  const RankRun a = run_ranks("11_mesh", 2, "--pp 2 " + kPipeline + "--steps 6 --checkpoint-dir " +
                                                straight.string() + " --save-params " +
                                                (dir.path() / "a.params").string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const RankRun b = run_ranks("11_mesh", 2, "--pp 2 " + kPipeline + "--steps 3 --checkpoint-dir " +
                                                three.string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const fs::path saved = three / model::checkpoint_name(3);
  ASSERT_TRUE(fs::exists(saved)) << b.output;
  // Each resume in a folder of its own holding that one file (a resume saves beside it).
  auto folder_with_step_3 = [&](const std::string& name) {
    const fs::path folder = dir.path() / name;
    fs::create_directories(folder);
    fs::copy_file(saved, folder / saved.filename());
    return folder;
  };

  const fs::path one = folder_with_step_3("chapter1");
  const ProgramRun c = testing::run("01_single_gpu", "--backend host --accumulate 2 --batch-size 2 "
                                                     "--steps 3 --resume --checkpoint-dir " +
                                                         one.string() + " --save-params " +
                                                         (dir.path() / "c.params").string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_TRUE(has(c, "resumed from " + (one / saved.filename()).string() + " at step 3")) << c.output;
  const std::string final_params = bytes_of(dir.path() / "a.params");
  ASSERT_FALSE(final_params.empty()) << a.output;
  EXPECT_TRUE(final_params == bytes_of(dir.path() / "c.params"))
      << "01_single_gpu did not continue the mesh's checkpoint bit for bit";
  const std::string six = model::checkpoint_name(6);
  EXPECT_TRUE(bytes_of(straight / six) == bytes_of(one / six))
      << "chapter 1's model.ckpt-6 differs from the mesh's";

  const fs::path stages = folder_with_step_3("three-stages");
  const RankRun d = run_ranks("11_mesh", 3, "--pp 3 " + kPipeline + "--steps 3 --resume --checkpoint-dir " +
                                                stages.string() + " --save-params " +
                                                (dir.path() / "d.params").string());
  ASSERT_EQ(d.exit_code, 0) << d.output;
  EXPECT_EQ(d.last("global_step"), "6") << d.output;
  EXPECT_TRUE(final_params == bytes_of(dir.path() / "d.params"))
      << "three stages did not continue two stages' checkpoint bit for bit";
  EXPECT_TRUE(bytes_of(straight / six) == bytes_of(stages / six));

  // Two replicas of one image each, each split over two tensor ranks: the same 2 images a
  // step, so the input continues; the numbers are the tensor split's own (chapter 10).
  const fs::path tensor = folder_with_step_3("tensor");
  const RankRun e = run_ranks("11_mesh", 4, "--dp 2 --tp 2 --batch-size 1 --steps 3 --resume "
                                            "--checkpoint-dir " + tensor.string());
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_EQ(e.last("global_step"), "6") << e.output;
  const model::TrainingState after = model::load_checkpoint(tensor / six);
  ASSERT_TRUE(after.input.has_value());
  EXPECT_EQ(*after.input, *model::load_checkpoint(straight / six).input)
      << "the input stands where two stages' run put it";
}

// Replicas that read another number of images per step than the checkpoint's could not
// continue its input: refused on every rank before step 0, said once, with what to give.
TEST(MeshCheckpoint, AnotherGlobalBatchIsRefusedBeforeStepZeroSayingWhatToDo) {
  data::testing::TempDir dir;
  const fs::path folder = dir.path() / "ckpt";
  const RankRun made = run_ranks("11_mesh", 2, "--pp 2 " + kPipeline + "--steps 1 --checkpoint-dir " +
                                                   folder.string());
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const RankRun other = run_ranks("11_mesh", 2, "--dp 2 --batch-size 2 --steps 1 --resume "
                                                "--checkpoint-dir " + folder.string(), 60);
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_TRUE(other.summaries.empty()) << other.output;
  EXPECT_FALSE(has(other, ": step ")) << "refused before step 0\n" << other.output;
  expect_said_once(other, "read 2 images per step in all (--dp x --batch-size); this mesh reads 4");
  EXPECT_TRUE(has(other, "Resume with a --dp and --batch-size whose product is 2")) << other.output;
  EXPECT_TRUE(has(other, model::checkpoint_name(1))) << "names the file\n" << other.output;
}

// One format with an optimizer's state too: the mesh's ZeRO-2 ranks put Adam's moments
// together, and 08_sharded at another stage takes them back and ends, bit for bit, where
// the mesh would have (chapter 8's towers are the mesh's ranks bit for bit). A resume with
// another --optimizer is refused before step 0 with chapter 8's sentence, said once.
TEST(MeshCheckpoint, WithAdamIsChapter8sFileAndAnotherOptimizerIsRefused) {
  data::testing::TempDir dir;
  const std::string data = tiny_data(dir.path());
  const std::string adam = "--dp 2 --zero 2 --optimizer adam ";
  const fs::path straight = dir.path() / "straight", three = dir.path() / "three";
  const RankRun a = run_ranks("11_mesh", 2, adam + data + "--steps 6 --checkpoint-dir " +
                                                straight.string());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const RankRun b = run_ranks("11_mesh", 2, adam + data + "--steps 3 --checkpoint-dir " +
                                                three.string());
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const fs::path saved = three / model::checkpoint_name(3);
  ASSERT_TRUE(fs::exists(saved)) << b.output;
  const fs::path chapter8 = dir.path() / "chapter8";
  fs::create_directories(chapter8);
  fs::copy_file(saved, chapter8 / saved.filename());

  const ProgramRun c = testing::run("08_sharded", "--backend host --devices 2 --zero 1 "
                                                  "--optimizer adam " + data + "--steps 3 "
                                                  "--resume --checkpoint-dir " + chapter8.string());
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_TRUE(has(c, "resumed from " + (chapter8 / saved.filename()).string() + " at step 3"))
      << c.output;
  const std::string six = model::checkpoint_name(6);
  const std::string expected = bytes_of(straight / six);
  ASSERT_FALSE(expected.empty()) << a.output;
  EXPECT_TRUE(expected == bytes_of(chapter8 / six))
      << "08_sharded did not continue the mesh's Adam checkpoint bit for bit";

  const RankRun other = run_ranks("11_mesh", 2, "--dp 2 --optimizer momentum " + data +
                                                    "--steps 1 --resume --checkpoint-dir " +
                                                    three.string(), 60);
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_FALSE(has(other, ": step ")) << "refused before step 0\n" << other.output;
  expect_said_once(other, "was written with --optimizer adam and this run trains with momentum");
  EXPECT_FALSE(fs::exists(three / model::checkpoint_name(4))) << "nothing written";
}

// A scheduler or a user may signal one rank alone: that rank finishes its step, the ranks
// agree to stop after the same step, rank 0 saves it, and --resume continues as if
// nothing had happened (chapter 5's stop, now on a pipeline's ranks).
TEST(MeshCheckpoint, ASigtermToOneRankStopsEveryRankAfterTheSameStepAndSaves) {
  data::testing::TempDir dir;
  const fs::path folder = dir.path() / "stopped";
  const std::string flags = "--pp 2 " + kPipeline + "--checkpoint-dir " + folder.string() + " ";
  const std::string command = testing::mpiexec_command("11_mesh", 2, flags + "--steps 100000");
  const int k = testing::stop_one_rank_with_sigterm(command, "11_mesh", folder);
  ASSERT_GT(k, 0);

  const fs::path resumed = dir.path() / "resumed.params", straight = dir.path() / "straight.params";
  const RankRun rest = run_ranks("11_mesh", 2, flags + "--steps 3 --resume --save-params " + resumed.string());
  ASSERT_EQ(rest.exit_code, 0) << rest.output;
  EXPECT_EQ(rest.last("global_step"), std::to_string(k + 3)) << rest.output;
  const RankRun whole = run_ranks("11_mesh", 2, "--pp 2 " + kPipeline + "--steps " + std::to_string(k + 3) +
                                                    " --save-params " + straight.string());
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const std::string final_params = bytes_of(straight);
  EXPECT_FALSE(final_params.empty());
  EXPECT_TRUE(final_params == bytes_of(resumed)) << "--save-params differ after the stop";
}

// --- A dead or stalled rank -------------------------------------------------------------

class MeshFaults : public ::testing::TestWithParam<Mesh> {};

std::string place_of(const Mesh& m) {
  // rank = (data x pp + pipeline) x tp + tensor (mpi/mesh_ranks.hpp)
  const int r = m.fail_rank;
  return "rank " + std::to_string(r) + " (data " + std::to_string(r / (m.tp * m.pp)) +
         ", pipeline " + std::to_string((r / m.tp) % m.pp) + ", tensor " +
         std::to_string(r % m.tp) + ")";
}

// Killed without a word: mpiexec sees the process end and takes the job down, naming the
// rank and the signal; the run's first lines say where on the mesh that rank stood.
TEST_P(MeshFaults, AKilledRankEndsTheJobNamingItAndItsPlace) {
  const Mesh m = GetParam();
  const RankRun r = run_ranks("11_mesh", m.ranks(), m.args() + "--batch-size 2 --steps 50 "
                                                    "--fail-at-step 2 --fail-how kill --fail-rank " +
                                                        std::to_string(m.fail_rank), 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.summaries.empty()) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "the job must end within the bound\n" << r.output;
  const std::string rank = std::to_string(m.fail_rank);
  EXPECT_TRUE(has(r, "fail-rank: rank " + rank + " fails (kill) at step 2")) << r.output;
  EXPECT_TRUE(has(r, "process rank " + rank)) << r.output;
  EXPECT_TRUE(has(r, "signal 9")) << r.output;
  EXPECT_TRUE(has(r, place_of(m))) << "the rank map names its place\n" << r.output;
}

// Alive but silent: mpiexec cannot tell. A rank that waits for it (in a tensor or data
// ring, or for a pipeline message) ends the job when the watchdog's 3 s are up, naming the
// rank that never came and its place on the mesh.
TEST_P(MeshFaults, AStalledRankEndsTheJobWithinTheWatchdogsBoundNamingIt) {
  const Mesh m = GetParam();
  const RankRun r = run_ranks("11_mesh", m.ranks(), m.args() + "--batch-size 2 --steps 50 "
                                                    "--collective-timeout 3 --fail-at-step 2 "
                                                    "--fail-how stall --fail-rank " +
                                                        std::to_string(m.fail_rank), 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.summaries.empty()) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "3 s of watchdog plus start-up\n" << r.output;
  // "towers: rank 0 of 4: tensor ring of step 2 did not finish within 3 s: rank 1 (data 0,
  // pipeline 0, tensor 1) had not reached it (stalled or dead) ..."
  const std::regex named("towers: rank \\d+ of " + std::to_string(m.ranks()) +
                         ": [^\n]* of step 2 did not finish within 3 s: [^\n]*" +
                         std::regex_replace(place_of(m), std::regex("[()]"), "\\$&"));
  EXPECT_TRUE(std::regex_search(r.output, named)) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Meshes, MeshFaults,
    ::testing::Values(Mesh{2, 2, 1, 1, "data2_x_tensor2"}, Mesh{2, 1, 2, 1, "data2_x_pipeline2"},
                      Mesh{2, 1, 2, 2, "data2_x_pipeline2_first_stage"}),
    [](const ::testing::TestParamInfo<Mesh>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace towers
