// SPDX-License-Identifier: MIT
#include "mpi/rank_trace.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "mpi/mpi_check.hpp"

namespace towers {
namespace {

// One span per line: "tower step stream start end name". Names have no newlines.
std::string serialize(const std::vector<TraceEvent>& events, int rank, double offset_us) {
  std::ostringstream out;
  out.precision(3);
  out << std::fixed;
  for (const auto& e : events) {
    if (e.device < 0 && rank != 0) continue;  // one host row: rank 0's
    out << e.device << ' ' << e.stream << ' ' << e.tower << ' ' << e.step << ' '
        << e.start_us + offset_us << ' ' << e.end_us + offset_us << ' ' << e.name << '\n';
  }
  return out.str();
}

void parse_into(const std::string& text, int rank, std::vector<TraceEvent>& events) {
  std::istringstream in(text);
  TraceEvent e;
  while (in >> e.device >> e.stream >> e.tower >> e.step >> e.start_us >> e.end_us) {
    in.get();  // the space before the name
    std::getline(in, e.name);
    if (e.device >= 0) e.device = rank;  // rank r's device is device r of the job
    events.push_back(e);
  }
}

}  // namespace

double clock_offset_us(const MpiJob& job, const Trace& trace) {
  MPI_CHECK(MPI_Barrier(job.comm()));
  const double mine = trace.now_us();  // every rank reads its clock as it leaves the barrier
  double rank0 = mine;
  MPI_CHECK(MPI_Bcast(&rank0, 1, MPI_DOUBLE, 0, job.comm()));
  return rank0 - mine;
}

std::vector<TraceEvent> gather_rank_events(const MpiJob& job, const std::vector<TraceEvent>& mine,
                                           double offset_us) {
  const std::string text = serialize(mine, job.rank(), offset_us);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(job.size()), offsets(job.size());
  MPI_CHECK(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, job.comm()));
  std::string all;
  if (job.rank() == 0) {
    for (int r = 1; r < job.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
    all.resize(static_cast<std::size_t>(offsets.back() + lengths.back()));
  }
  MPI_CHECK(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        MPI_CHAR, 0, job.comm()));
  std::vector<TraceEvent> events;
  if (job.rank() != 0) return events;
  for (int r = 0; r < job.size(); ++r) parse_into(all.substr(offsets[r], lengths[r]), r, events);
  std::stable_sort(events.begin(), events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });
  return events;
}

}  // namespace towers
