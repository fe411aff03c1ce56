// LLDB's own packets, answered as lldb-server answers them where LLDB
// depends on the answer (docs/protocol.md "LLDB"). gdb sends none of them;
// the first one marks the client as LLDB (Session::LldbState).
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "stub/process/libraries_svr4.h"
#include "stub/session/handlers.h"

namespace stub::session {

namespace {

constexpr std::string_view kTriple = "x86_64-pc-linux-gnu";

// What LLDB calls a thread's stop reason: a breakpoint or watchpoint hit,
// or a signal; empty when the signal (SIGTRAP) says it (lldb then looks
// for its breakpoint at the pc, as it does for any SIGTRAP stop).
std::string reason_of(const StopReply& stop) {
  using protocol::StopReason;
  switch (stop.reason) {
    case StopReason::SoftwareBreakpoint:
    case StopReason::HardwareBreakpoint:
      return "breakpoint";
    case StopReason::Watch:
    case StopReason::ReadWatch:
    case StopReason::AccessWatch:
      return "watchpoint";
    default:
      break;
  }
  if (stop.signal != 0 && stop.signal != 5) return "signal";
  return "";
}

// The stop of `tid` as LLDB asks it after every stop: the reported
// thread's is the stop reply; a thread that kept an event of its own
// while the others were stopped hands it over now (told once, then it is
// the client's: it would otherwise be dropped when lldb steps the thread
// off its breakpoint, and the hit lost); any other thread stopped
// because the others did (signal 0).
StopReply thread_stop(Session& s, Process& owner, pid_t tid) {
  if (s.non_stop) {
    if (auto found = s.thread_stops.find(tid); found != s.thread_stops.end()) return found->second;
  } else {
    if (s.last_stop && s.last_stop->thread && s.last_stop->thread->tid == tid) return *s.last_stop;
    if (auto found = s.lldb.told_stops.find(tid); found != s.lldb.told_stops.end()) return found->second;
    // Going back never changes the present: a kept event stays kept while
    // the program stands in its past.
    if (!s.any_replaying()) {
      if (auto event = owner.take_pending_event(tid)) {
        event->pid = owner.pid();
        StopReply stop = s.make_stop_reply(*event);
        s.lldb.told_stops[tid] = stop;
        return stop;
      }
    }
  }
  ProcessEvent none;
  none.pid = owner.pid();
  none.tid = tid;
  return s.make_stop_reply(none);
}

Process* owner_of_thread(Session& s, pid_t tid) {
  Process* owner = s.inferiors().owner_of(tid);
  return owner != nullptr ? owner : s.process();
}

}  // namespace

Reply handle(Session& s, const HostInfoQuery&) {
  s.lldb.client = true;
  std::vector<std::pair<std::string, std::string>> facts = {
      {"triple", hex_encode(kTriple)}, {"ptrsize", "8"}, {"endian", "little"},
      // x86 debug registers trap after the access, as lldb-server says.
      {"watchpoint_exceptions_received", "after"}};
  struct utsname names {};
  if (::uname(&names) == 0) {
    std::string release = names.release;
    facts.emplace_back("os_version", release.substr(0, release.find_first_not_of("0123456789.")));
    facts.emplace_back("os_build", hex_encode(release));
    facts.emplace_back("hostname", hex_encode(names.nodename));
  }
  return Reply::now(reply_key_values(facts));
}

Reply handle(Session& s, const ProcessInfoQuery&) {
  s.lldb.client = true;
  Process* owner = s.process();
  if (owner == nullptr) return no_process_reply();
  std::vector<std::pair<std::string, std::string>> facts = {{"pid", hex_number(owner->pid())}};
  if (const auto identity = owner->identity()) {
    if (identity->parent) facts.emplace_back("parent-pid", hex_number(*identity->parent));
    if (const auto& ids = identity->ids) {
      facts.emplace_back("real-uid", hex_number(ids->real_uid));
      facts.emplace_back("real-gid", hex_number(ids->real_gid));
      facts.emplace_back("effective-uid", hex_number(ids->effective_uid));
      facts.emplace_back("effective-gid", hex_number(ids->effective_gid));
    }
  }
  facts.emplace_back("triple", hex_encode(kTriple));
  facts.emplace_back("ostype", "linux");
  facts.emplace_back("endian", "little");
  facts.emplace_back("ptrsize", "8");
  return Reply::now(reply_key_values(facts));
}

Reply handle(Session& s, const ThreadStopInfoQuery& req) {
  s.lldb.client = true;
  if (!s.has_process()) return no_process_reply();
  auto tid = s.resolve_thread(req.thread);
  if (!tid) return error(tid.error());
  const pid_t thread = *tid != 0 ? *tid : s.current_thread();
  Process* owner = owner_of_thread(s, thread);
  if (owner == nullptr) return no_process_reply();
  if (s.thread_running(thread)) return error(btstub::ErrorCode::InvalidArgument, "The thread is running");
  std::string payload = s.stop_reply_payload(thread_stop(s, *owner, thread));
  if (payload.starts_with("T")) {
    if (std::string name = owner->thread_name(thread); !name.empty()) payload += "name:" + name + ";";
  }
  return Reply::now(payload);
}

Reply handle(Session& s, const ThreadsInfoQuery&) {
  s.lldb.client = true;
  Process* owner = s.process();
  if (owner == nullptr) return no_process_reply();
  std::vector<ThreadStopSummary> threads;
  for (pid_t tid : owner->threads()) {
    ThreadStopSummary summary;
    summary.tid = tid;
    summary.name = owner->thread_name(tid);
    if (!s.thread_running(tid)) {
      StopReply stop = thread_stop(s, *owner, tid);
      if (stop.kind == StopReply::Kind::Signal && stop.signal != 0) {
        summary.signal = stop.signal;
        summary.reason = reason_of(stop);
      }
      summary.registers = stop.expedited;
    }
    threads.push_back(std::move(summary));
  }
  return Reply::now(reply_threads_info(threads));
}

Reply handle(Session& s, const MemoryRegionQuery& req) {
  s.lldb.client = true;
  Process* owner = s.process();
  if (owner == nullptr) return no_process_reply();
  std::vector<process::MemoryMapping> maps = owner->mappings();
  if (maps.empty()) return error(btstub::ErrorCode::NotSupported, "The program's memory map is unknown");
  // Inside a mapping: that mapping. In a gap: the gap, with no
  // permissions (lldb-server's answer), up to the next mapping or the
  // top of the address space.
  uint64_t gap_begin = 0;
  for (const process::MemoryMapping& map : maps) {
    if (req.addr < map.begin) {
      return Reply::now(reply_key_values({{"start", hex_number(gap_begin)}, {"size", hex_number(map.begin - gap_begin)}}));
    }
    if (req.addr < map.end) {
      std::string permissions = std::string(map.readable ? "r" : "") + (map.writable ? "w" : "") +
                                (map.executable ? "x" : "");
      std::vector<std::pair<std::string, std::string>> facts = {
          {"start", hex_number(map.begin)}, {"size", hex_number(map.end - map.begin)}, {"permissions", permissions},
          {"flags", ""}};
      if (!map.name.empty()) facts.emplace_back("name", hex_encode(map.name));
      return Reply::now(reply_key_values(facts));
    }
    gap_begin = map.end;
  }
  return Reply::now(reply_key_values({{"start", hex_number(gap_begin)}, {"size", hex_number(0 - gap_begin)}}));
}

Reply handle(Session& s, const WatchpointCountQuery&) {
  s.lldb.client = true;
  Process* owner = s.process();
  if (owner == nullptr || !owner->has_hw_points()) {
    return error(btstub::ErrorCode::NotSupported, "No hardware watchpoints");
  }
  return Reply::now(reply_key_values({{"num", "4"}}));  // DR0-DR3
}

Reply handle(Session& s, const EnableErrorStrings&) {
  s.lldb.client = true;
  s.lldb.error_strings = true;
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const SharedLibraryInfoQuery&) {
  s.lldb.client = true;
  Process* owner = s.process();
  if (owner == nullptr) return no_process_reply();
  auto slot = process::r_debug_slot(*owner);
  if (!slot) return error(slot.error());
  return Reply::now(hex_number(*slot));
}

Reply handle(Session& s, const ReadMemoryBinary& req) {
  s.lldb.client = true;
  if (!s.has_process()) return no_process_reply();
  // As m reads, at most half a reply: even escaped, every byte fits.
  if (req.length == 0) return Reply::now(reply_binary_memory({}));
  auto bytes = read_client_memory(s, req.addr, req.length);
  if (!bytes || bytes->empty()) return Reply::now(reply_error_code(kMemoryErrorCode));
  return Reply::now(reply_binary_memory(*bytes));
}

Reply handle(Session& s, const AllocateMemory& req) {
  s.lldb.client = true;
  if (!s.has_process()) return no_process_reply();
  const pid_t tid = s.current_thread();
  if (s.thread_running(tid)) return error(btstub::ErrorCode::InvalidArgument, "The program is running");
  if (auto ok = check_writable(s, tid); !ok) return error(ok.error());
  const int prot = (req.read ? PROT_READ : 0) | (req.write ? PROT_WRITE : 0) | (req.execute ? PROT_EXEC : 0);
  auto addr = s.process()->allocate_memory(tid, req.size, prot);
  if (!addr) return error(addr.error());
  s.lldb.allocations[*addr] = req.size;
  return Reply::now(hex_number(*addr));
}

Reply handle(Session& s, const DeallocateMemory& req) {
  s.lldb.client = true;
  if (!s.has_process()) return no_process_reply();
  auto found = s.lldb.allocations.find(req.addr);
  if (found == s.lldb.allocations.end()) {
    return error(btstub::ErrorCode::InvalidArgument, "No memory was allocated at " + hex_number(req.addr));
  }
  const pid_t tid = s.current_thread();
  if (s.thread_running(tid)) return error(btstub::ErrorCode::InvalidArgument, "The program is running");
  if (auto ok = check_writable(s, tid); !ok) return error(ok.error());
  if (auto ok = s.process()->free_memory(tid, found->first, found->second); !ok) return error(ok.error());
  s.lldb.allocations.erase(found);
  return Reply::now(reply_ok());
}

}  // namespace stub::session
