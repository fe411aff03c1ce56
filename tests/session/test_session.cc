// Session + handlers against FakeProcess: each check names the exact payload
// gdb would receive.
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>

#include "fake_process.h"
#include "protocol/replies.h"
#include "stub/session/session.h"

namespace test_session {  // this file's own names, apart in a unity build

namespace {

struct Fixture {
  test::FakeProcess process;
  stub::session::Session session{stub::session::SessionConfig{}, &process};

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    return *reply.payload;
  }
  void negotiate() { ask("qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386"); }
};

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("qSupported advertises what btstub does and echoes client features", "[session]") {
  Fixture f;
  std::string reply = f.ask("qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386");
  CHECK(contains(reply, "PacketSize=4000"));
  CHECK(contains(reply, "qXfer:features:read+"));
  CHECK(contains(reply, "multiprocess+"));
  CHECK(contains(reply, "swbreak+"));
  CHECK_FALSE(contains(reply, "ReverseStep"));  // not until replay exists

  Fixture plain;
  std::string reply2 = plain.ask("qSupported");
  CHECK_FALSE(contains(reply2, "multiprocess+"));
  CHECK_FALSE(contains(reply2, "swbreak+"));
}

TEST_CASE("initial stop reply is a SIGTRAP with expedited rbp, rsp, rip and the thread", "[session]") {
  Fixture f;
  f.negotiate();
  CHECK(f.ask("?") ==
        "T0506:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p64.64;");
  CHECK(f.ask("qC") == "QCp64.64");
  CHECK(f.ask("qfThreadInfo") == "mp64.64");
  CHECK(f.ask("qsThreadInfo") == "l");
  CHECK(f.ask("qAttached") == "0");
}

TEST_CASE("an exception inside a handler is an E reply with its text, the session goes on", "[session]") {
  Fixture f;
  f.process.memory[0x1000] = 0x2a;
  f.process.throw_on_read = "basic_filebuf::underflow error reading the file";
  CHECK(f.ask("m1000,1") == "E.internal error: basic_filebuf::underflow error reading the file");
  f.process.throw_on_read.reset();
  CHECK(f.ask("m1000,1") == "2a");
}

TEST_CASE("memory reads and writes go through the process, errors are numeric", "[session]") {
  Fixture f;
  for (uint64_t a = 0x1000; a < 0x1004; ++a) f.process.memory[a] = static_cast<uint8_t>(a & 0xff);
  CHECK(f.ask("m1000,4") == "00010203");
  CHECK(f.ask("m1002,8") == "0203");  // partial: the readable prefix
  CHECK(f.ask("m5000,4") == "E01");
  CHECK(f.ask("M1000,2:abcd") == "OK");
  CHECK(f.ask("m1000,2") == "abcd");
  CHECK(f.ask("M5000,1:00") == "E01");
  CHECK(f.ask("X1000,0:") == "OK");
}

TEST_CASE("registers: g shows all, P writes one, p reads it back", "[session]") {
  Fixture f;
  std::string g = f.ask("g");
  CHECK(g.size() == 2 * 560);  // core to segments: the fake has no XSAVE features
  CHECK(f.ask("P0=efbeadde00000000") == "OK");
  CHECK(f.ask("p0") == "efbeadde00000000");
  CHECK(f.process.regs[100].get_u64(protocol::Amd64Reg::rax) == 0xdeadbeef);
  CHECK(contains(f.ask("p999"), "E."));
  CHECK(contains(f.ask("P0=12"), "E."));  // wrong size
}

namespace {
std::string to_hex(std::size_t value) {
  char buffer[20];
  std::snprintf(buffer, sizeof buffer, "%zx", value);
  return buffer;
}
}  // namespace

TEST_CASE("registers: g, p and P number the registers of the process's features", "[session]") {
  Fixture f;
  // AVX and PKU without AVX-512 (an AMD Zen 3): pkru is wire register 76.
  f.process.features = protocol::Amd64Features{.avx = true, .pkeys = true};
  std::string g = f.ask("g");
  CHECK(g.size() == 2 * (560 + 16 * 16 + 4));
  CHECK(f.ask("P4c=78563412") == "OK");
  CHECK(f.process.regs[100].get_u64(protocol::Amd64Reg::pkru) == 0x12345678);
  CHECK(f.ask("p4c") == "78563412");
  CHECK(f.ask("P3c=0102030405060708090a0b0c0d0e0f10") == "OK");  // ymm0h
  CHECK(f.process.regs[100].bytes(static_cast<unsigned>(protocol::Amd64Reg::ymm0h))[15] == 0x10);
  CHECK(contains(f.ask("p4d"), "E."));  // past the last register of this layout
  CHECK(contains(f.ask("P4c=12"), "E."));
  // G takes the layout's order: the pkru bytes come last.
  std::string all = f.ask("g");
  all.replace(all.size() - 8, 8, "efbeadde");
  CHECK(f.ask("G" + all) == "OK");
  CHECK(f.process.regs[100].get_u64(protocol::Amd64Reg::pkru) == 0xdeadbeef);
  std::string xml;
  for (std::string chunk = "m"; chunk.rfind("m", 0) == 0;) {
    chunk = f.ask("qXfer:features:read:target.xml:" + to_hex(xml.size()) + ",fff");
    REQUIRE_FALSE(chunk.empty());
    xml += chunk.substr(1);
  }
  CHECK(contains(xml, "org.gnu.gdb.i386.avx\""));
  CHECK(contains(xml, "<reg name=\"pkru\" bitsize=\"32\" type=\"uint32\" regnum=\"76\""));
  CHECK_FALSE(contains(xml, "avx512"));
}

TEST_CASE("continue, then a breakpoint stop reports swbreak", "[session]") {
  Fixture f;
  f.negotiate();
  f.process.memory[0x401000] = 0x90;
  CHECK(f.ask("Z0,401000,1") == "OK");
  auto reply = f.session.handle_packet("vCont;c");
  CHECK_FALSE(reply.payload.has_value());
  CHECK(f.session.running());
  CHECK(f.process.log.back() == "resume 100 cont 0");

  stub::process::ProcessEvent stop;
  stop.tid = 100;
  stop.signal = SIGTRAP;
  stop.software_breakpoint = true;
  auto stop_reply = f.session.on_process_event(stop);
  REQUIRE(stop_reply.has_value());
  CHECK(contains(*stop_reply, "T05"));
  CHECK(contains(*stop_reply, "swbreak:;"));
  CHECK_FALSE(f.session.running());
  CHECK(f.ask("z0,401000,1") == "OK");
  CHECK(contains(f.ask("Z0,999999,1"), "E."));
}

TEST_CASE("signals given to C/vCont are translated from gdb's numbering", "[session]") {
  Fixture f;
  f.negotiate();
  (void)f.session.handle_packet("vCont;C1e:p64.64");  // GDB_SIGNAL_USR1
  CHECK(f.process.log.back() == "resume 100 cont " + std::to_string(SIGUSR1));
}

TEST_CASE("legacy step resumes the current thread with a step", "[session]") {
  Fixture f;
  (void)f.session.handle_packet("s");
  CHECK(f.process.log.back() == "resume 100 step 0");
}

TEST_CASE("QPassSignals: a passed signal is delivered without a stop reply", "[session]") {
  Fixture f;
  f.negotiate();
  CHECK(f.ask("QPassSignals:1e") == "OK");
  (void)f.session.handle_packet("c");
  stub::process::ProcessEvent usr1;
  usr1.tid = 100;
  usr1.signal = SIGUSR1;
  CHECK_FALSE(f.session.on_process_event(usr1).has_value());
  CHECK(f.process.log.back() == "resume 100 cont " + std::to_string(SIGUSR1));
  stub::process::ProcessEvent segv = usr1;
  segv.signal = SIGSEGV;
  auto reply = f.session.on_process_event(segv);
  REQUIRE(reply.has_value());
  CHECK(reply->rfind("T0b", 0) == 0);
}

TEST_CASE("QCatchSyscalls: the process catches the calls, their stops say syscall_entry and syscall_return",
          "[session]") {
  Fixture f;
  f.negotiate();
  CHECK(contains(f.ask("qSupported:multiprocess+"), "QCatchSyscalls+"));
  CHECK(f.ask("QCatchSyscalls:1;27;3c") == "OK");
  CHECK(f.process.log.back() == "catch syscalls 39 60");
  (void)f.session.handle_packet("c");
  stub::process::ProcessEvent entry;
  entry.tid = 100;
  entry.signal = SIGTRAP;
  entry.syscall = stub::process::ProcessEvent::SyscallStop::Entry;
  entry.syscall_number = 0x27;
  auto reply = f.session.on_process_event(entry);
  REQUIRE(reply.has_value());
  CHECK(reply->rfind("T05", 0) == 0);
  CHECK(contains(*reply, "syscall_entry:27;"));
  (void)f.session.handle_packet("c");
  stub::process::ProcessEvent back = entry;
  back.syscall = stub::process::ProcessEvent::SyscallStop::Return;
  reply = f.session.on_process_event(back);
  REQUIRE(reply.has_value());
  CHECK(contains(*reply, "syscall_return:27;"));
  CHECK(f.ask("QCatchSyscalls:1") == "OK");
  CHECK(f.process.log.back() == "catch syscalls");
  CHECK(f.ask("QCatchSyscalls:0") == "OK");
  CHECK(f.process.log.back() == "catch syscalls off");
  CHECK(contains(f.ask("QCatchSyscalls:1;zz"), "E"));
  CHECK(f.process.log.back() == "catch syscalls off");
}

TEST_CASE("exit and death by signal give W and X with the process", "[session]") {
  Fixture f;
  f.negotiate();
  (void)f.session.handle_packet("c");
  stub::process::ProcessEvent exited;
  exited.kind = stub::process::ProcessEvent::Kind::Exited;
  exited.exit_code = 7;
  CHECK(f.session.on_process_event(exited) == std::optional<std::string>("W07;process:64"));
  CHECK_FALSE(f.session.has_process());
  CHECK(contains(f.ask("g"), "E."));

  Fixture g;
  g.negotiate();
  (void)g.session.handle_packet("c");
  stub::process::ProcessEvent killed;
  killed.kind = stub::process::ProcessEvent::Kind::Killed;
  killed.signal = SIGSEGV;
  CHECK(g.session.on_process_event(killed) == std::optional<std::string>("X0b;process:64"));
}

TEST_CASE("no resumed thread left gives N to a client offering no-resumed+", "[session]") {
  stub::process::ProcessEvent none;
  none.kind = stub::process::ProcessEvent::Kind::NoResumed;
  none.tid = 101;

  Fixture f;
  f.process.threads_ = {100, 101};
  f.ask("qSupported:multiprocess+;swbreak+;no-resumed+");
  (void)f.session.handle_packet("vCont;c:p64.65");
  REQUIRE(f.session.running());
  CHECK(f.session.on_process_event(none) == std::optional<std::string>("N"));
  CHECK_FALSE(f.session.running());
  CHECK(f.session.has_process());

  // Without it gdb could not read `N`: it waits, as with gdbserver.
  Fixture g;
  g.process.threads_ = {100, 101};
  g.negotiate();
  (void)g.session.handle_packet("vCont;c:p64.65");
  REQUIRE(g.session.running());
  CHECK_FALSE(g.session.on_process_event(none).has_value());
  CHECK(g.session.running());
}

TEST_CASE("interrupt reaches the process while it runs", "[session]") {
  Fixture f;
  (void)f.session.handle_packet("c");
  REQUIRE(f.session.running());
  f.session.on_interrupt();
  CHECK(f.process.log.back() == "interrupt");
  CHECK_FALSE(f.session.interrupt_owed());
}

// gdb sends Ctrl-C while it handles a stop too (reading a library's
// symbols) and then waits for a SIGINT stop: gdbserver queues the signal.
TEST_CASE("an interrupt while stopped is owed to the next resume", "[session]") {
  Fixture f;
  f.session.on_interrupt();
  CHECK(f.process.log.empty());  // nothing to stop yet
  CHECK(f.session.interrupt_owed());
  (void)f.session.handle_packet("c");
  REQUIRE(f.process.log.size() == 2);
  CHECK(f.process.log[0].rfind("resume", 0) == 0);
  CHECK(f.process.log[1] == "interrupt");
  CHECK_FALSE(f.session.interrupt_owed());
  // Only once.
  stub::process::ProcessEvent sigint;
  sigint.tid = 100;
  sigint.signal = SIGINT;
  auto stop = f.session.on_process_event(sigint);
  REQUIRE(stop.has_value());
  CHECK(stop->rfind("T02", 0) == 0);
  f.process.log.clear();
  (void)f.session.handle_packet("c");
  CHECK(f.process.log.size() == 1);
}

// gdb without the multiprocess feature names its fake pid 42000 (0xa410).
TEST_CASE("vKill without multiprocess kills the program whatever the pid", "[session]") {
  Fixture f;
  f.ask("qSupported:swbreak+");
  CHECK(f.ask("vKill;a410") == "OK");
  CHECK(f.process.log.back() == "kill");
  CHECK_FALSE(f.session.has_process());

  Fixture g;
  g.negotiate();  // multiprocess: a pid not ours is refused
  CHECK(g.ask("vKill;a410").rfind("E", 0) == 0);
  CHECK(g.session.has_process());
}

TEST_CASE("an owed interrupt dies with the program", "[session]") {
  Fixture f;
  f.session.on_interrupt();
  REQUIRE(f.session.interrupt_owed());
  CHECK(f.ask("vKill;64") == "OK");
  CHECK_FALSE(f.session.interrupt_owed());
}

TEST_CASE("unknown packets get the empty reply, malformed ones an error", "[session]") {
  Fixture f;
  CHECK(f.ask("qTStatus") == "");
  CHECK(f.ask("vMustReplyEmpty") == "");
  CHECK(f.ask("m12").rfind("E.", 0) == 0);
  CHECK(f.ask("Hgzz").rfind("E", 0) == 0);
}

TEST_CASE("--disable-packet answers the named packets as unsupported", "[session]") {
  test::FakeProcess process;
  stub::session::SessionConfig config;
  config.disabled_packets = {"vCont", "qC"};
  stub::session::Session session(config, &process);
  CHECK(session.handle_packet("qC").payload == std::optional<std::string>(""));
  CHECK(session.handle_packet("vCont?").payload == std::optional<std::string>(""));
  CHECK(process.log.empty());
}

TEST_CASE("kill and detach close the connection", "[session]") {
  Fixture f;
  auto k = f.session.handle_packet("k");
  CHECK(k.close_connection);
  CHECK_FALSE(k.payload.has_value());
  CHECK(f.process.log.back() == "kill");

  Fixture d;
  auto detach = d.session.handle_packet("D");
  CHECK(detach.payload == std::optional<std::string>("OK"));
  CHECK(detach.close_connection);
  CHECK(d.process.log.back() == "detach");
}

TEST_CASE("monitor commands print to the console; exit ends the server", "[session]") {
  Fixture f;
  auto help = f.session.handle_packet("qRcmd," + protocol::hex_encode(std::string_view("help")));
  CHECK(help.payload == std::optional<std::string>("OK"));
  CHECK(contains(help.console, "exit"));
  auto exit = f.session.handle_packet("qRcmd," + protocol::hex_encode(std::string_view("exit")));
  CHECK(exit.exit_server);
  CHECK(exit.payload == std::optional<std::string>("OK"));
  CHECK(exit.console.empty());  // gdbserver prints nothing
}

TEST_CASE("monitor set commands answer with gdbserver's words", "[session]") {
  Fixture f;
  auto monitor = [&](std::string_view command) {
    return f.session.handle_packet("qRcmd," + protocol::hex_encode(command));
  };
  const std::pair<std::string_view, std::string_view> said[] = {
      {"set debug-hw-points 1", "H/W point debugging output enabled.\n"},
      {"set debug-hw-points 0", "H/W point debugging output disabled.\n"},
      {"set event-loop-debug 1", "Event loop debug output enabled.\n"},
      {"set event-loop-debug 0", "Event loop debug output disabled.\n"},
      {"set debug-format all", "All extra debug format options enabled.\n"},
      {"set debug-format none", "All extra debug format options disabled.\n"},
      {"set debug-format timestamp,,none",
       "Timestamps will be added to debug output.\nAll extra debug format options disabled.\n"},
      {"set libthread-db-search-path /tmp/x:/tmp/y", "libthread-db-search-path set to `/tmp/x:/tmp/y'\n"},
      {"set libthread-db-search-path", "libthread-db-search-path set to `$sdir:$pdir'\n"},
  };
  for (const auto& [command, text] : said) {
    INFO(command);
    auto reply = monitor(command);
    CHECK(reply.payload == std::optional<std::string>("OK"));
    CHECK(reply.console == text);
    CHECK_FALSE(reply.packet_log.has_value());  // neither switches the packet log
  }
  CHECK(monitor("set debug-format timestamp").packet_log_timestamps == std::optional<bool>(true));
  CHECK(f.session.packet_log_timestamps);
  CHECK(monitor("set debug-format none").packet_log_timestamps == std::optional<bool>(false));
  auto bogus = monitor("set debug-format timestamp,bogus");
  CHECK(bogus.payload == std::optional<std::string>("E01"));
  CHECK(bogus.console.rfind("Timestamps will be added to debug output.\nUnknown debug-format argument: \"bogus\"\n"
                            "The following monitor commands are supported:\n",
                            0) == 0);
}

// gdb reads a qRcmd's replies as O console packets, then OK or Enn; any
// other reply, an E.text too, it decodes as hex ("Invalid hex digit 46").
TEST_CASE("monitor errors reach gdb as console text and E01, as gdbserver's", "[session]") {
  Fixture f;
  auto monitor = [&](std::string_view command) {
    return f.session.handle_packet("qRcmd," + protocol::hex_encode(command));
  };
  for (std::string_view unknown : {"frobnicate", "", "set", "set debug 2", "set debug 1 2", "help me", "exit now"}) {
    INFO("monitor '" << unknown << "'");
    auto bad = monitor(unknown);
    CHECK(bad.payload == std::optional<std::string>("E01"));
    // gdbserver's words and list, whatever the command (a `set` of another kind too).
    CHECK(bad.console.rfind("Unknown monitor command.\n\nThe following monitor commands are supported:\n", 0) == 0);
    CHECK(contains(bad.console, "  exit\n    Quit GDBserver\n"));
    CHECK_FALSE(bad.exit_server);
    CHECK_FALSE(bad.packet_log.has_value());
  }
  // A packet gdb would never send still gets text, not E.text.
  for (std::string_view malformed : {"qRcmd,zz", "qRcmd,6", "qRcmd"}) {
    INFO(malformed);
    auto bad = f.session.handle_packet(malformed);
    CHECK(bad.payload == std::optional<std::string>("E01"));
    CHECK(contains(bad.console, "qRcmd: "));
    CHECK(bad.console.back() == '\n');
  }
}

TEST_CASE("monitor set debug and set remote-debug switch the packet log, in gdbserver's words", "[session]") {
  Fixture f;
  auto monitor = [&](std::string_view command) {
    return f.session.handle_packet("qRcmd," + protocol::hex_encode(command));
  };
  struct Case {
    std::string_view command, text;
    bool on;
  };
  for (const Case& c : {Case{"set debug 1", "Debug output enabled.\n", true},
                        Case{"set debug 0", "Debug output disabled.\n", false},
                        Case{"set remote-debug 1", "Protocol debug output enabled.\n", true},
                        Case{"set remote-debug 0", "Protocol debug output disabled.\n", false}}) {
    INFO(c.command);
    auto r = monitor(c.command);
    CHECK(r.payload == std::optional<std::string>("OK"));
    CHECK(r.console == c.text);
    CHECK(r.packet_log == std::optional<bool>(c.on));
  }
  CHECK_FALSE(monitor("help").packet_log.has_value());
}

TEST_CASE("qXfer serves target.xml and the exec file in chunks", "[session]") {
  Fixture f;
  std::string first = f.ask("qXfer:features:read:target.xml:0,20");
  CHECK(first.rfind("m<?xml", 0) == 0);
  CHECK(f.ask("qXfer:exec-file:read::0,1000") == "l/bin/fake");
  CHECK(f.ask("qXfer:frobs:read::0,10") == "");
  CHECK(f.ask("qXfer:features:read:other.xml:0,10").rfind("E.", 0) == 0);
}

}  // namespace test_session
