// gdb's `record btrace` over the wire: Qbtrace:*, Qbtrace-conf:*,
// qXfer:btrace:read and qXfer:btrace-conf:read, on top of a TraceBackend.
// Replies follow gdbserver (server.cc, linux-low.cc) because gdb prints its
// error texts verbatim and parses its documents.
#include <unistd.h>

#include <algorithm>
#include <variant>

#include "protocol/btrace_xml.h"
#include "stub/session/btrace_pt_trace.h"
#include "stub/session/handlers.h"
#include "stub/tracing/perf_backend.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

using tracing::TraceConfig;
using tracing::plan_buffer_pages;

namespace {

using protocol::BtraceRead;

btstub::Error btrace_error(std::string text) {
  return btstub::make_error(btstub::ErrorCode::InvalidArgument, std::move(text));
}

Reply error_reply(std::string text) { return error(btrace_error(std::move(text))); }

// The thread a btrace packet acts on: the general thread (Hg). The session
// keeps "any thread" as 0 and means the main thread by it, as every other
// handler does; gdbserver likewise always has a concrete general thread once
// the program stopped. Only without a program is there no thread at all.
Expected<pid_t> btrace_thread(Session& s) {
  if (s.trace_backend == nullptr) return btrace_error("Target does not support branch tracing.");
  if (!s.has_process() || s.current_thread() <= 0) return btrace_error("Must select a single thread.");
  pid_t tid = s.current_thread();
  Process* process = s.process();
  if (process != s.program()) {
    // A fork child kept with detach-on-fork off: the tracer follows the
    // program btstub started or attached to only.
    return btrace_error("Branch tracing is not available for process " + std::to_string(process->pid()) +
                        ": btstub traces only the program it started or attached to.");
  }
  for (pid_t t : process->threads())
    if (t == tid) return tid;
  return btrace_error("No such thread.");
}

bool client_enabled(const Session& s, pid_t tid) { return s.btrace_reads.client_enabled.count(tid) != 0; }

bool reads_pt(const Session& s, pid_t tid) {
  auto it = s.btrace_reads.client_enabled.find(tid);
  return it != s.btrace_reads.client_enabled.end() && it->second == BtraceFormat::Pt;
}

// Starts the backend's trace of `tid` with the buffer size `bytes`. The
// backend gives newly enabled threads its current configuration, so that
// is set for this one thread and put back.
Expected<void> enable_sized(TraceBackend& backend, pid_t tid, uint64_t bytes) {
  const TraceConfig before = backend.config();
  TraceConfig sized = before;
  sized.buffer_bytes = bytes;
  backend.set_config(sized);
  auto done = backend.enable(tid);
  backend.set_config(before);
  return done;
}

// PT packets take one to two bytes a branch (1.3 to 1.7 measured on the
// fidelity programs): a pt buffer of N bytes keeps N/2 branches, where a
// bts buffer keeps N/24 (one 24-byte BTS record each).
constexpr uint64_t kPtBranchBytes = 2;

// Starts tracing `tid` for Qbtrace:pt with the buffer gdb asked for, rounded
// as gdbserver rounds its perf AUX buffer; btrace-conf reports that size.
Expected<void> start_pt(Session& s, pid_t tid) {
  auto& reads = s.btrace_reads;
  TraceBackend& backend = *s.trace_backend;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t wish = reads.pt_size != 0 ? reads.pt_size : backend.config().buffer_bytes;
  const uint64_t bytes = bts_buffer_bytes(wish, page);
  auto done = enable_sized(backend, tid, bytes / kPtBranchBytes * decoder::BlockTrace::kBtsRecordSize);
  if (done) reads.pt_sizes[tid] = bytes;
  return done;
}

// The pt size of a trace adopted from whole-program recording, which keeps
// its bound: the pt buffer that holds as many branches.
uint64_t adopted_pt_size(const TraceBackend& backend, pid_t tid) {
  auto config = backend.thread_config(tid);
  const uint64_t records = config ? config->buffer_bytes / decoder::BlockTrace::kBtsRecordSize : 1;
  return std::min<uint64_t>(records * kPtBranchBytes, uint64_t{1} << 31);
}

// Qbtrace:bts and Qbtrace:pt: both formats are read from the same trace
// (the backend's branches); only the documents differ.
Reply enable(Session& s, pid_t tid, BtraceFormat format) {
  TraceBackend& backend = *s.trace_backend;
  auto& reads = s.btrace_reads;
  if (client_enabled(s, tid)) return error_reply("Btrace already enabled.");
  if (s.caught_syscalls) return error_reply("Cannot record while catching system calls (catch syscall).");
  // Under whole-program recording the thread is traced already: gdb gets
  // that trace from here on. A thread it has not met yet (`monitor record
  // start` begins a thread's trace when the thread next runs) gets its
  // trace now, with the recording's configuration.
  const bool adopted = backend.enabled(tid);
  if (!adopted || backend.trace(tid) == nullptr) {
    auto done = format == BtraceFormat::Pt && !adopted ? start_pt(s, tid) : backend.enable(tid);
    if (!done) return error(done.error());
  }
  if (adopted && format == BtraceFormat::Pt) reads.pt_sizes[tid] = adopted_pt_size(backend, tid);
  reads.client_enabled[tid] = format;
  reads.seen_pc.erase(tid);
  reads.pt_start.erase(tid);
  const auto* trace = backend.trace(tid);
  // A delta read right after enabling covers everything since this point.
  if (trace != nullptr) {
    reads.seen[tid] = trace->end_sequence();
  } else {
    reads.seen.erase(tid);
  }
  // Where the PT stream begins: a whole-program trace adopted here began
  // earlier, gdb's history begins now (as bts's does through deltas).
  if (trace != nullptr && format == BtraceFormat::Pt) {
    if (auto regs = s.process()->read_general_registers(tid)) {
      reads.pt_start[tid] = {trace->end_sequence(), regs->get_u64(protocol::Amd64Reg::rip)};
    }
  }
  return Reply::now(reply_ok());
}

Reply disable(Session& s, pid_t tid) {
  TraceBackend& backend = *s.trace_backend;
  if (!client_enabled(s, tid)) return error_reply("Branch tracing not enabled.");
  // Whole-program recording goes on for btstub's own replay.
  if (!backend.all_enabled() && backend.enabled(tid)) {
    if (auto done = backend.disable(tid); !done) return error(done.error());
  }
  s.btrace_reads.client_enabled.erase(tid);
  s.btrace_reads.seen.erase(tid);
  s.btrace_reads.seen_pc.erase(tid);
  s.btrace_reads.pt_start.erase(tid);
  s.btrace_reads.pt_sizes.erase(tid);
  return Reply::now(reply_ok());
}

// A document gdb reads in chunks: text built whole, or a trace written as
// gdb reads it.
using Document = BtraceDocument;

// A pt read. PT streams cannot be cut at an arbitrary branch, so, as for
// gdbserver's perf buffer, there is no delta (gdb then reads `new`) and
// `new` is the whole stream or, when the thread has not moved since the
// last read (no branch, same pc), an empty one. The pc counts: the stream
// ends at it, and a thread that ran straight-line code took no branch.
Expected<Document> read_pt_trace(Session& s, pid_t tid, const decoder::BlockTrace& trace, uint64_t pc,
                                 uint64_t seen, BtraceRead kind) {
  auto& reads = s.btrace_reads;
  if (kind == BtraceRead::Delta) return btrace_error("Generic Error.");  // gdbserver's words
  auto seen_pc = reads.seen_pc.find(tid);
  if (kind == BtraceRead::New && seen == trace.end_sequence() && seen_pc != reads.seen_pc.end() &&
      seen_pc->second == pc) {
    return Document(protocol::btrace_pt_xml({}));
  }
  std::optional<PtStart> start;
  if (auto it = reads.pt_start.find(tid); it != reads.pt_start.end()) start = PtStart{it->second.first, it->second.second};
  reads.seen[tid] = trace.end_sequence();
  reads.seen_pc[tid] = pc;
  return Document(std::in_place_type<PtDocument>, trace, start, pc);
}

// One trace read. `seen` is where the previous read of this thread stopped
// (every kind of read moves it, as perf's last_head does for gdbserver); a
// thread never read counts as having seen nothing of its buffer.
Expected<Document> read_trace(Session& s, pid_t tid, BtraceRead kind) {
  const decoder::BlockTrace* trace = s.trace_backend->trace(tid);
  if (trace == nullptr) return btrace_error("No Trace.");
  auto regs = s.process()->read_general_registers(tid);
  if (!regs) return regs.error();
  uint64_t pc = regs->get_u64(protocol::Amd64Reg::rip);

  auto found = s.btrace_reads.seen.find(tid);
  uint64_t seen = found != s.btrace_reads.seen.end() ? found->second : trace->first_sequence();
  if (reads_pt(s, tid)) return read_pt_trace(s, tid, *trace, pc, seen, kind);
  uint64_t from = trace->first_sequence();
  if (kind == BtraceRead::Delta) {
    // A sequence beyond the end means the trace was replaced under us: as
    // lost as overwritten branches. gdb answers either by reading `new`.
    if (trace->lost_since(seen) || seen > trace->end_sequence()) return btrace_error("Overflow.");
    from = seen;
  } else if (kind == BtraceRead::New && seen == trace->end_sequence()) {
    return Document(protocol::btrace_empty_xml());
  }
  s.btrace_reads.seen[tid] = trace->end_sequence();
  return Document(std::in_place_type<decoder::BtsDocument>, *trace, from, pc, kind);
}

Expected<Document> btrace_document(Session& s, pid_t tid, const XferRead& req) {
  TraceBackend& backend = *s.trace_backend;
  std::optional<BtraceRead> kind;
  if (req.object == "btrace") {
    kind = protocol::parse_btrace_annex(req.annex);
    if (!kind) return btrace_error("Bad annex.");
  } else if (!req.annex.empty()) {
    return btrace_error("Bad annex.");
  }
  if (!client_enabled(s, tid) || !backend.enabled(tid)) return btrace_error("Btrace not enabled.");
  if (kind) return read_trace(s, tid, *kind);
  auto config = backend.thread_config(tid);
  if (!config) return config.error();
  // The backend's name rides in an XML comment: gdb's parser skips it.
  std::string conf = reads_pt(s, tid) ? protocol::btrace_conf_pt_xml(s.btrace_reads.pt_sizes[tid])
                                      : protocol::btrace_conf_bts_xml(config->buffer_bytes);
  return Document(conf + "<!-- btstub backend: " + std::string(backend.name()) + " -->\n");
}

}  // namespace

