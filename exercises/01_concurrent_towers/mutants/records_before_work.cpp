// SPDX-License-Identifier: MIT
// mutant: each tower's done event is recorded before its work is enqueued
#include "run_step.hpp"

namespace towers::exercises {

void run_step(std::span<const StepTower> towers, const TowerLoss& tower_loss, Stream& meet,
              const AverageGradients& average_gradients) {
  for (std::size_t i = 0; i < towers.size(); ++i) {
    towers[i].stream->record(*towers[i].done);  // "tower i's gradients are final"
    tower_loss(static_cast<int>(i));
  }
  // Where towers meet: `meet` waits for each tower on the device; the host waits for none.
  for (const StepTower& tower : towers) meet.wait(*tower.done);
  average_gradients(meet);
}

}  // namespace towers::exercises
