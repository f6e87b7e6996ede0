// SPDX-License-Identifier: MIT
// One trace for the whole job: every rank's spans, gathered to rank 0 on one clock.
//
// Each rank's Trace counts microseconds from its own start, so rank r's times must be
// shifted onto rank 0's. The offset is estimated once, after a barrier, the way
// Cristian's algorithm (and NTP) does: rank 0 sends its clock reading t0 to rank r, r
// answers with its own reading tr, rank 0 reads t1 on receipt; then r's clock read tr at
// about (t0 + t1) / 2 of rank 0's, so offset_r = (t0 + t1) / 2 - tr, wrong by at most half
// the round trip. Of 8 exchanges the quickest is kept: a rank descheduled in between (a
// loaded machine) makes a slow exchange, not a wrong one. Microseconds on one machine,
// tens across a network: enough to see ranks meet in the all-reduce.
//
// In the gathered trace rank r's device spans are put on device r, so the Chrome trace
// has one process per rank ("rank r", see TraceFiles::process_label) and the ASCII
// timeline one row per rank and stream. Host spans (enqueue times) are kept for rank 0
// only: the timeline has one host row. Introduced in chapter 5.
#pragma once

#include <string>
#include <vector>

#include "mpi/mpi_job.hpp"
#include "trace/trace.hpp"

namespace towers {

/// Microseconds to add to this rank's trace times to put them on rank 0's clock. A
/// collective: every rank calls it once, at the same point.
double clock_offset_us(const MpiJob& job, const Trace& trace);

/// Gathers `mine` from every rank to rank 0, shifted by each rank's `offset_us` and put on
/// device = rank (see above). Returns the job's spans sorted by start on rank 0, nothing
/// elsewhere; record/wait markers are left out (event ids are per process). A collective:
/// every rank calls it, in the same order.
std::vector<TraceEvent> gather_rank_events(const MpiJob& job, const std::vector<TraceEvent>& mine,
                                           double offset_us);

/// The text one rank sends in gather_rank_events: one span per line, "device stream tower
/// step start end stamped n ran_start ran_end ... name", its times shifted by `offset_us`.
/// Host spans only from rank 0. Apart for tests (no MPI needed).
std::string serialize_rank_events(const std::vector<TraceEvent>& events, int rank,
                                  double offset_us);
/// Appends the spans of `text` (serialize_rank_events's) to `events`, put on device `rank`.
void parse_rank_events(const std::string& text, int rank, std::vector<TraceEvent>& events);

}  // namespace towers
