// SPDX-License-Identifier: MIT
#include "mpi/mesh_ranks.hpp"

#include <stdexcept>
#include <string>

#include "mpi/mpi_check.hpp"

namespace towers {
namespace {

void check_shape(const MeshShape& shape) {
  if (shape.dp < 1 || shape.pp < 1 || shape.tp < 1) {
    throw std::invalid_argument("a mesh's degrees are at least 1 (dp " + std::to_string(shape.dp) +
                                ", pp " + std::to_string(shape.pp) + ", tp " +
                                std::to_string(shape.tp) + ")");
  }
}

// One dimension's communicator: the ranks with the same `colour` (the other two
// coordinates), ordered by `key` (this rank's coordinate on the dimension).
MPI_Comm split(MPI_Comm world, int colour, int key) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(world, colour, key, &comm));
  MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  return comm;
}

}  // namespace

MeshCoordinates mesh_coordinates(int rank, const MeshShape& shape) {
  check_shape(shape);
  if (rank < 0 || rank >= shape.ranks()) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " is not on a mesh of " +
                                std::to_string(shape.ranks()) + " ranks");
  }
  MeshCoordinates at;
  at.tensor = rank % shape.tp;
  at.pipeline = (rank / shape.tp) % shape.pp;
  at.data = rank / (shape.tp * shape.pp);
  return at;
}

int mesh_rank(const MeshCoordinates& at, const MeshShape& shape) {
  return (at.data * shape.pp + at.pipeline) * shape.tp + at.tensor;
}

std::string mesh_rank_name(int rank, const MeshShape& shape) {
  const MeshCoordinates at = mesh_coordinates(rank, shape);
  return "rank " + std::to_string(rank) + " (data " + std::to_string(at.data) + ", pipeline " +
         std::to_string(at.pipeline) + ", tensor " + std::to_string(at.tensor) + ")";
}

MeshRanks::MeshRanks(MPI_Comm world, const MeshShape& shape) : shape_(shape) {
  check_shape(shape);
  int size = 0;
  MPI_CHECK(MPI_Comm_size(world, &size));
  if (size != shape.ranks()) {
    throw std::invalid_argument("a mesh of dp " + std::to_string(shape.dp) + " x pp " +
                                std::to_string(shape.pp) + " x tp " + std::to_string(shape.tp) +
                                " takes " + std::to_string(shape.ranks()) + " ranks, and the job has " +
                                std::to_string(size));
  }
  MPI_CHECK(MPI_Comm_rank(world, &rank_));
  at_ = mesh_coordinates(rank_, shape);
  // The colour names the group: every coordinate but the dimension's own.
  data_ = split(world, at_.pipeline * shape.tp + at_.tensor, at_.data);
  pipeline_ = split(world, at_.data * shape.tp + at_.tensor, at_.pipeline);
  tensor_ = split(world, at_.data * shape.pp + at_.pipeline, at_.tensor);
}

MeshRanks::~MeshRanks() {
  // Nothing useful to do if a free fails at the end of the run.
  for (MPI_Comm* comm : {&data_, &pipeline_, &tensor_}) {
    if (*comm != MPI_COMM_NULL) (void)MPI_Comm_free(comm);
  }
}

}  // namespace towers
