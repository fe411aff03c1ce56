#pragma once
// A thread's trace as the BTS document of qXfer:btrace:read, written as gdb
// reads it rather than whole up front. gdb reads a document in chunks of at
// most one packet (16 KB, ~360 blocks) at rising offsets; a document of 12
// million branches is ~540 MB of text, and building it whole before the
// first chunk took 9.8 s (past gdb's remote timeout) and 1.4 GB. This
// writes each chunk when it is asked for, walking the trace newest block
// first from where the previous chunk ended, and keeps only the text from
// the last offset asked: the first chunk costs the same at any size, and
// memory stays one chunk's text.
#include <cstdint>
#include <string>
#include <string_view>

#include "decoder/block_trace.h"
#include "protocol/btrace_xml.h"
#include "decoder/text_window.h"
#include "protocol/expected.h"

namespace decoder {

class BtsDocument {
 public:
  // The document protocol::btrace_bts_xml writes for
  // trace.blocks(from_seq, pc) and `kind`.
  // Precondition: trace.first_sequence() <= from_seq <= trace.end_sequence().
  BtsDocument(const BlockTrace& trace, uint64_t from_seq, uint64_t pc, protocol::BtraceRead kind);

  // The document's text from `offset`: at least `length` bytes of it, or
  // all that is left (then complete() holds). `trace` must be the trace the
  // document was made from, holding still the branches it has yet to write
  // (it may have grown: the document stays what it was when begun); else
  // an error, as for an offset before the one asked last (text already
  // dropped) or beyond the text written so far. The view is valid until
  // the next call.
  btstub::Expected<std::string_view> read(const BlockTrace& trace, uint64_t offset, std::size_t length);
  // Whether the text from the last read's offset holds the document's end.
  bool complete() const { return window_.complete(); }

 private:
  bool still_holds(const BlockTrace& trace) const;
  // Appends the next block (newest first), or the footer after the last.
  void write_next();

  uint64_t trace_id_;
  uint64_t end_sequence_;    // the trace's, when the document was begun
  uint64_t from_seq_;
  uint64_t pc_;
  protocol::BtraceRead kind_;
  uint64_t oldest_begin_;  // where block from_seq_ begins
  // The next block to write is number next_ (blocks from_seq_..end_sequence_,
  // block k ending at branch k's source, the last at pc_), and it ends at
  // next_end_.
  uint64_t next_;
  uint64_t next_end_;
  bool blocks_written_ = false;  // the oldest block is written: the footer comes next
  const BlockTrace* trace_ = nullptr;  // during read(): the trace, checked to be this one
  TextWindow window_;  // finished once the footer is written
};

}  // namespace decoder
