// SPDX-License-Identifier: MIT
// mutant: the done events are recorded on the first step only, then reused stale
#include "run_step.hpp"

namespace towers::exercises {

namespace {
bool recorded = false;  // shared by every call: the bug
}  // namespace

void run_step(std::span<const StepTower> towers, const TowerLoss& tower_loss, Stream& meet,
              const AverageGradients& average_gradients) {
  for (std::size_t i = 0; i < towers.size(); ++i) {
    tower_loss(static_cast<int>(i));          // returns at once: the loop only enqueues
    if (!recorded) towers[i].stream->record(*towers[i].done);
  }
  // Where towers meet: `meet` waits for each tower on the device; the host waits for none.
  recorded = true;
  for (const StepTower& tower : towers) meet.wait(*tower.done);
  average_gradients(meet);
}

}  // namespace towers::exercises
