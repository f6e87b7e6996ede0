// SPDX-License-Identifier: MIT
// Exercise 07 — reference solution: chapter 7's capture.
#include "capture_step.hpp"

namespace towers::exercises {

std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients) {
  return capture_graph(runtime, meet, [&] {
    meet.record(fork);  // the fork: every tower stream that waits for it joins the capture
    for (std::size_t i = 0; i < towers.size(); ++i) {
      towers[i].stream->wait(fork);
      tower_loss(static_cast<int>(i));            // adds nodes; runs nothing
      towers[i].stream->record(*towers[i].done);  // the end of tower i's branch
    }
    // The join: `meet` waits for every branch, which also joins them back to the origin.
    for (const StepTower& tower : towers) meet.wait(*tower.done);
    average_gradients(meet);
  });
}

}  // namespace towers::exercises
