// SPDX-License-Identifier: MIT
#include "harness/graph_file.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace towers {

void save_graph_if_asked(const std::string& path, const Graph& graph) {
  if (path.empty()) return;
  std::ofstream out(path);
  const std::vector<GraphNode> nodes = graph.nodes();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const GraphNode& node = nodes[i];
    out << i << '\t' << node.name << '\t' << node.device << '\t' << node.stream << '\t'
        << node.tower << '\t';
    if (node.dependencies.empty()) out << '-';
    for (std::size_t d = 0; d < node.dependencies.size(); ++d) {
      out << (d ? "," : "") << node.dependencies[d];
    }
    out << '\n';
  }
  out.close();
  if (!out) throw std::runtime_error("could not write the graph to " + path + ": check the folder exists");
  std::printf("saved the graph (%zu nodes) to %s\n", nodes.size(), path.c_str());
}

}  // namespace towers
