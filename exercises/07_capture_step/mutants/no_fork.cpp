// SPDX-License-Identifier: MIT
// mutant: no fork: the tower streams never join, so their work runs eagerly.
#include "capture_step.hpp"

namespace towers::exercises {

std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients) {
  (void)fork;
  return capture_graph(runtime, meet, [&] {
    for (std::size_t i = 0; i < towers.size(); ++i) {
      tower_loss(static_cast<int>(i));
      towers[i].stream->record(*towers[i].done);
    }
    for (const StepTower& tower : towers) meet.wait(*tower.done);
    average_gradients(meet);
  });
}

}  // namespace towers::exercises
