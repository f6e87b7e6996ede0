// SPDX-License-Identifier: MIT
// Exercise 12 predicts without towers' plan. The grader links the lesson library
// (towers_parallel: the ring it runs, the model's sizes it gives you), which holds chapter
// 11's mesh_plan.cpp too. These definitions are linked first, so the linker never takes
// that file from the library: a stub that calls the plan gets this sentence, not the answer.
#include <stdexcept>
#include <string>

#include "parallel/mesh_plan.hpp"

namespace towers {
namespace {

[[noreturn]] void refuse(const char* name) {
  throw std::logic_error(std::string("exercise 12: ") + name +
                         "() is towers' own plan, the answer to this exercise; write the "
                         "formula in exercises/12_mesh_plan/stub.cpp from the chapters instead");
}

}  // namespace

std::string mesh_problem(const MeshConfig&) { refuse("mesh_problem"); }
MeshPlan make_mesh_plan(const MeshConfig&) { refuse("make_mesh_plan"); }
std::int64_t network_activation_floats(int) { refuse("network_activation_floats"); }
std::int64_t tensor_slice_floats(int) { refuse("tensor_slice_floats"); }
std::vector<MeshConfig> mesh_shapes(int, const MeshConfig&) { refuse("mesh_shapes"); }

}  // namespace towers
