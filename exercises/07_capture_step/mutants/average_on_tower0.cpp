// SPDX-License-Identifier: MIT
// mutant: the average runs on tower 0's stream instead of the meeting stream.
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
      towers[i].stream->record(*towers[i].done);
    }
    for (const StepTower& tower : towers) towers[0].stream->wait(*tower.done);
    average_gradients(*towers[0].stream);
    towers[0].stream->record(fork);
    meet.wait(fork);
  });
}

}  // namespace towers::exercises
