// SPDX-License-Identifier: MIT
// mutant: each tower's loss is captured from a host thread of its own, to enqueue the towers "in parallel"
#include "capture_step.hpp"

#include <thread>
#include <vector>

namespace towers::exercises {

std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients) {
  return capture_graph(runtime, meet, [&] {
    meet.record(fork);
    for (const StepTower& tower : towers) tower.stream->wait(fork);
    // The mistake: a capture is fed from one host thread; these call tower_loss at once.
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < towers.size(); ++i) {
      threads.emplace_back([&, i] {
        tower_loss(static_cast<int>(i));
        towers[i].stream->record(*towers[i].done);
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const StepTower& tower : towers) meet.wait(*tower.done);
    average_gradients(meet);
  });
}

}  // namespace towers::exercises
