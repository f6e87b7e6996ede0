// SPDX-License-Identifier: MIT
// Exercise 07: capture the step — from chapter 3 to chapter 7.
//
// Chapter 3's tower loop runs every step: it enqueues each tower's work and the average.
// Chapter 7 runs it once, inside capture_graph(), so that the whole step — N tower
// branches joining at the average — becomes a graph that each step launches with one
// host call, as TensorFlow 1 builds its graph once and sess.run()s it every step.
//
// capture_step() is that capture, cut free of the model: the grader hands in what a tower
// does (tower_loss) and what the meeting does (average_gradients), launches the graph you
// return, and walks its nodes.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "runtime/graph.hpp"

namespace towers::exercises {

/// What capture_step needs of tower i.
struct StepTower {
  Stream* stream = nullptr;  ///< tower i's stream: tower_loss(i) enqueues its work here
  Event* done = nullptr;     ///< to record on `stream` after tower i's work: "grads final"
};

/// Enqueues tower i's forward and backward pass on towers[i].stream; returns at once.
using TowerLoss = std::function<void(int tower)>;
/// Enqueues the average of every tower's gradients on `meet`; returns at once.
using AverageGradients = std::function<void(Stream& meet)>;

/// Captures one training step of towers.size() towers on `meet` (capture_graph) and
/// returns the graph; nothing of the step runs before the graph is launched. Inside the
/// capture:
///   1. record `fork` on `meet`, and make each tower's stream wait for it (this joins the
///      tower's stream to the capture);
///   2. for each tower i: tower_loss(i), then record towers[i].done on towers[i].stream;
///   3. on `meet`: wait for every tower's done event, then average_gradients(meet).
/// tower_loss and average_gradients are called exactly once per tower / once in all,
/// however often the graph is launched. Called from one host thread.
std::unique_ptr<Graph> capture_step(Runtime& runtime, std::span<const StepTower> towers,
                                    Stream& meet, Event& fork, const TowerLoss& tower_loss,
                                    const AverageGradients& average_gradients);

}  // namespace towers::exercises
