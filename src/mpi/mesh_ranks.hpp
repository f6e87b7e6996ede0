// SPDX-License-Identifier: MIT
// MeshRanks: the ranks of a job placed on a mesh of data x pipeline x tensor (chapter 11).
//
// Chapter 5 gave every device a process and one communicator, MPI_COMM_WORLD. A composed
// run gives each process three coordinates and each dimension of the mesh a communicator
// of its own: the ranks that differ only in their tensor index meet in the tensor
// communicator (chapter 10's g and f), those that differ only in their data index in the
// data communicator (chapter 5's all-reduce of the gradients), those that differ only in
// their stage in the pipeline communicator (chapter 9's activations and gradients).
//
// The tensor index is innermost, as Megatron-LM orders its ranks: the t ranks of one
// tensor group are neighbours, world ranks r .. r + t - 1, so on a machine of GPUs joined
// by a fast link they share it, and the chattiest dimension (two all-reduces inside every
// pass) stays on it. Then the stage, then the data replica outermost:
//
//   rank = (data x pp + pipeline) x tp + tensor
//
// Each communicator is MPI_Comm_split of MPI_COMM_WORLD, its colour the other two
// coordinates and its key this rank's own coordinate, so a rank's index in the
// communicator of a dimension is its coordinate on it. Introduced in chapter 11.
#pragma once

#include <mpi.h>

#include <string>

namespace towers {

/// The degrees of a mesh: data replicas, pipeline stages, tensor ranks.
struct MeshShape {
  int dp = 1;  ///< data-parallel degree
  int pp = 1;  ///< pipeline degree
  int tp = 1;  ///< tensor-parallel degree
  /// How many ranks the mesh takes: dp x pp x tp.
  int ranks() const { return dp * pp * tp; }
};

/// One rank's place on the mesh.
struct MeshCoordinates {
  int data = 0;      ///< which replica (0..dp-1)
  int pipeline = 0;  ///< which stage (0..pp-1)
  int tensor = 0;    ///< which tensor rank of its group (0..tp-1)
  /// Equal when all three coordinates are.
  bool operator==(const MeshCoordinates&) const = default;
};

/// The coordinates of world rank `rank` (0..shape.ranks()-1), tensor innermost (above).
/// Throws std::invalid_argument outside that range or for a degree below 1.
MeshCoordinates mesh_coordinates(int rank, const MeshShape& shape);

/// The world rank at `at` on `shape`: the inverse of mesh_coordinates().
int mesh_rank(const MeshCoordinates& at, const MeshShape& shape);

/// "rank R (data d, pipeline p, tensor t)": how a message names world rank `rank` of
/// `shape`, so that a reader of a failure knows where on the mesh it stood.
std::string mesh_rank_name(int rank, const MeshShape& shape);

/// This process's place on the mesh and one communicator per dimension. Made once, after
/// MpiJob, by every rank of the job (MPI_Comm_split is collective); frees its
/// communicators when destroyed. Errors are returned on the new communicators, as on
/// MPI_COMM_WORLD, so MPI_CHECK names the failing call.
class MeshRanks {
 public:
  /// Splits `world` (whose size must be shape.ranks(): std::invalid_argument otherwise,
  /// before any collective call) into the three communicators.
  MeshRanks(MPI_Comm world, const MeshShape& shape);
  ~MeshRanks();
  MeshRanks(const MeshRanks&) = delete;
  MeshRanks& operator=(const MeshRanks&) = delete;

  /// The mesh's degrees.
  const MeshShape& shape() const { return shape_; }
  /// This rank's coordinates.
  const MeshCoordinates& at() const { return at_; }
  /// This rank in `world`.
  int rank() const { return rank_; }

  /// The dp ranks of this rank's (pipeline, tensor): index = data coordinate.
  MPI_Comm data() const { return data_; }
  /// The pp ranks of this rank's (data, tensor): index = stage.
  MPI_Comm pipeline() const { return pipeline_; }
  /// The tp ranks of this rank's (data, pipeline): index = tensor coordinate.
  MPI_Comm tensor() const { return tensor_; }

 private:
  MeshShape shape_;
  MeshCoordinates at_;
  int rank_ = 0;
  MPI_Comm data_ = MPI_COMM_NULL, pipeline_ = MPI_COMM_NULL, tensor_ = MPI_COMM_NULL;
};

}  // namespace towers
