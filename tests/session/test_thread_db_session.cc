// qSymbol and qGetTLSAddr through the session, with a fake libthread_db that
// looks symbols up and reads the program as the real one does.
#include <catch2/catch.hpp>

#include "fake_process.h"
#include "protocol/replies.h"
#include "stub/session/session.h"

namespace {

using stub::process::ThreadDb;
using stub::process::ThreadDbTarget;

// Attaches once "nptl_version" is known and its memory readable; a TLS
// address is fs_base + the "_thread_db_dtv" answer + offset + link_map.
class FakeThreadDb : public ThreadDb {
 public:
  explicit FakeThreadDb(ThreadDbTarget target) : target_(std::move(target)) {}
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
    auto base = target_.segment_base(tid, true);
    if (!base) return base.error();
    return *base + *dtv + offset + link_map;
  }

 private:
  ThreadDbTarget target_;
  bool attached_ = false;
};

struct Fixture {
  test::FakeProcess process;
  stub::session::Session session{stub::session::SessionConfig{}, &process};
  int opened = 0;

  Fixture() {
    process.memory[0x5000] = 1;  // nptl_version's string
    process.regs[100].set_u64(protocol::Amd64Reg::fs_base, 0x7000);
    session.open_thread_db = [this](ThreadDbTarget target, const std::string&) -> btstub::Expected<std::unique_ptr<ThreadDb>> {
      ++opened;
      return std::unique_ptr<ThreadDb>(std::make_unique<FakeThreadDb>(std::move(target)));
    };
  }
  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  static std::string known(std::string_view name, uint64_t value) {
    return "qSymbol:" + protocol::hex_number(value) + ":" + protocol::hex_encode(name);
  }
  static std::string unknown(std::string_view name) { return "qSymbol::" + protocol::hex_encode(name); }
  static std::string question(std::string_view name) { return protocol::reply_symbol_question(name); }
};

}  // namespace

TEST_CASE("qSymbol asks for nptl_version until gdb knows it, then every libthread_db symbol once",
          "[session][thread_db]") {
  Fixture f;
  // Before glibc is loaded: gdb does not know the symbol; the round ends.
  CHECK(f.ask("qSymbol::") == Fixture::question("nptl_version"));
  CHECK(f.ask(Fixture::unknown("nptl_version")) == "OK");
  CHECK(f.ask("qGetTLSAddr:p64.64,10,0") != "");
  CHECK(f.ask("qGetTLSAddr:p64.64,10,0").starts_with("E."));

  // After a library load gdb offers again: the same question, then the rest.
  CHECK(f.ask("qSymbol::") == Fixture::question("nptl_version"));
  CHECK(f.ask(Fixture::known("nptl_version", 0x5000)) == Fixture::question("_thread_db_dtv"));
  CHECK(f.ask(Fixture::known("_thread_db_dtv", 0x100)) == Fixture::question("_thread_db_unused"));
  CHECK(f.ask(Fixture::unknown("_thread_db_unused")) == "OK");

  // Every symbol looked up: later rounds ask nothing, as gdbserver's.
  CHECK(f.ask("qSymbol::") == "OK");
  CHECK(f.ask("qGetTLSAddr:p64.64,10,2000") == protocol::hex_number(0x7000 + 0x100 + 0x10 + 0x2000));
  CHECK(f.ask("qGetTLSAddr:64,0,0") == "7100");
  CHECK(f.opened == 1);
}

TEST_CASE("qGetTLSAddr errors reach gdb as E. messages", "[session][thread_db]") {
  Fixture f;
  CHECK(f.ask("qSymbol::") == Fixture::question("nptl_version"));
  CHECK(f.ask(Fixture::known("nptl_version", 0x5000)) == Fixture::question("_thread_db_dtv"));
  CHECK(f.ask(Fixture::known("_thread_db_dtv", 0x100)) == Fixture::question("_thread_db_unused"));
  CHECK(f.ask(Fixture::known("_thread_db_unused", 0x200)) == "OK");

  CHECK(f.ask("qGetTLSAddr:p64.99,10,0").starts_with("E."));  // no such thread
  CHECK(f.ask("qGetTLSAddr:p64.-1,10,0").starts_with("E."));  // not one thread
  CHECK(f.ask("qGetTLSAddr:p64.64,10").starts_with("E."));    // malformed
  CHECK(f.ask("qGetTLSAddr:p64.64,zz,0").starts_with("E."));
  CHECK(f.ask("qSymbol:12:zz").starts_with("E."));
  f.process.regs[100].set_available(static_cast<unsigned>(protocol::Amd64Reg::fs_base), false);
  CHECK(f.ask("qGetTLSAddr:p64.64,10,0").starts_with("E."));
}

TEST_CASE("without a libthread_db qSymbol ends at once and TLS is refused", "[session][thread_db]") {
  Fixture f;
  f.session.open_thread_db = [](ThreadDbTarget, const std::string&) -> btstub::Expected<std::unique_ptr<ThreadDb>> {
    return btstub::make_error(btstub::ErrorCode::NotSupported, "Cannot load libthread_db.so.1");
  };
  CHECK(f.ask("qSymbol::") == "OK");
  CHECK(f.ask("qGetTLSAddr:p64.64,10,0") == "E.Cannot load libthread_db.so.1");
}

TEST_CASE("a new program forgets the symbols of the old one", "[session][thread_db]") {
  Fixture f;
  CHECK(f.ask("qSymbol::") == Fixture::question("nptl_version"));
  CHECK(f.ask(Fixture::known("nptl_version", 0x5000)) == Fixture::question("_thread_db_dtv"));
  f.session.set_process(&f.process);
  CHECK(f.ask("qSymbol::") == Fixture::question("nptl_version"));
  CHECK(f.opened == 2);
}

TEST_CASE("qSymbol without a program is OK, qGetTLSAddr an error", "[session][thread_db]") {
  test::FakeProcess process;
  stub::session::Session session{stub::session::SessionConfig{}, nullptr};
  CHECK(*session.handle_packet("qSymbol::").payload == "OK");
  CHECK(session.handle_packet("qGetTLSAddr:p64.64,10,0").payload->starts_with("E."));
}
