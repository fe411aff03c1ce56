// qXfer:OBJECT:read: each object is a function that builds the whole
// document; the reply carries the slice gdb asked for.
#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

#include "protocol/amd64_registers.h"
#include "stub/session/handlers.h"
#include "stub/process/libraries_svr4.h"
#include "stub/process/os_ipc.h"
#include "stub/process/os_processes.h"
#include "stub/process/os_system.h"
#include "stub/process/os_tasks.h"

namespace stub::session {

using process::libraries_svr4_xml;

namespace {

using XferSource = Expected<std::string> (*)(Session&, const std::string& annex);

Expected<std::string> target_features(Session& s, const std::string& annex) {
  if (annex != "target.xml") {
    return btstub::make_error(btstub::ErrorCode::InvalidArgument, "Unknown target description " + annex);
  }
  return amd64_target_xml(s.register_layout());
}

// Objects that take no annex refuse one, as gdbserver does: a client that
// named one asked for something this document is not.
Expected<void> no_annex(std::string_view object, const std::string& annex) {
  if (annex.empty()) return {};
  return btstub::make_error(btstub::ErrorCode::InvalidArgument,
                            "qXfer:" + std::string(object) + " takes no annex (got \"" + annex + "\")");
}

Expected<std::string> auxv(Session& s, const std::string& annex) {
  if (auto checked = no_annex("auxv", annex); !checked) return checked.error();
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  return s.process()->read_auxv();
}

// The annex is the pid in hex (empty: the current process); only ours is known.
Expected<std::string> exec_file(Session& s, const std::string& annex) {
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  if (!annex.empty()) {
    uint64_t pid = 0;
    auto [end, ec] = std::from_chars(annex.data(), annex.data() + annex.size(), pid, 16);
    Process* named = ec == std::errc() && end == annex.data() + annex.size()
                         ? s.inferiors().find(static_cast<pid_t>(pid))
                         : nullptr;
    if (named == nullptr) return btstub::make_error(btstub::ErrorCode::NoProcess, "No such process");
    return named->exec_file();
  }
  return s.process()->exec_file();
}

Expected<std::string> libraries(Session& s, const std::string&) {
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  return libraries_svr4_xml(*s.process());
}

// Every thread with its name (comm) and last core: `info threads` shows the names.
Expected<std::string> threads(Session& s, const std::string& annex) {
  if (auto checked = no_annex("threads", annex); !checked) return checked.error();
  std::vector<protocol::ThreadInfo> infos;
  for (Process* process : s.inferiors().live()) {
    for (pid_t tid : process->threads()) {
      infos.push_back({protocol::ThreadId{process->pid(), tid}, process->thread_name(tid), process->thread_core(tid)});
    }
  }
  return protocol::threads_xml(infos, s.client_features.multiprocess);
}

// The raw siginfo_t of the general thread's last stop ($_siginfo).
Expected<std::string> siginfo(Session& s, const std::string& annex) {
  if (auto checked = no_annex("siginfo", annex); !checked) return checked.error();
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  auto bytes = s.process()->read_siginfo(s.current_thread());
  if (!bytes) return bytes.error();
  return std::string(bytes->begin(), bytes->end());
}

const std::map<std::string, XferSource, std::less<>>& xfer_sources() {
  static const std::map<std::string, XferSource, std::less<>> sources = {
      {"features", target_features},
      {"auxv", auxv},
      {"exec-file", exec_file},
      {"libraries-svr4", libraries},
      {"threads", threads},
      {"siginfo", siginfo},
  };
  return sources;
}

// The `info os` documents, by annex (empty: the list of types), each
// built from what stub/process reads of /proc.
using OsdataSource = std::string (*)();

const std::map<std::string, OsdataSource, std::less<>>& osdata_sources() {
  static const std::map<std::string, OsdataSource, std::less<>> sources = {
      {"", [] { return protocol::osdata_types_xml(); }},
      {"types", [] { return protocol::osdata_types_xml(); }},  // `info os types`, as gdbserver
      {"cpus", [] { return protocol::osdata_cpus_xml(process::list_os_cpus()); }},
      {"files", [] { return protocol::osdata_files_xml(process::list_os_files()); }},
      {"modules", [] { return protocol::osdata_modules_xml(process::list_os_modules()); }},
      {"msg", [] { return protocol::osdata_msg_xml(process::list_os_message_queues()); }},
      {"processes", [] { return protocol::osdata_processes_xml(process::list_os_processes()); }},
      {"procgroups", [] { return protocol::osdata_procgroups_xml(process::list_os_process_groups()); }},
      {"semaphores", [] { return protocol::osdata_semaphores_xml(process::list_os_semaphores()); }},
      {"shm", [] { return protocol::osdata_shm_xml(process::list_os_shared_memory()); }},
      {"sockets", [] { return protocol::osdata_sockets_xml(process::list_os_sockets()); }},
      {"threads", [] { return protocol::osdata_threads_xml(process::list_os_threads()); }},
  };
  return sources;
}

// The tables change between gdb's chunked reads, so a document is built at
// offset 0 and later chunks come from that snapshot (as in gdbserver).
Reply handle_osdata_xfer(Session& s, const XferRead& req) {
  auto source = osdata_sources().find(req.annex);
  if (source == osdata_sources().end()) {
    return error(btstub::ErrorCode::InvalidArgument, "Unknown osdata type " + req.annex);
  }
  auto snapshot = s.osdata_snapshots.find(req.annex);
  if (req.offset == 0 || snapshot == s.osdata_snapshots.end()) {
    snapshot = s.osdata_snapshots.insert_or_assign(req.annex, source->second()).first;
  }
  std::string chunk = reply_xfer_chunk(snapshot->second, req.offset, req.length);
  if (chunk.size() == 1 && chunk[0] == 'l') s.osdata_snapshots.erase(snapshot);  // read to its end
  return Reply::now(std::move(chunk));
}

}  // namespace

Reply handle(Session& s, const XferRead& req) {
  if (req.object == "osdata") return handle_osdata_xfer(s, req);
  if (req.object == "btrace" || req.object == "btrace-conf") return handle_btrace_xfer(s, req);
  auto it = xfer_sources().find(req.object);
  if (it == xfer_sources().end()) return Reply::now(reply_empty());
  auto document = it->second(s, req.annex);
  if (!document) return error(document.error());
  return Reply::now(reply_xfer_chunk(*document, req.offset, req.length));
}

// qXfer:siginfo:write (gdb's `set $_siginfo...`): the general thread's
// siginfo_t, changed in place; the signal it goes on with carries it, as
// under gdbserver. Only in the present: the past is read-only.
Reply handle(Session& s, const XferWrite& req) {
  if (req.object != "siginfo") return Reply::now(reply_empty());
  using btstub::ErrorCode;
  if (auto checked = no_annex("siginfo", req.annex); !checked) return error(checked.error());
  if (!s.has_process()) return error(ErrorCode::NoProcess, "No process");
  const pid_t tid = s.current_thread();
  if (s.replaying(tid)) {
    return error(ErrorCode::InvalidArgument, "Cannot write siginfo in the recorded past; go forward to the end first");
  }
  auto info = s.process()->read_siginfo(tid);
  if (!info) return error(info.error());
  if (req.offset > info->size() || req.data.size() > info->size() - req.offset) {
    return error(ErrorCode::InvalidArgument, "Write past the end of siginfo");
  }
  std::copy(req.data.begin(), req.data.end(), info->begin() + static_cast<std::ptrdiff_t>(req.offset));
  if (auto written = s.process()->write_siginfo(tid, *info); !written) return error(written.error());
  return Reply::now(protocol::hex_number(req.data.size()));
}

}  // namespace stub::session