// gdbserver (gdb/nat/linux-btrace.c) asks perf for a power-of-two number of
// pages, at least one, and reports that size in btrace-conf; gdb prints it
// ("Buffer size: 4kB." for a wish of 1 byte). Every backend here uses what
// it is given (the perf ring is that size; the software tracer holds as many
// 24-byte records as fit), so the rounding happens once, here. The largest
// size stays within gdb's unsigned int: 0x80000000.
uint64_t bts_buffer_bytes(uint64_t requested, std::size_t page_size) {
  constexpr uint64_t kLargest = uint64_t{1} << 31;
  if (page_size == 0 || page_size > kLargest) page_size = 4096;
  uint64_t pages = plan_buffer_pages(std::min(requested, kLargest), page_size, std::nullopt, std::nullopt);
  return pages * page_size;
}

std::vector<std::string> btrace_supported_features(const Session& s) {
  if (s.trace_backend == nullptr) return {};
  return {"Qbtrace:bts+",          "Qbtrace:pt+",          "Qbtrace:off+",
          "Qbtrace-conf:bts:size+", "Qbtrace-conf:pt:size+", "qXfer:btrace:read+",
          "qXfer:btrace-conf:read+"};
}

Reply handle(Session& s, const BtraceControl& req) {
  // gdb's record btrace starts in the present: while a thread stands in
  // btstub's recorded past, going live here would move it to the present
  // without a word (gdb would go on from there). Refused, saying how to
  // leave. Qbtrace:off ends a replay first: it discards the traces a
  // replay cursor may stand in (gdb sends it only for its own recording,
  // which it replays itself).
  if (req.op != BtraceOp::Off && s.any_replaying()) {
    return error_reply("the thread is in btstub's recorded past; branch tracing starts only in the present. "
                       "Go forward to the end of the history first (until \"No more reverse-execution history\")");
  }
  s.go_live();
  auto tid = btrace_thread(s);
  if (!tid) return error(tid.error());
  switch (req.op) {
    case BtraceOp::Bts:
      return enable(s, *tid, BtraceFormat::Bts);
    case BtraceOp::Pt:
      return enable(s, *tid, BtraceFormat::Pt);
    case BtraceOp::Off:
      return disable(s, *tid);
  }
  return error_reply("Bad Qbtrace operation.  Use bts, pt, or off.");
}

