// ThreadDb over the host's libthread_db.so.1, and the proc_service callbacks
// it calls, as gdbserver's thread-db.cc and proc-service.cc do it.
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <proc_service.h>
#include <sys/reg.h>
#include <thread_db.h>

#include <cstring>
#include <string>

#include "stub/process/thread_db.h"

// libthread_db hands this back to every callback: the program it reads.
// It keeps the pointer from td_ta_new on, so it lives as long as the agent.
struct ps_prochandle {
  const stub::process::ThreadDbTarget* target = nullptr;
  // The thread whose view of memory the current call reads (its past while
  // it replays); the program's leader outside a per-thread call.
  pid_t thread = 0;
};

namespace stub::process {
namespace {

using btstub::ErrorCode;
using btstub::make_error;

const char* td_error_text(td_err_e err) {
  switch (err) {
    case TD_OK: return "ok";
    case TD_ERR: return "generic error";
    case TD_NOTHR: return "no thread";
    case TD_NOLIBTHREAD: return "no thread library (yet)";
    case TD_NOSV: return "no synchronization handle";
    case TD_NOCAPAB: return "no capability";
    case TD_BADPH: return "bad process handle";
    case TD_BADTA: return "bad thread agent";
    case TD_BADTH: return "bad thread handle";
    case TD_DBERR: return "cannot read the thread library's data";
    case TD_MALLOC: return "out of memory";
    case TD_VERSION: return "libthread_db does not match the program's glibc";
    case TD_NOTLS: return "no thread-local storage in this module";
    case TD_TLSDEFER: return "the thread has not allocated this module's thread-local storage yet";
    case TD_NOAPLIC: return "not applicable";
    default: return "libthread_db error";
  }
}

btstub::Error td_error(std::string what, td_err_e err) {
  return make_error(ErrorCode::NotSupported, what + ": " + td_error_text(err));
}

class LibThreadDb final : public ThreadDb {
 public:
  LibThreadDb(void* library, ThreadDbTarget target) : library_(library), target_(std::move(target)) {
    handle_.target = &target_;
    handle_.thread = target_.pid;
  }
  ~LibThreadDb() override {
    if (agent_ != nullptr && ta_delete_ != nullptr) ta_delete_(agent_);
    dlclose(library_);
  }

  Expected<void> load_functions() {
    if (!find(ta_new_, "td_ta_new") || !find(ta_delete_, "td_ta_delete") ||
        !find(map_lwp2thr_, "td_ta_map_lwp2thr") || !find(symbol_list_, "td_symbol_list")) {
      return make_error(ErrorCode::NotSupported, "libthread_db lacks an essential function");
    }
    // Not essential, as for gdbserver: without them TLS is refused.
    find(tls_get_addr_, "td_thr_tls_get_addr");
    find(tlsbase_, "td_thr_tlsbase");
    return {};
  }

  Expected<void> attach() override {
    if (agent_ != nullptr) return {};
    handle_.thread = target_.pid;
    td_err_e err = ta_new_(&handle_, &agent_);
    if (err != TD_OK) {
      agent_ = nullptr;
      return td_error("td_ta_new", err);
    }
    return {};
  }

  bool attached() const override { return agent_ != nullptr; }

  std::vector<std::string> symbols() const override {
    std::vector<std::string> names;
    for (const char** name = symbol_list_(); name != nullptr && *name != nullptr; ++name) names.emplace_back(*name);
    return names;
  }

  Expected<uint64_t> tls_address(pid_t tid, uint64_t offset, uint64_t link_map) override {
    if (agent_ == nullptr) return make_error(ErrorCode::NotSupported, "libthread_db is not attached to the program yet");
    if (tls_get_addr_ == nullptr || (link_map == 0 && tlsbase_ == nullptr))
      return make_error(ErrorCode::NotSupported, "libthread_db cannot find thread-local storage");
    handle_.thread = tid;
    td_thrhandle_t thread{};
    td_err_e err = map_lwp2thr_(agent_, tid, &thread);
    if (err != TD_OK) return td_error("Cannot find thread " + std::to_string(tid) + " in libthread_db", err);
    psaddr_t address = nullptr;
    if (link_map != 0) {
      err = tls_get_addr_(&thread, reinterpret_cast<psaddr_t>(link_map), offset, &address);
    } else {
      // A static program: its own block is module 1 (gdbserver does the same).
      err = tlsbase_(&thread, 1, &address);
      if (err == TD_OK) address = static_cast<char*>(address) + offset;
    }
    handle_.thread = target_.pid;
    if (err != TD_OK) return td_error("Cannot find thread-local storage", err);
    return reinterpret_cast<uint64_t>(address);
  }

