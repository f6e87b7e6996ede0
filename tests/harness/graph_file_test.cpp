// SPDX-License-Identifier: MIT
// harness/graph_file: one line per node, tab-separated, dependencies by index; no file
// without a path; a message naming the file when it cannot be written.
#include "harness/graph_file.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "base/temp_dir.hpp"

namespace towers {
namespace {

class FixedGraph : public Graph {
 public:
  void launch(Stream&) override {}
  std::vector<GraphNode> nodes() const override {
    return {{"copy images", 0, 1, 0, {}}, {"conv1", 0, 1, 0, {0}}, {"average", 1, 0, -1, {0, 1}}};
  }
};

TEST(GraphFile, WritesEveryNodeWithItsDependencies) {
  base::TempDir dir("graph_file_test");
  const std::string path = (dir.path() / "step.graph").string();
  testing::internal::CaptureStdout();
  save_graph_if_asked(path, FixedGraph());
  testing::internal::GetCapturedStdout();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(),
            "0\tcopy images\t0\t1\t0\t-\n"
            "1\tconv1\t0\t1\t0\t0\n"
            "2\taverage\t1\t0\t-1\t0,1\n");
}

TEST(GraphFile, NoPathNoFileAndABadPathIsNamed) {
  EXPECT_NO_THROW(save_graph_if_asked("", FixedGraph()));
  try {
    save_graph_if_asked("/nonexistent-folder/step.graph", FixedGraph());
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/step.graph"), std::string::npos);
  }
}

}  // namespace
}  // namespace towers
