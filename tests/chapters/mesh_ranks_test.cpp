// SPDX-License-Identifier: MIT
// Chapter 11's mesh of ranks (src/mpi/mesh_ranks.hpp), run by ctest under mpiexec -n 8:
// the coordinates of every rank (tensor innermost, then the stage, the data replica
// outermost), and for a mesh of 2 x 2 x 2 the members of each rank's three
// communicators, in order, asked of MPI itself (MPI_Allgather of the world ranks over
// each one). Then the other shapes of 8 ranks, and a job whose size is not the mesh's.
//
// Every rank runs every test; mpi_test_main.cpp's main() fails the job when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <stdexcept>
#include <vector>

#include "mpi/mesh_ranks.hpp"
#include "../mpi_test_main.hpp"

namespace towers {
namespace {

using testing::world_rank;
using testing::world_size;

// The world ranks of `comm`'s members, by their index in it.
std::vector<int> members(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> world(static_cast<std::size_t>(size));
  int me = world_rank();
  MPI_Allgather(&me, 1, MPI_INT, world.data(), 1, MPI_INT, comm);
  return world;
}

TEST(MeshRanks, CoordinatesPutTheTensorIndexInnermost) {
  const MeshShape shape{.dp = 2, .pp = 2, .tp = 2};
  // rank = (data x pp + pipeline) x tp + tensor, written out for all eight.
  const std::vector<MeshCoordinates> expected = {
      {0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(mesh_coordinates(r, shape), expected[static_cast<std::size_t>(r)]) << "rank " << r;
    EXPECT_EQ(mesh_rank(mesh_coordinates(r, shape), shape), r);
  }
  // Another shape, not a cube: 3 replicas of 1 stage of 2 tensor ranks.
  EXPECT_EQ(mesh_coordinates(5, {.dp = 3, .pp = 1, .tp = 2}), (MeshCoordinates{2, 0, 1}));
  EXPECT_THROW(mesh_coordinates(8, shape), std::invalid_argument);
  EXPECT_THROW(mesh_coordinates(0, {.dp = 0, .pp = 1, .tp = 1}), std::invalid_argument);
}

TEST(MeshRanks, TwoByTwoByTwoSplitsEightRanksIntoGroupsOfTwo) {
  ASSERT_EQ(world_size(), 8) << "run under mpiexec -n 8";
  const MeshShape shape{.dp = 2, .pp = 2, .tp = 2};
  const MeshRanks mesh(MPI_COMM_WORLD, shape);
  const MeshCoordinates at = mesh.at();
  EXPECT_EQ(at, mesh_coordinates(world_rank(), shape));
  auto with = [&](int data, int pipeline, int tensor) {
    return mesh_rank({data, pipeline, tensor}, shape);
  };
  // Each communicator: the two ranks that differ from this one on its dimension alone,
  // indexed by their coordinate there.
  EXPECT_EQ(members(mesh.tensor()),
            (std::vector<int>{with(at.data, at.pipeline, 0), with(at.data, at.pipeline, 1)}));
  EXPECT_EQ(members(mesh.pipeline()),
            (std::vector<int>{with(at.data, 0, at.tensor), with(at.data, 1, at.tensor)}));
  EXPECT_EQ(members(mesh.data()),
            (std::vector<int>{with(0, at.pipeline, at.tensor), with(1, at.pipeline, at.tensor)}));
  // Concretely, for rank 5 = (1, 0, 1): tensor {4, 5}, pipeline {5, 7}, data {1, 5}.
  if (world_rank() == 5) {
    EXPECT_EQ(members(mesh.tensor()), (std::vector<int>{4, 5}));
    EXPECT_EQ(members(mesh.pipeline()), (std::vector<int>{5, 7}));
    EXPECT_EQ(members(mesh.data()), (std::vector<int>{1, 5}));
  } else {  // every rank takes part in the same collectives
    members(mesh.tensor());
    members(mesh.pipeline());
    members(mesh.data());
  }
}

TEST(MeshRanks, EveryShapeOfEightGivesCommunicatorsOfItsDegrees) {
  ASSERT_EQ(world_size(), 8) << "run under mpiexec -n 8";
  for (const MeshShape shape : {MeshShape{8, 1, 1}, MeshShape{1, 1, 8}, MeshShape{1, 8, 1},
                                MeshShape{4, 1, 2}, MeshShape{2, 4, 1}, MeshShape{1, 2, 4}}) {
    const MeshRanks mesh(MPI_COMM_WORLD, shape);
    int data = 0, pipeline = 0, tensor = 0, index = -1;
    MPI_Comm_size(mesh.data(), &data);
    MPI_Comm_size(mesh.pipeline(), &pipeline);
    MPI_Comm_size(mesh.tensor(), &tensor);
    EXPECT_EQ(data, shape.dp);
    EXPECT_EQ(pipeline, shape.pp);
    EXPECT_EQ(tensor, shape.tp);
    MPI_Comm_rank(mesh.tensor(), &index);
    EXPECT_EQ(index, mesh.at().tensor);
    MPI_Comm_rank(mesh.data(), &index);
    EXPECT_EQ(index, mesh.at().data);
    MPI_Comm_rank(mesh.pipeline(), &index);
    EXPECT_EQ(index, mesh.at().pipeline);
  }
}

TEST(MeshRanks, RefusesAJobOfAnotherSizeBeforeAnyCollective) {
  // Every rank throws alike, so none waits in a split the others never call.
  EXPECT_THROW(MeshRanks(MPI_COMM_WORLD, {.dp = 2, .pp = 1, .tp = 2}), std::invalid_argument);
}

}  // namespace
}  // namespace towers