Reply handle(Session& s, const BtraceConfigure& req) {
  auto tid = btrace_thread(s);
  if (!tid) return error(tid.error());
  if (req.format == BtraceFormat::Pt) {
    s.btrace_reads.pt_size = req.size;  // for threads enabled with Qbtrace:pt from now on
    return Reply::now(reply_ok());
  }
  TraceConfig config = s.trace_backend->config();
  config.buffer_bytes = bts_buffer_bytes(req.size, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  s.trace_backend->set_config(config);
  return Reply::now(reply_ok());
}

namespace {

// The chunk at req.offset of the document gdb is reading; one written as
// gdb reads it comes from the trace it began with (the thread has not
// moved since offset 0).
Reply document_chunk(Session& s, pid_t tid, const XferRead& req) {
  auto& document = *s.btrace_reads.cached;
  if (auto* whole = std::get_if<std::string>(&document)) {
    if (req.offset > whole->size()) return error_reply("Bad offset; read the branch trace from offset 0 first.");
    return Reply::now(reply_xfer_chunk(*whole, req.offset, req.length));
  }
  const decoder::BlockTrace* trace = s.trace_backend->trace(tid);
  if (trace == nullptr) return error_reply("No Trace.");
  auto text = std::holds_alternative<decoder::BtsDocument>(document)
                  ? std::get<decoder::BtsDocument>(document).read(*trace, req.offset, req.length)
                  : std::get<PtDocument>(document).read(*s.process(), *trace, req.offset, req.length);
  if (!text) return error(text.error());
  return Reply::now(reply_xfer_chunk(*text, 0, req.length));
}

}  // namespace

// Like gdbserver, the document is made when gdb asks for offset 0 and later
// chunks come from it: a `new`/`delta` read moves the read position, so
// making it again for each chunk would hand gdb a different document.
Reply handle_btrace_xfer(Session& s, const XferRead& req) {
  auto tid = btrace_thread(s);
  if (!tid) return error(tid.error());
  std::string key = req.object + ":" + req.annex + ":" + std::to_string(*tid);
  auto& reads = s.btrace_reads;
  if (req.offset != 0) {
    if (reads.cached_key != key || !reads.cached) return error_reply("Bad offset; read the branch trace from offset 0 first.");
    return document_chunk(s, *tid, req);
  }
  reads.cached_key.clear();
  reads.cached.reset();
  auto document = btrace_document(s, *tid, req);
  if (!document) return error(document.error());
  reads.cached_key = std::move(key);
  reads.cached.emplace(std::move(*document));
  return document_chunk(s, *tid, req);
}

}  // namespace stub::session
