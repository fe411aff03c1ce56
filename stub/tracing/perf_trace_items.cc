#include "stub/tracing/perf_trace_items.h"

namespace stub::tracing {

void push_gap(TraceItems& items) {
  if (items.empty() || !items.back().gap) items.push_back(gap_item());
}

void append_items(decoder::BlockTrace& trace, const TraceItems& items) {
  bool gap = false;
  for (const TraceItem& item : items) {
    if (item.gap && item.branch.to != 0) {
      trace.append(kGapAddress, item.branch.to);
      gap = false;
      continue;
    }
    if (item.gap) {
      gap = true;
      continue;
    }
    if (gap) trace.append(kGapAddress, item.branch.from);
    gap = false;
    trace.append(item.branch.from, item.branch.to);
  }
  // A loss with nothing after it yet: the live block must not look joined
  // to the last branch either.
  if (gap) trace.append(kGapAddress, kGapAddress);
}

}  // namespace stub::tracing