 private:
  template <class Function>
  bool find(Function*& function, const char* name) {
    function = reinterpret_cast<Function*>(dlsym(library_, name));
    return function != nullptr;
  }

  void* library_;
  ThreadDbTarget target_;
  ps_prochandle handle_;
  td_thragent_t* agent_ = nullptr;
  decltype(td_ta_new)* ta_new_ = nullptr;
  decltype(td_ta_delete)* ta_delete_ = nullptr;
  decltype(td_ta_map_lwp2thr)* map_lwp2thr_ = nullptr;
  decltype(td_symbol_list)* symbol_list_ = nullptr;
  decltype(td_thr_tls_get_addr)* tls_get_addr_ = nullptr;
  decltype(td_thr_tlsbase)* tlsbase_ = nullptr;
};

}  // namespace

Expected<std::unique_ptr<ThreadDb>> open_thread_db(ThreadDbTarget target, const std::string& search_path) {
  std::string tried;
  std::string_view rest = search_path;
  while (true) {
    const std::size_t colon = rest.find(':');
    const std::string_view dir = rest.substr(0, colon);
    std::string path;
    if (dir == "$sdir") path = LIBTHREAD_DB_SO;  // found as the dynamic linker finds it
    else if (!dir.empty() && dir != "$pdir") path = std::string(dir) + "/" LIBTHREAD_DB_SO;
    if (!path.empty()) {
      if (void* library = dlopen(path.c_str(), RTLD_NOW)) {
        auto db = std::make_unique<LibThreadDb>(library, std::move(target));
        if (auto loaded = db->load_functions(); !loaded) return loaded.error();
        return std::unique_ptr<ThreadDb>(std::move(db));
      }
      const char* why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (why ? why : path.c_str());
    }
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return make_error(ErrorCode::NotSupported,
                    "Cannot load " LIBTHREAD_DB_SO " from `" + search_path + "'" + (tried.empty() ? "" : ": " + tried));
}

}  // namespace stub::process

// ---- proc_service: what libthread_db calls back ----
extern "C" {

ps_err_e ps_pdread(struct ps_prochandle* ph, psaddr_t addr, void* buf, size_t size) {
  auto bytes = ph->target->read_memory(ph->thread, reinterpret_cast<uint64_t>(addr), size);
  if (!bytes || bytes->size() != size) return PS_ERR;
  std::memcpy(buf, bytes->data(), size);
  return PS_OK;
}

// libthread_db writes only to turn on thread event reporting, which
// btstub (like gdbserver, which uses the kernel's clone events) never asks
// for; and memory of the recorded past must not change.
ps_err_e ps_pdwrite(struct ps_prochandle*, psaddr_t, const void*, size_t) { return PS_ERR; }

ps_err_e ps_ptread(struct ps_prochandle* ph, psaddr_t addr, void* buf, size_t size) {
  return ps_pdread(ph, addr, buf, size);
}

ps_err_e ps_ptwrite(struct ps_prochandle*, psaddr_t, const void*, size_t) { return PS_ERR; }

// On x86-64 libthread_db finds a thread's descriptor through
// ps_get_thread_area, never through the register sets; gdbserver does not
// provide the FP ones either.
ps_err_e ps_lgetregs(struct ps_prochandle*, lwpid_t, prgregset_t) { return PS_ERR; }
ps_err_e ps_lsetregs(struct ps_prochandle*, lwpid_t, const prgregset_t) { return PS_ERR; }
ps_err_e ps_lgetfpregs(struct ps_prochandle*, lwpid_t, prfpregset_t*) { return PS_ERR; }
ps_err_e ps_lsetfpregs(struct ps_prochandle*, lwpid_t, const prfpregset_t*) { return PS_ERR; }

pid_t ps_getpid(struct ps_prochandle* ph) { return ph->target->pid; }

ps_err_e ps_get_thread_area(struct ps_prochandle* ph, lwpid_t lwpid, int idx, psaddr_t* base) {
  if (idx != FS && idx != GS) return PS_BADADDR;
  auto value = ph->target->segment_base(lwpid, idx == FS);
  if (!value) return PS_ERR;
  *base = reinterpret_cast<psaddr_t>(*value);
  return PS_OK;
}

// Answered from what gdb told us (qSymbol), never by asking it here: the
// session asks gdb between packets (stub/session/thread_library.h).
ps_err_e ps_pglobal_lookup(struct ps_prochandle* ph, const char*, const char* name, psaddr_t* sym_addr) {
  auto address = ph->target->look_up(name);
  if (!address) return PS_NOSYM;
  *sym_addr = reinterpret_cast<psaddr_t>(*address);
  return PS_OK;
}

}  // extern "C"
