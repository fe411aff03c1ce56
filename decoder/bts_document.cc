#include "decoder/bts_document.h"

namespace decoder {

BtsDocument::BtsDocument(const BlockTrace& trace, uint64_t from_seq, uint64_t pc, protocol::BtraceRead kind)
    : trace_id_(trace.id()),
      end_sequence_(trace.end_sequence()),
      from_seq_(from_seq),
      pc_(pc),
      kind_(kind),
      oldest_begin_(from_seq == trace.first_sequence() ? trace.oldest_begin() : trace.at(from_seq - 1).to),
      next_(trace.end_sequence()),
      next_end_(pc),
      window_(std::string(protocol::btrace_xml_header())) {}

bool BtsDocument::still_holds(const BlockTrace& trace) const {
  // Branches are never renumbered: what the trace appended since is after
  // end_sequence_, and those still to be written are there while none of
  // them was dropped.
  const bool rest_kept = blocks_written_ || next_ == from_seq_ || trace.first_sequence() <= from_seq_;
  return trace.id() == trace_id_ && trace.end_sequence() >= end_sequence_ && rest_kept;
}

void BtsDocument::write_next() {
  if (blocks_written_) {
    window_.text() += protocol::btrace_xml_footer();
    window_.finish();
    return;
  }
  protocol::BtraceBlock block{0, next_end_};
  if (next_ == from_seq_) {
    // The oldest block: gdb stitches a delta onto its trace at a zero
    // begin; a whole document drops a block it could not decode from 0.
    block.begin = kind_ == protocol::BtraceRead::Delta ? 0 : oldest_begin_;
    if (kind_ == protocol::BtraceRead::Delta || block.begin != 0) protocol::append_btrace_block(window_.text(), block);
    blocks_written_ = true;
    return;
  }
  const Branch before = trace_->at(next_ - 1);
  block.begin = before.to;
  protocol::append_btrace_block(window_.text(), block);
  next_end_ = before.from;
  --next_;
}

btstub::Expected<std::string_view> BtsDocument::read(const BlockTrace& trace, uint64_t offset, std::size_t length) {
  if (!still_holds(trace)) {
    return btstub::make_error(btstub::ErrorCode::InvalidArgument,
                              "The branches of this document were dropped since it was begun; read it again from offset 0.");
  }
  trace_ = &trace;
  auto text = window_.read(offset, length, [this]() -> btstub::Expected<void> {
    write_next();
    return {};
  });
  trace_ = nullptr;
  return text;
}

}  // namespace decoder
