#pragma once
// A stand-in for libthread_db (stub/process/thread_db.h) that looks symbols
// up and reads the program as the real one does: it attaches once
// "nptl_version" is known and readable; a TLS address is fs_base + the
// 8 bytes at "_thread_db_dtv" + offset + link_map.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "protocol/replies.h"
#include "stub/process/thread_db.h"
#include "stub/session/session.h"

namespace test {

class FakeThreadDb : public stub::process::ThreadDb {
 public:
  explicit FakeThreadDb(stub::process::ThreadDbTarget target) : target_(std::move(target)) {}
  btstub::Expected<void> attach() override {
    auto version = target_.look_up("nptl_version");
    if (!version) return btstub::make_error(btstub::ErrorCode::NotSupported, "no nptl_version");
    if (!target_.read_memory(target_.pid, *version, 1)) return btstub::make_error(btstub::ErrorCode::MemoryFault, "unreadable");
    attached_ = true;
    return {};
  }
  bool attached() const override { return attached_; }
  std::vector<std::string> symbols() const override { return {"nptl_version", "_thread_db_dtv", "_thread_db_unused"}; }
  btstub::Expected<uint64_t> tls_address(pid_t tid, uint64_t offset, uint64_t link_map) override {
    auto dtv = target_.look_up("_thread_db_dtv");
    if (!dtv) return btstub::make_error(btstub::ErrorCode::NotSupported, "no dtv symbol");
    auto block = target_.read_memory(tid, *dtv, 8);
    if (!block) return block.error();
    if (block->size() != 8) return btstub::make_error(btstub::ErrorCode::MemoryFault, "short read");
    uint64_t base = 0;
    std::memcpy(&base, block->data(), 8);
    auto fs = target_.segment_base(tid, true);
    if (!fs) return fs.error();
    return *fs + base + offset + link_map;
  }

 private:
  stub::process::ThreadDbTarget target_;
  bool attached_ = false;
};

// Makes `session` open FakeThreadDbs; counts the openings.
inline void use_fake_thread_db(stub::session::Session& session, int* opened = nullptr) {
  session.open_thread_db = [opened](stub::process::ThreadDbTarget target,
                                    const std::string&) -> btstub::Expected<std::unique_ptr<stub::process::ThreadDb>> {
    if (opened != nullptr) ++*opened;
    return std::unique_ptr<stub::process::ThreadDb>(std::make_unique<FakeThreadDb>(std::move(target)));
  };
}

// gdb's qSymbol packets.
inline std::string symbol_known(std::string_view name, uint64_t value) {
  return "qSymbol:" + protocol::hex_number(value) + ":" + protocol::hex_encode(name);
}
inline std::string symbol_unknown(std::string_view name) { return "qSymbol::" + protocol::hex_encode(name); }

}  // namespace test
