#pragma once
// glibc's libthread_db, the library that knows how glibc lays out its
// threads, used as gdbserver uses it: for the address of a thread's
// thread-local variable (qGetTLSAddr). The layout of glibc's link_map and
// thread descriptor changes between glibc versions; libthread_db ships with
// the glibc the program runs on and reads it through symbols gdb looks up
// for it (qSymbol), so nothing here hard-codes an offset.
// Behind an interface so that the session's qSymbol exchange is tested with
// a fake (tests/session).
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/expected.h"

namespace stub::process {

using btstub::Expected;

// What libthread_db reads of the program, supplied by the session: a thread
// standing in its recorded past is read in its past.
struct ThreadDbTarget {
  pid_t pid = 0;
  // `len` bytes of memory as thread `tid` sees it; all of them or an error.
  std::function<Expected<std::vector<uint8_t>>(pid_t tid, uint64_t addr, std::size_t len)> read_memory;
  // fs_base (true) or gs_base (false) of thread `tid`.
  std::function<Expected<uint64_t>(pid_t tid, bool fs)> segment_base;
  // A symbol's address as gdb gave it (qSymbol); nullopt: not known here.
  std::function<std::optional<uint64_t>(std::string_view name)> look_up;
};

class ThreadDb {
 public:
  virtual ~ThreadDb() = default;
  // td_ta_new: attaches to the program's thread library. Fails (harmlessly,
  // to be tried again) while the symbols it looks up are not known, or
  // while the program has not loaded glibc's thread code yet.
  virtual Expected<void> attach() = 0;
  virtual bool attached() const = 0;
  // Every symbol libthread_db may look up (td_symbol_list), which
  // gdbserver asks gdb for once attached, to answer later lookups itself.
  virtual std::vector<std::string> symbols() const = 0;
  // The address of the variable at `offset` in thread `tid`'s block of the
  // module whose link_map is at `link_map` (td_thr_tls_get_addr); with
  // link_map 0, of module 1 (td_thr_tlsbase), a static program's own.
  virtual Expected<uint64_t> tls_address(pid_t tid, uint64_t offset, uint64_t link_map) = 0;
};

// The host's libthread_db.so.1 over `target`, from the first directory of
// `search_path` (gdbserver's libthread-db-search-path: ':'-separated;
// "$sdir" is the system's library; "$pdir", the directory of the program's
// libpthread, is skipped as gdbserver skips it) that has one; an error when
// none loads (then TLS addresses are refused, as by a gdbserver without it).
Expected<std::unique_ptr<ThreadDb>> open_thread_db(ThreadDbTarget target, const std::string& search_path);

}  // namespace stub::process
