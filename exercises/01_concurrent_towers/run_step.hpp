// SPDX-License-Identifier: MIT
// Exercise 01: concurrent towers — the step from chapter 2 to chapter 3.
//
// Chapter 2's tower loop waits for each tower before it starts the next, so the towers
// take turns. Chapter 3's loop only *enqueues*: each tower's work goes on its own stream
// and the loop moves on at once, so the towers run at the same time. They meet once a
// step, where the gradients are averaged: the averaging stream waits for each tower's
// `done` event, on the device, and the host does not wait at all.
//
// run_step() is that loop, cut free of the model: the grader hands in what a tower does
// (tower_loss) and what the meeting does (average_gradients), and watches the schedule
// with a rendezvous probe and a trace.
#pragma once

#include <functional>
#include <span>

#include "runtime/event.hpp"
#include "runtime/stream.hpp"

namespace towers::exercises {

/// What run_step needs of tower i.
struct StepTower {
  Stream* stream = nullptr;  ///< tower i's stream: tower_loss(i) enqueues its work here
  Event* done = nullptr;     ///< to record on `stream` after tower i's work: "grads final"
};

/// Enqueues tower i's forward and backward pass on towers[i].stream; returns at once.
using TowerLoss = std::function<void(int tower)>;
/// Enqueues the average of every tower's gradients on `meet`; returns at once.
using AverageGradients = std::function<void(Stream& meet)>;

/// Enqueues one training step of towers.size() towers and returns at once, before any of
/// the work has run:
///   1. for each tower i: tower_loss(i), then record towers[i].done on towers[i].stream;
///   2. on `meet`: wait for every tower's done event, then average_gradients(meet).
/// The host never waits inside run_step; the caller synchronizes `meet` when it needs the
/// average (the one wait of the step). Called from one host thread.
void run_step(std::span<const StepTower> towers, const TowerLoss& tower_loss, Stream& meet,
              const AverageGradients& average_gradients);

}  // namespace towers::exercises
