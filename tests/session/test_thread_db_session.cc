// qSymbol and qGetTLSAddr through the session, with a fake libthread_db
// (fake_thread_db.h) that looks symbols up and reads the program as the
// real one does.
#include <catch2/catch.hpp>

#include "fake_process.h"
#include "fake_thread_db.h"
#include "protocol/replies.h"
#include "stub/session/session.h"

namespace test_thread_db_session {  // this file's own names, apart in a unity build

namespace {

using stub::process::ThreadDb;
using stub::process::ThreadDbTarget;

struct Fixture {
  test::FakeProcess process;
  stub::session::Session session{stub::session::SessionConfig{}, &process};
  int opened = 0;

  Fixture() {
    process.memory[0x5000] = 1;  // nptl_version's string
    for (uint64_t a = 0x6000; a < 0x6008; ++a) process.memory[a] = 0;
    process.memory[0x6001] = 0x01;  // the 8 bytes at _thread_db_dtv: 0x100
    process.regs[100].set_u64(protocol::Amd64Reg::fs_base, 0x7000);
    test::use_fake_thread_db(session, &opened);
  }
  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  static std::string known(std::string_view name, uint64_t value) { return test::symbol_known(name, value); }
  static std::string unknown(std::string_view name) { return test::symbol_unknown(name); }
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
  CHECK(f.ask(Fixture::known("_thread_db_dtv", 0x6000)) == Fixture::question("_thread_db_unused"));
  CHECK(f.ask(Fixture::unknown("_thread_db_unused")) == "OK");

  // Every symbol looked up: later rounds ask nothing, as gdbserver's.
  CHECK(f.ask("qSymbol::") == "OK");
  CHECK(f.ask("qGetTLSAddr:p64.64,10,2000") == protocol::hex_number(0x7000 + 0x100 + 0x10 + 0x2000));
  CHECK(f.ask("qGetTLSAddr:64,0,0") == "7100");
  // Opened again at the second round: not attached after the first, it is
  // found anew from the search path (as gdbserver loads it at each try).
  CHECK(f.opened == 2);
  CHECK(f.ask("qSymbol::") == "OK");
  CHECK(f.opened == 2);  // attached: kept
}

TEST_CASE("qGetTLSAddr errors reach gdb as E. messages", "[session][thread_db]") {
  Fixture f;
  CHECK(f.ask("qSymbol::") == Fixture::question("nptl_version"));
  CHECK(f.ask(Fixture::known("nptl_version", 0x5000)) == Fixture::question("_thread_db_dtv"));
  CHECK(f.ask(Fixture::known("_thread_db_dtv", 0x6000)) == Fixture::question("_thread_db_unused"));
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

TEST_CASE("libthread_db comes from the client's search path only where it may start programs",
          "[session][thread_db]") {
  struct Factory : stub::session::ProcessFactory {
    bool refuse = false;
    btstub::Expected<stub::process::Process*> launch(const std::vector<std::string>&,
                                                     const stub::session::RunSettings&) override {
      return btstub::make_error(btstub::ErrorCode::NotSupported, "no");
    }
    btstub::Expected<stub::process::Process*> attach(pid_t) override {
      return btstub::make_error(btstub::ErrorCode::NotSupported, "no");
    }
    btstub::Expected<void> may_start_programs() const override {
      if (refuse) return btstub::make_error(btstub::ErrorCode::NotSupported, "--no-run");
      return {};
    }
  };
  for (bool refuse : {false, true}) {
    Fixture f;
    Factory factory;
    factory.refuse = refuse;
    f.session.process_factory = &factory;
    std::vector<std::string> paths;
    f.session.open_thread_db = [&paths](ThreadDbTarget, const std::string& path) -> btstub::Expected<std::unique_ptr<ThreadDb>> {
      paths.push_back(path);
      return btstub::make_error(btstub::ErrorCode::NotSupported, "none here");
    };
    REQUIRE(f.ask("qRcmd," + protocol::hex_encode("set libthread-db-search-path /tmp/mine:$sdir")) == "OK");
    CHECK(f.ask("qSymbol::") == "OK");
    CHECK(paths == std::vector<std::string>{refuse ? "$sdir" : "/tmp/mine:$sdir"});
  }
}

}  // namespace test_thread_db_session
