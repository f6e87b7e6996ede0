// SPDX-License-Identifier: MIT
// save_graph_if_asked: writes a captured graph's nodes and dependencies to a text file
// (chapter 7's --save-graph), so tests and learners can walk the graph a chapter built.
//
// One line per node, in Graph::nodes() order, tab-separated:
//   index  name  device  stream  tower  dependencies (comma-separated indices, or "-")
// device, stream and tower are -1 where the backend does not say (cuda).
#pragma once

#include <string>

#include "runtime/graph.hpp"

namespace towers {

/// Writes `graph` to `path` when `path` is not empty. Throws std::runtime_error naming the
/// file when it cannot be written.
void save_graph_if_asked(const std::string& path, const Graph& graph);

}  // namespace towers
