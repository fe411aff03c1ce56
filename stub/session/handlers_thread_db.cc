// The thread library's packets: qSymbol (gdb answering the symbols
// libthread_db looks up) and qGetTLSAddr (thread-local storage), as
// gdbserver serves them through libthread_db.
#include "stub/session/handlers.h"

namespace stub::session {

namespace {

// At the end of a round libthread_db may have attached: glibc's own
// signals are passed from then on (Session::signals_passed).
Reply question_or_ok(Session& s, const std::optional<std::string>& question) {
  if (!question) s.update_passed_signals();
  return Reply::now(question ? reply_symbol_question(*question) : reply_ok());
}

// Loading a libthread_db from a directory the client named runs code of
// its choosing inside btstub: only where it may start programs anyway (not
// under --no-run); otherwise the system's library alone.
std::string library_search_path(const Session& s) {
  const bool may_run = s.process_factory == nullptr || s.process_factory->may_start_programs().ok();
  return may_run ? s.libthread_db_search_path : "$sdir";
}

}  // namespace

// gdbserver answers OK when there is nothing to look symbols up for.
Reply handle(Session& s, const SymbolsReady&) {
  Process* process = s.process();
  if (process == nullptr) return Reply::now(reply_ok());
  return question_or_ok(s, s.thread_library(*process).start_round(library_search_path(s)));
}

Reply handle(Session& s, const SymbolAnswer& req) {
  Process* process = s.process();
  if (process == nullptr) return Reply::now(reply_ok());
  return question_or_ok(s, s.thread_library(*process).answer(req.name, req.address));
}

Reply handle(Session& s, const GetTlsAddress& req) {
  if (!s.has_process()) return no_process_reply();
  if (s.running()) {
    return error(btstub::ErrorCode::InvalidArgument, "The program is running");
  }
  auto tid = s.resolve_thread(req.thread);
  if (!tid) return error(tid.error());
  if (*tid == 0) {
    return error(btstub::ErrorCode::InvalidArgument, "qGetTLSAddr: name one thread");
  }
  Process* owner = s.inferiors().owner_of(*tid);
  if (owner == nullptr) return no_process_reply();
  ThreadLibrary& library = s.thread_library(*owner);
  auto address = library.tls_address(*tid, req.offset, req.link_map);
  if (!address && s.replaying(*tid)) {
    // The past lacks what libthread_db reads (values there are only what
    // the history determines while several threads run: no checkpoint).
    // A thread's block never moves while the thread lives, so the present
    // gives the same address; gdb then reads the value in the past.
    s.thread_db_reads_present = true;
    address = library.tls_address(*tid, req.offset, req.link_map);
    s.thread_db_reads_present = false;
  }
  if (!address) return error(address.error());
  return Reply::now(reply_tls_address(*address));
}

}  // namespace stub::session
