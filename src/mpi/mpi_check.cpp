// SPDX-License-Identifier: MIT
#include "mpi/mpi_check.hpp"

#include <mpi.h>

#include <cstdio>
#include <string>

namespace towers {

void check_mpi(int code, const char* expression, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof text, "MPI error code %d", code);
  }
  throw MpiError("MPI error at " + std::string(file) + ":" + std::to_string(line) + ": " + text +
                 "\n  in " + expression);
}

}  // namespace towers
