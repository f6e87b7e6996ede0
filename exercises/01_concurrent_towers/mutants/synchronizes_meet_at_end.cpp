// SPDX-License-Identifier: MIT
// mutant: run_step synchronizes `meet` before it returns: right numbers, but every step ends before the next is enqueued
#include "run_step.hpp"

namespace towers::exercises {

void run_step(std::span<const StepTower> towers, const TowerLoss& tower_loss, Stream& meet,
              const AverageGradients& average_gradients) {
  for (std::size_t i = 0; i < towers.size(); ++i) {
    tower_loss(static_cast<int>(i));
    towers[i].stream->record(*towers[i].done);
  }
  for (const StepTower& tower : towers) meet.wait(*tower.done);
  average_gradients(meet);
  meet.synchronize();  // the mistake: "the step is done when run_step returns"
}

}  // namespace towers::exercises
