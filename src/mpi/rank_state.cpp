// SPDX-License-Identifier: MIT
#include "mpi/rank_state.hpp"

#include <array>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/usage_error.hpp"
#include "mpi/mpi_check.hpp"

namespace towers {

namespace {

enum Outcome : int { kSettled = 0, kRefused = 1 };

std::array<std::uint64_t, 5> fields(const data::InputPosition& p) {
  return {p.seed, p.examples, p.global_batch, p.epoch, p.position};
}

data::InputPosition position_of(const std::uint64_t* f) { return {f[0], f[1], f[2], f[3], f[4]}; }

std::string describe(const data::InputPosition& p) {
  return "epoch " + std::to_string(p.epoch) + ", position " + std::to_string(p.position) +
         " (global batch " + std::to_string(p.global_batch) + ", seed " + std::to_string(p.seed) + ")";
}

}  // namespace

void settle_on_rank_zero(const MpiJob& job, const std::function<void()>& settle) {
  int outcome = kSettled;
  std::string message;
  std::exception_ptr error;
  if (job.rank() == 0) {
    try {
      settle();
    } catch (const std::exception& e) {
      outcome = kRefused;
      message = e.what();
      error = std::current_exception();
    }
  }
  // Before the first step, and rank 0 only touches files: no watchdog needed here.
  MPI_CHECK(MPI_Bcast(&outcome, 1, MPI_INT, 0, job.comm()));
  if (outcome == kSettled) return;
  int length = static_cast<int>(message.size());
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, job.comm()));
  message.resize(static_cast<std::size_t>(length));
  MPI_CHECK(MPI_Bcast(message.data(), length, MPI_CHAR, 0, job.comm()));
  if (error) std::rethrow_exception(error);
  throw UsageError(message);  // the other ranks: quiet (rank 0 says it), and gone too
}

void broadcast_state(const MpiJob& job, std::optional<model::TrainingState>& state) {
  // [has state, has input, global_step, parameter count, optimizer, its state's floats,
  // format version], then the input, then the values.
  std::array<std::int64_t, 7> head{};
  if (job.rank() == 0 && state) {
    head = {1, state->input ? 1 : 0, state->global_step,
            static_cast<std::int64_t>(state->params.size()),
            static_cast<std::int64_t>(state->optimizer),
            static_cast<std::int64_t>(state->optimizer_state.size()),
            static_cast<std::int64_t>(state->format_version)};
  }
  MPI_CHECK(MPI_Bcast(head.data(), static_cast<int>(head.size()), MPI_INT64_T, 0, job.comm()));
  if (head[0] == 0) {
    state.reset();
    return;
  }
  if (job.rank() != 0) {
    state.emplace();
    state->global_step = head[2];
    state->params.resize(static_cast<std::size_t>(head[3]));
    state->moving_averages.resize(static_cast<std::size_t>(head[3]));
    state->optimizer = static_cast<model::Optimizer>(head[4]);
    state->optimizer_state.resize(static_cast<std::size_t>(head[5]));
    state->format_version = static_cast<std::uint32_t>(head[6]);
  }
  if (head[1] != 0) {
    std::array<std::uint64_t, 5> input{};
    if (job.rank() == 0) input = fields(*state->input);
    MPI_CHECK(MPI_Bcast(input.data(), 5, MPI_UINT64_T, 0, job.comm()));
    state->input = position_of(input.data());
  }
  const int count = static_cast<int>(head[3]);
  MPI_CHECK(MPI_Bcast(state->params.data(), count, MPI_FLOAT, 0, job.comm()));
  MPI_CHECK(MPI_Bcast(state->moving_averages.data(), count, MPI_FLOAT, 0, job.comm()));
  // Momentum's velocity or Adam's two moments (none for SGD): a rank that keeps some of
  // them takes its part when it is made, as it takes its part of the moving averages.
  if (head[5] > 0) {
    MPI_CHECK(MPI_Bcast(state->optimizer_state.data(), static_cast<int>(head[5]), MPI_FLOAT, 0,
                        job.comm()));
  }
}

data::InputPosition job_input_position(const MpiJob& job, const data::InputPosition& mine,
                                       Watchdog& watchdog, int step) {
  const std::array<std::uint64_t, 5> own = fields(mine);
  std::vector<std::uint64_t> all(job.rank() == 0 ? 5 * static_cast<std::size_t>(job.size()) : 0);
  {
    Watchdog::Scope waiting(watchdog, "MPI_Gather of the input positions", step);
    MPI_CHECK(MPI_Gather(own.data(), 5, MPI_UINT64_T, all.data(), 5, MPI_UINT64_T, 0, job.comm()));
  }
  if (job.rank() != 0) return mine;
  std::string differ;
  for (int r = 1; r < job.size(); ++r) {
    const data::InputPosition theirs = position_of(all.data() + 5 * r);
    if (!(theirs == mine)) differ += "; rank " + std::to_string(r) + " at " + describe(theirs);
  }
  if (!differ.empty()) {
    throw std::logic_error("the ranks' inputs stand at different places after step " +
                           std::to_string(step) + ", so no checkpoint can resume them all: rank 0 at " +
                           describe(mine) + differ);
  }
  return mine;
}

}  // namespace towers
