#include "decoder/history_summaries.h"

namespace decoder {

void HistorySummaries::use_for(const BlockTrace& trace) {
  if (trace.id() != trace_id_) {
    runs_.clear();
    complete_below_ = 0;
    trace_id_ = trace.id();
    return;
  }
  const uint64_t first_run = trace.first_sequence() / blocks_per_run_;
  std::erase_if(runs_, [&](const auto& entry) { return entry.first < first_run; });
}

const RunSummary* HistorySummaries::find(uint64_t run) const {
  auto it = runs_.find(run);
  return it == runs_.end() ? nullptr : &it->second;
}

const RunSummary& HistorySummaries::put(uint64_t run, const RunSummary& summary) {
  return runs_[run] = summary;
}

}  // namespace decoder
