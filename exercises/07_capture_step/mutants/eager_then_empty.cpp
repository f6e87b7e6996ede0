// SPDX-License-Identifier: MIT
// mutant: the step runs eagerly once and an empty graph is captured afterwards.
#include "capture_step.hpp"

namespace towers::exercises {

std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients) {
  meet.record(fork);
  for (std::size_t i = 0; i < towers.size(); ++i) {
    towers[i].stream->wait(fork);
    tower_loss(static_cast<int>(i));
    towers[i].stream->record(*towers[i].done);
  }
  for (const StepTower& tower : towers) meet.wait(*tower.done);
  average_gradients(meet);
  return capture_graph(runtime, meet, [] {});
}

}  // namespace towers::exercises
