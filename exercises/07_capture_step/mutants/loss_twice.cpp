// SPDX-License-Identifier: MIT
// mutant: each tower's loss is enqueued twice, as a warm-up and for real.
#include "capture_step.hpp"

namespace towers::exercises {

std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients) {
  return capture_graph(runtime, meet, [&] {
    meet.record(fork);
    for (std::size_t i = 0; i < towers.size(); ++i) {
      towers[i].stream->wait(fork);
      tower_loss(static_cast<int>(i));
      tower_loss(static_cast<int>(i));
      towers[i].stream->record(*towers[i].done);
    }
    for (const StepTower& tower : towers) meet.wait(*tower.done);
    average_gradients(meet);
  });
}

}  // namespace towers::exercises
