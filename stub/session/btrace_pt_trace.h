#pragma once
// A thread's branch trace as the Intel PT document gdb's `record btrace pt`
// reads (decoder/pt_encoder.h), with the code read from the stopped
// program. Written as gdb reads it, in pieces, as decoder/bts_document.h
// writes a BTS one: at 12 million branches, building the packets whole
// before the first chunk (every stored segment walked to know its code is
// unchanged, the rest encoded) took about 5 s, past gdb's remote timeout.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "decoder/block_trace.h"
#include "decoder/instruction_decoder.h"
#include "decoder/text_window.h"
#include "protocol/expected.h"
#include "stub/process/process.h"

namespace stub::session {

// Where gdb turned tracing on for a thread: the trace's end_sequence() and
// the thread's pc then.
struct PtStart {
  uint64_t sequence = 0;
  uint64_t pc = 0;
};

// The PT stream of `trace` from `start` (tracing begins there, with
// TIP.PGE) to the thread's current `pc`. When branches after `start` were
// dropped since, or there is no start, the stream holds what the trace
// still has and begins in the middle of the execution.
//
// The stream is the trace's sealed PT chunks as stored, and the rest (the
// part before the first of them, explicit chunks or chunks whose code
// changed, the open branches after them) encoded here, in pieces of at most
// kPieceBranches. Every stored segment and every encoded piece starts with
// PSB+ at the address the piece before it went on to, so the decoder goes
// through without a gap.
class PtDocument {
 public:
  static constexpr uint64_t kPieceBranches = 4096;

  PtDocument(const decoder::BlockTrace& trace, const std::optional<PtStart>& start, uint64_t pc);

  // As decoder::BtsDocument::read (the document stays what it was when
  // begun), with the program's code read from `process`.
  btstub::Expected<std::string_view> read(process::Process& process, const decoder::BlockTrace& trace,
                                          uint64_t offset, std::size_t length);
  bool complete() const { return window_.complete(); }

 private:
  // The next piece of packets (stored or encoded); the last one ends at pc_.
  btstub::Expected<std::vector<uint8_t>> next_piece(process::Process& process, const decoder::BlockTrace& trace);
  // Appends the next piece's text, or the document's end after the last.
  btstub::Expected<void> write_next(process::Process& process, const decoder::BlockTrace& trace);

  uint64_t trace_id_;
  uint64_t end_sequence_;  // the trace's, when the document was begun
  uint64_t pc_;
  bool starts_tracing_;  // the stream begins where gdb turned tracing on
  uint64_t start_pc_;    // then: the pc there
  uint64_t from_;        // the first branch of the stream
  uint64_t cursor_;      // the next branch to write
  bool last_written_ = false;  // the piece ending at pc_ is written
  bool raw_open_ = false;      // <raw> is written
  std::unique_ptr<decoder::InstructionDecoder> insns_;
  decoder::TextWindow window_;  // finished once the document's end is written
};

}  // namespace stub::session
