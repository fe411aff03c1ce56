#pragma once
// The qSymbol exchange that feeds libthread_db (stub/process/thread_db.h),
// for one process. gdbserver answers libthread_db's symbol lookups by
// asking gdb from inside the lookup, mid-packet; btstub's session sees one
// request at a time, so each round of gdb's `qSymbol::` re-runs the step
// that needs a symbol (td_ta_new, which is side-effect free until it
// succeeds) with the answers so far: the first symbol it lacks is the next
// question. Once attached, every symbol libthread_db may want is asked
// once, as gdbserver's thread_db_look_up_symbols does; after that, lookups
// are answered from what gdb said and gdb is asked nothing more.
#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "stub/process/thread_db.h"

namespace stub::session {

using btstub::Expected;
using process::ThreadDb;
using process::ThreadDbTarget;

class ThreadLibrary {
 public:
  // `open` makes the ThreadDb over the target it is given (from
  // `search_path`, see process::open_thread_db), whose look_up this
  // object answers. While it fails (no libthread_db there) each round
  // tries again, as gdbserver does, and ends at once; TLS is refused with
  // its error.
  using Opener = std::function<Expected<std::unique_ptr<ThreadDb>>(ThreadDbTarget, const std::string& search_path)>;
  ThreadLibrary(Opener open, ThreadDbTarget target);
  ThreadLibrary(const ThreadLibrary&) = delete;
  ThreadLibrary& operator=(const ThreadLibrary&) = delete;

  // qSymbol:: : gdb has (maybe) loaded new symbols. The symbol to ask gdb
  // for, or nullopt when the round is over (reply OK).
  std::optional<std::string> start_round(const std::string& search_path);
  // qSymbol:VALUE:NAME or qSymbol::NAME: gdb's answer; then the next
  // question, or nullopt when the round is over.
  std::optional<std::string> answer(const std::string& name, std::optional<uint64_t> address);

  Expected<uint64_t> tls_address(pid_t tid, uint64_t offset, uint64_t link_map);
  // libthread_db is attached to the process (its threading library found).
  bool loaded() const { return db_ != nullptr; }

 private:
  std::optional<std::string> next_question();
  std::optional<uint64_t> look_up(std::string_view name);

  Opener open_;
  ThreadDbTarget target_;
  std::unique_ptr<ThreadDb> db_;
  btstub::Error open_error_{btstub::ErrorCode::NotSupported, "libthread_db is not loaded (no qSymbol exchange yet)"};
  // gdb's answers: an address, or nullopt for "gdb does not know it" (asked
  // again in a later round while not all symbols are looked up).
  std::map<std::string, std::optional<uint64_t>, std::less<>> answers_;
  std::set<std::string, std::less<>> asked_;  // in this round
  std::string wanted_;  // the first unknown symbol the last attach tried
  bool all_looked_up_ = false;
};

}  // namespace stub::session
