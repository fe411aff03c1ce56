// The program as libthread_db reads it (stub/session/thread_library.h).
#include "stub/replay/replay_engine.h"
#include "stub/session/session.h"

namespace stub::session {

std::set<int> Session::signals_passed(const Process& process) const {
  std::set<int> passed = pass_signals;
  constexpr int kSigCancel = 32, kSigSetxid = 33;  // glibc's __SIGRTMIN, __SIGRTMIN + 1
  auto library = thread_libraries.find(process.pid());
  if (library != thread_libraries.end() && library->second && library->second->loaded()) {
    passed.insert({kSigCancel, kSigSetxid});
  }
  return passed;
}

void Session::update_passed_signals() {
  for (Process* process : inferiors_.live()) process->set_pass_signals(signals_passed(*process));
}

ThreadLibrary& Session::thread_library(Process& owner) {
  const pid_t pid = owner.pid();
  std::unique_ptr<ThreadLibrary>& library = thread_libraries[pid];
  if (library) return *library;
  // The process is found again at each call: the library outlives no
  // process (dropped with it), but a lookup must not keep a stale pointer.
  ThreadDbTarget target;
  target.pid = pid;
  target.read_memory = [this, pid](pid_t tid, uint64_t addr, std::size_t len) -> Expected<std::vector<uint8_t>> {
    Process* process = inferiors_.find(pid);
    if (process == nullptr) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
    if (process == program() && replaying(tid) && !thread_db_reads_present) return replay_->read_memory(tid, addr, len);
    return process->read_memory(addr, len);
  };
  target.segment_base = [this, pid](pid_t tid, bool fs) -> Expected<uint64_t> {
    Process* process = inferiors_.find(pid);
    if (process == nullptr) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
    const bool past = process == program() && replaying(tid) && !thread_db_reads_present;
    auto regs = past ? replay_->registers(tid) : process->read_registers(tid);
    if (!regs) return regs.error();
    const auto reg = fs ? protocol::Amd64Reg::fs_base : protocol::Amd64Reg::gs_base;
    if (!regs->available(static_cast<unsigned>(reg)))
      return btstub::make_error(btstub::ErrorCode::NotSupported, "The thread's segment base is unavailable");
    return regs->get_u64(reg);
  };
  library = std::make_unique<ThreadLibrary>(open_thread_db, std::move(target));
  return *library;
}

}  // namespace stub::session
