// SPDX-License-Identifier: MIT
// mutant: the graph is launched once before it is returned, "to check that it works"
#include "capture_step.hpp"

namespace towers::exercises {

std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients) {
  std::unique_ptr<Graph> graph = capture_graph(runtime, meet, [&] {
    meet.record(fork);
    for (std::size_t i = 0; i < towers.size(); ++i) {
      towers[i].stream->wait(fork);
      tower_loss(static_cast<int>(i));
      towers[i].stream->record(*towers[i].done);
    }
    for (const StepTower& tower : towers) meet.wait(*tower.done);
    average_gradients(meet);
  });
  graph->launch(meet);  // the mistake: a step runs before the caller launched one
  meet.synchronize();
  return graph;
}

}  // namespace towers::exercises
