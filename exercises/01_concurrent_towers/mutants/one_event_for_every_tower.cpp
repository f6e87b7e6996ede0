// SPDX-License-Identifier: MIT
// mutant: every tower records tower 0's done event, so `meet` waits only for its last record (the last tower)
#include "run_step.hpp"

namespace towers::exercises {

void run_step(std::span<const StepTower> towers, const TowerLoss& tower_loss, Stream& meet,
              const AverageGradients& average_gradients) {
  if (towers.empty()) return;
  Event& done = *towers[0].done;  // the mistake: one event for all, re-recorded per tower
  for (std::size_t i = 0; i < towers.size(); ++i) {
    tower_loss(static_cast<int>(i));
    towers[i].stream->record(done);
  }
  meet.wait(done);
  average_gradients(meet);
}

}  // namespace towers::exercises
