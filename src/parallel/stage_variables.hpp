// SPDX-License-Identifier: MIT
// StageVariables: chapter 9's placement with the real model (--model cifar). The layers
// are cut into pipeline stages, and each stage owns, updates and saves only its layers'
// range of the flat parameter buffer (pipeline_split.hpp: stage_parameters), with the
// moving averages of that range: every variable has exactly one owner. Each stage keeps
// the buffer's full length on its device so that a layer finds its variables at their
// usual offsets; what lies outside its range is the starting state, never updated.
// Putting the state together takes each stage's range; taking it back gives every stage
// the whole state, as the run started. Used from one host thread. Introduced in chapter 9.
#pragma once

#include <vector>

#include "parallel/pipeline_split.hpp"
#include "parallel/placement.hpp"
#include "runtime/device.hpp"
#include "runtime/stream.hpp"

namespace towers {

/// A range of the variables per pipeline stage. Introduced in chapter 9.
class StageVariables : public Placement {
 public:
  /// Adds the next stage: its `range`, its variables on `device` (kNumParameters floats
  /// each, the ledger's parameters and optimizer state), copied through `stream`. Without
  /// `keep_averages` the stage's moving averages are kept elsewhere (chapter 11's ZeRO-1
  /// keeps a shard of its range): none are allocated, averages(s) is null, and the state
  /// is moved without them.
  void add_stage(Device& device, Stream& stream, ParameterRange range, bool keep_averages = true);

  /// Stage `s`'s parameters, [kNumParameters] on its device (its range is its own).
  float* params(int s) { return stages_[s].params.as<float>(); }
  /// Stage `s`'s moving averages, laid out as the parameters (null when kept elsewhere).
  float* averages(int s) { return stages_[s].averages.as<float>(); }
  /// The range stage `s` owns.
  const ParameterRange& range(int s) const { return stages_[s].range; }

  std::string where() const override { return "a range of layers per stage"; }
  void state_to_host(model::TrainingState& state) override;
  void params_to_host(float* params) override;
  void load_from_host(const model::TrainingState& state) override;

 private:
  struct Stage {
    ParameterRange range;
    Stream* stream = nullptr;
    Buffer params, averages;
  };
  // Each stage's range of `buffer`'s values into out[range], then waits for every stage.
  void read_ranges(Buffer Stage::*buffer, float* out);
  std::vector<Stage> stages_;
};

}  // namespace towers
