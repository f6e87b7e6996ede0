// SPDX-License-Identifier: MIT
#include "mpi/rank_trace.hpp"

#include <algorithm>
#include <sstream>
#include <string>

#include "mpi/mpi_check.hpp"

namespace towers {
std::string serialize_rank_events(const std::vector<TraceEvent>& events, int rank,
                                  double offset_us) {
  std::ostringstream out;
  out.precision(3);
  out << std::fixed;
  for (const auto& e : events) {
    if (e.device < 0 && rank != 0) continue;  // one host row: rank 0's
    // Record/wait markers stay out: their event ids are numbered per process, so two
    // ranks' markers could not be told apart, and the merged analysis reads spans only.
    if (!e.is_span()) continue;
    out << e.device << ' ' << e.stream << ' ' << e.tower << ' ' << e.step << ' '
        << e.start_us + offset_us << ' ' << e.end_us + offset_us << ' ' << (e.stamped ? 1 : 0)
        << ' ' << e.ran_us.size();
    // The kernels' own stamps travel too: without them rank 0 would judge concurrency from
    // the event spans, in which an NCCL kernel waiting for its peer looks busy.
    for (const auto& [start, end] : e.ran_us) out << ' ' << start + offset_us << ' ' << end + offset_us;
    out << ' ' << e.name << '\n';
  }
  return out.str();
}

void parse_rank_events(const std::string& text, int rank, std::vector<TraceEvent>& events) {
  std::istringstream in(text);
  TraceEvent e;
  int stamped = 0;
  std::size_t ran = 0;
  while (in >> e.device >> e.stream >> e.tower >> e.step >> e.start_us >> e.end_us >> stamped >>
         ran) {
    e.stamped = stamped != 0;
    e.ran_us.assign(ran, {0.0, 0.0});
    for (auto& [start, end] : e.ran_us) in >> start >> end;
    in.get();  // the space before the name
    std::getline(in, e.name);
    if (e.device >= 0) e.device = rank;  // rank r's device is device r of the job
    events.push_back(e);
  }
}

double clock_offset_us(const MpiJob& job, const Trace& trace) {
  constexpr int kRounds = 8;
  const int tag = 7;
  double offset = 0;
  MPI_CHECK(MPI_Barrier(job.comm()));  // start together, so nobody waits long below
  if (job.rank() == 0) {
    // Rank 0 asks each rank in turn for its clock, kRounds times.
    for (int r = 1; r < job.size(); ++r) {
      double best_round_trip = 1e300, best_offset = 0;
      for (int k = 0; k < kRounds; ++k) {
        const double sent = trace.now_us();
        double theirs = 0;
        MPI_CHECK(MPI_Send(&sent, 1, MPI_DOUBLE, r, tag, job.comm()));
        MPI_CHECK(MPI_Recv(&theirs, 1, MPI_DOUBLE, r, tag, job.comm(), MPI_STATUS_IGNORE));
        const double received = trace.now_us();
        if (received - sent < best_round_trip) {  // the quickest exchange was least disturbed
          best_round_trip = received - sent;
          best_offset = (sent + received) / 2 - theirs;
        }
      }
      MPI_CHECK(MPI_Send(&best_offset, 1, MPI_DOUBLE, r, tag, job.comm()));
    }
  } else {
    for (int k = 0; k < kRounds; ++k) {
      double sent = 0;
      MPI_CHECK(MPI_Recv(&sent, 1, MPI_DOUBLE, 0, tag, job.comm(), MPI_STATUS_IGNORE));
      const double mine = trace.now_us();
      MPI_CHECK(MPI_Send(&mine, 1, MPI_DOUBLE, 0, tag, job.comm()));
    }
    MPI_CHECK(MPI_Recv(&offset, 1, MPI_DOUBLE, 0, tag, job.comm(), MPI_STATUS_IGNORE));
  }
  return offset;
}

std::vector<TraceEvent> gather_rank_events(const MpiJob& job, const std::vector<TraceEvent>& mine,
                                           double offset_us) {
  const std::string text = serialize_rank_events(mine, job.rank(), offset_us);
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
  for (int r = 0; r < job.size(); ++r) parse_rank_events(all.substr(offsets[r], lengths[r]), r, events);
  std::stable_sort(events.begin(), events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });
  return events;
}

}  // namespace towers
