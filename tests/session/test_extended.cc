// Extended remote (!, vRun, vAttach, R, vKill, D) against a scripted
// ProcessFactory, and the /proc reader behind qXfer:osdata.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>

#include "fake_process.h"
#include "protocol/replies.h"
#include "stub/process/os_proc_text.h"
#include "stub/process/os_processes.h"
#include "stub/session/session.h"

namespace test_extended {  // this file's own names, apart in a unity build

namespace {

// Hands out FakeProcesses with increasing pids and records what it was asked.
class FakeFactory : public stub::session::ProcessFactory {
 public:
  std::vector<std::unique_ptr<test::FakeProcess>> made;
  std::vector<std::string> log;  // "launch prog a b", "attach 42"
  std::string default_prog = "/bin/default";
  bool fail = false;

  stub::session::RunSettings last_settings;
  btstub::Expected<stub::process::Process*> launch(const std::vector<std::string>& argv,
                                                   const stub::session::RunSettings& settings) override {
    std::string line = "launch";
    for (const auto& a : argv) line += " " + a;
    log.push_back(line);
    last_settings = settings;
    if (fail) return btstub::make_error(btstub::ErrorCode::IoError, "Cannot exec " + argv[0] + ": No such file");
    return make(false);
  }
  btstub::Expected<stub::process::Process*> attach(pid_t pid) override {
    log.push_back("attach " + std::to_string(pid));
    if (fail) return btstub::make_error(btstub::ErrorCode::NoProcess, "Cannot attach to process: No such process");
    auto* p = make(true);
    return p;
  }
  std::string default_program() const override { return default_prog; }

 private:
  stub::process::Process* make(bool attached) {
    auto p = std::make_unique<test::FakeProcess>();
    pid_t pid = static_cast<pid_t>(0x200 + made.size());
    p->pid_ = pid;
    p->threads_ = {pid};
    p->attached_ = attached;
    p->regs[pid] = p->regs[100];
    made.push_back(std::move(p));
    return made.back().get();
  }
};

struct Multi {
  FakeFactory factory;
  stub::session::Session session{stub::session::SessionConfig{}, nullptr};
  Multi() { session.process_factory = &factory; }

  std::string ask(std::string_view payload) {
    auto reply = session.handle_packet(payload);
    REQUIRE(reply.payload.has_value());
    CHECK_FALSE(reply.close_connection);
    return *reply.payload;
  }
};

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

std::string hex(std::string_view s) { return protocol::hex_encode(s); }

}  // namespace

TEST_CASE("--multi without a program: no process until vRun", "[extended]") {
  Multi m;
  CHECK(m.ask("!") == "OK");
  CHECK(m.ask("?") == "W00");
  CHECK(starts_with(m.ask("g"), "E"));
  CHECK(m.ask("qfThreadInfo") == "l");
}

TEST_CASE("vRun launches, stops at the first instruction, passes arguments", "[extended]") {
  Multi m;
  m.ask("qSupported:multiprocess+");
  m.ask("!");
  std::string stop = m.ask("vRun;" + hex("/bin/prog") + ";" + hex("alpha") + ";" + hex("beta"));
  CHECK(stop == "T0506:0000000000000000;07:0000fe7f00000000;10:0010400000000000;thread:p200.200;");
  REQUIRE(m.factory.log == std::vector<std::string>{"launch /bin/prog alpha beta"});
  CHECK(m.ask("?") == stop);
  CHECK(m.ask("qC") == "QCp200.200");
  CHECK(m.ask("qAttached:200") == "0");
}

TEST_CASE("vRun with an empty argv[0] runs the default, then the last program", "[extended]") {
  Multi m;
  m.ask("!");
  m.ask("vRun;;" + hex("x"));
  m.ask("vKill;200");
  m.ask("vRun;" + hex("/bin/other"));
  m.ask("vKill;201");
  m.ask("vRun;");
  CHECK(m.factory.log ==
        std::vector<std::string>{"launch /bin/default x", "launch /bin/other", "launch /bin/other"});

  Multi none;
  none.factory.default_prog.clear();
  CHECK(starts_with(none.ask("vRun;"), "E.No program to run"));
  CHECK(none.factory.log.empty());
}

TEST_CASE("run settings (QEnvironment*, QSetWorkingDir, QDisableRandomization) go with each vRun", "[extended]") {
  Multi m;
  const std::string features = m.ask("qSupported:multiprocess+");
  for (const char* f : {"QEnvironmentHexEncoded+", "QEnvironmentUnset+", "QEnvironmentReset+", "QSetWorkingDir+",
                        "QDisableRandomization+"}) {
    CHECK(features.find(f) != std::string::npos);
  }
  m.ask("!");
  // As gdb sends them before `run`: a reset, then each change in order.
  CHECK(m.ask("QEnvironmentReset") == "OK");
  CHECK(m.ask("QEnvironmentHexEncoded:" + hex("FOO=a=b")) == "OK");
  CHECK(m.ask("QEnvironmentUnset:" + hex("HOME")) == "OK");
  CHECK(m.ask("QEnvironmentHexEncoded:" + hex("HOME=/x")) == "OK");
  CHECK(m.ask("QSetWorkingDir:" + hex("/tmp/work")) == "OK");
  CHECK(m.ask("QDisableRandomization:0") == "OK");
  m.ask("vRun;" + hex("/bin/prog"));
  using Change = std::pair<std::string, std::optional<std::string>>;
  CHECK(m.factory.last_settings.environment ==
        std::vector<Change>{{"FOO", "a=b"}, {"HOME", std::nullopt}, {"HOME", "/x"}});
  CHECK(m.factory.last_settings.working_dir == "/tmp/work");
  CHECK(m.factory.last_settings.disable_randomization == std::optional<bool>(false));
  // They stay for the next run until gdb changes them.
  m.ask("vKill;200");
  m.ask("vRun;");
  CHECK(m.factory.last_settings.working_dir == "/tmp/work");
  CHECK(m.factory.last_settings.environment.size() == 3);
  CHECK(m.ask("QEnvironmentReset") == "OK");
  CHECK(m.ask("QSetWorkingDir:") == "OK");  // empty: btstub's own
  m.ask("vKill;201");
  m.ask("vRun;");
  CHECK(m.factory.last_settings.environment.empty());
  CHECK(m.factory.last_settings.working_dir.empty());
  // Bad ones are errors, not settings.
  CHECK(starts_with(m.ask("QEnvironmentHexEncoded:" + hex("NOEQUALS")), "E"));
  CHECK(starts_with(m.ask("QEnvironmentHexEncoded:zz"), "E"));
  CHECK(starts_with(m.ask("QEnvironmentUnset:" + hex("A=B")), "E"));
  CHECK(starts_with(m.ask("QSetWorkingDir:" + hex(std::string("a\0b", 3))), "E"));
  CHECK(starts_with(m.ask("QDisableRandomization:2"), "E"));
  CHECK(m.factory.last_settings.environment.empty());
}

TEST_CASE("extended mode: vKill and k keep the connection; run again works", "[extended]") {
  Multi m;
  m.ask("!");
  m.ask("vRun;" + hex("/bin/prog"));
  CHECK(m.ask("vKill;200") == "OK");
  CHECK(m.factory.made[0]->log.back() == "kill");
  CHECK(m.ask("?") == "W00");
  CHECK(starts_with(m.ask("vRun;" + hex("/bin/prog")), "T05"));
  auto k = m.session.handle_packet("k");
  CHECK_FALSE(k.close_connection);
  CHECK_FALSE(k.payload.has_value());
  CHECK(m.factory.made[1]->log.back() == "kill");
  CHECK_FALSE(m.session.has_process());
}

TEST_CASE("vAttach reports a SIGTRAP stop; detach keeps the connection; attach again", "[extended]") {
  Multi m;
  m.ask("qSupported:multiprocess+");
  m.ask("!");
  CHECK(starts_with(m.ask("vAttach;1234"), "T05"));
  CHECK(m.factory.log.back() == "attach 4660");  // the pid is hex on the wire
  CHECK(m.ask("qAttached:200") == "1");
  CHECK(m.ask("D;200") == "OK");
  CHECK(m.factory.made[0]->log.back() == "detach");
  CHECK(starts_with(m.ask("vAttach;1234"), "T05"));
  CHECK(m.ask("qC") == "QCp201.201");
}

TEST_CASE("launch and attach errors are E. messages and the session goes on", "[extended]") {
  Multi m;
  m.ask("!");
  m.factory.fail = true;
  CHECK(m.ask("vRun;" + hex("/no/such")) == "E.Cannot exec /no/such: No such file");
  CHECK(m.ask("vAttach;f423f") == "E.Cannot attach to process: No such process");
  CHECK(starts_with(m.ask("vAttach;0"), "E."));
  CHECK(starts_with(m.ask("vAttach;7fffffff"), "E.Invalid process id"));
  CHECK_FALSE(m.session.has_process());
  m.factory.fail = false;
  CHECK(starts_with(m.ask("vRun;" + hex("/bin/prog")), "T05"));
}

TEST_CASE("R restarts the last program without a reply", "[extended]") {
  Multi m;
  m.ask("!");
  m.ask("vRun;" + hex("/bin/prog") + ";" + hex("a"));
  auto r = m.session.handle_packet("R00");
  CHECK_FALSE(r.payload.has_value());
  CHECK_FALSE(r.close_connection);
  CHECK(m.factory.log.back() == "launch /bin/prog a");
  CHECK(m.ask("qC") == "QC201");
}

TEST_CASE("outside extended mode vRun is refused while a program is debugged", "[extended]") {
  test::FakeProcess process;
  FakeFactory factory;
  stub::session::Session session(stub::session::SessionConfig{}, &process);
  session.process_factory = &factory;
  auto reply = session.handle_packet("vRun;" + hex("/bin/prog"));
  CHECK(reply.payload == std::optional<std::string>("E.Already debugging a process"));
  CHECK(factory.log.empty());
  // `!` is accepted even without --multi; a run or attach still waits
  // until the program is killed or detached (gdb does that first; a second
  // inferior's would take the first one from under it), then restarts.
  CHECK(session.handle_packet("!").payload == std::optional<std::string>("OK"));
  const std::string busy = "E.Already debugging process 100: btstub debugs one program at a time "
                           "(kill or detach it first)";
  CHECK(session.handle_packet("vRun;;" + hex("x")).payload == std::optional<std::string>(busy));
  CHECK(session.handle_packet("vAttach;1234").payload == std::optional<std::string>(busy));
  CHECK(factory.log.empty());
  CHECK(process.log.empty());  // neither killed nor detached
  CHECK(session.handle_packet("vKill;64").payload == std::optional<std::string>("OK"));
  CHECK(starts_with(*session.handle_packet("vRun;;" + hex("x")).payload, "T05"));
  CHECK(factory.log.back() == "launch /bin/default x");
}

TEST_CASE("without a factory vRun and vAttach fail cleanly", "[extended]") {
  stub::session::Session session(stub::session::SessionConfig{}, nullptr);
  CHECK(starts_with(*session.handle_packet("vRun;" + hex("/bin/prog")).payload, "E."));
  CHECK(starts_with(*session.handle_packet("vAttach;10").payload, "E."));
}

TEST_CASE("qXfer:osdata: types, processes (with our own pid), unknown annex", "[extended][osdata]") {
  stub::session::Session session(stub::session::SessionConfig{}, nullptr);
  auto types = *session.handle_packet("qXfer:osdata:read::0,fff").payload;
  CHECK(starts_with(types, "l<osdata type=\"types\">"));
  CHECK(types.find("processes") != std::string::npos);

  // Read the whole document in small chunks, as gdb does.
  std::string doc;
  for (uint64_t off = 0;; off += 0x100) {
    char packet[64];
    std::snprintf(packet, sizeof packet, "qXfer:osdata:read:processes:%llx,100", static_cast<unsigned long long>(off));
    std::string chunk = *session.handle_packet(packet).payload;
    REQUIRE((chunk[0] == 'm' || chunk[0] == 'l'));
    doc += chunk.substr(1);
    if (chunk[0] == 'l') break;
  }
  std::string mine = "<column name=\"pid\">" + std::to_string(getpid()) + "</column>";
  CHECK(doc.find(mine) != std::string::npos);
  CHECK(doc.find("session_tests") != std::string::npos);
  CHECK(doc.rfind("</osdata>\n") == doc.size() - 10);

  CHECK(starts_with(*session.handle_packet("qXfer:osdata:read:nosuch:0,100").payload, "E."));
}

TEST_CASE("qXfer:osdata: every type gdbserver serves, read in chunks", "[extended][osdata]") {
  stub::session::Session session(stub::session::SessionConfig{}, nullptr);
  auto read_all = [&](const std::string& annex) {
    std::string doc;
    for (uint64_t off = 0; off < (1u << 26);) {
      char range[40];
      std::snprintf(range, sizeof range, ":%llx,400", static_cast<unsigned long long>(off));
      std::string chunk = *session.handle_packet("qXfer:osdata:read:" + annex + range).payload;
      REQUIRE((chunk[0] == 'm' || chunk[0] == 'l'));
      auto data = protocol::unescape_binary(std::string_view(chunk).substr(1));
      REQUIRE(data.has_value());
      doc += *data;
      off += data->size();
      if (chunk[0] == 'l') break;
    }
    return doc;
  };
  const std::pair<const char*, const char*> types[] = {
      {"cpus", "cpus"},         {"files", "files"},           {"modules", "modules"},
      {"msg", "message queues"}, {"processes", "processes"},  {"procgroups", "process groups"},
      {"semaphores", "semaphores"}, {"shm", "shared memory"}, {"sockets", "I sockets"},
      {"threads", "threads"}};
  std::string listed = read_all("");
  for (const auto& [annex, type] : types) {
    INFO(annex);
    CHECK(listed.find(std::string("<column name=\"Type\">") + annex + "</column>") != std::string::npos);
    std::string doc = read_all(annex);
    CHECK(starts_with(doc, std::string("<osdata type=\"") + type + "\">\n"));
    CHECK(doc.rfind("</osdata>\n") == doc.size() - 10);
  }
  std::string me = std::to_string(getpid());
  CHECK(read_all("threads").find("<column name=\"tid\">" + me + "</column>") != std::string::npos);
  CHECK(read_all("procgroups").find("<column name=\"pid\">" + me + "</column>") != std::string::npos);
  CHECK(read_all("files").find("<column name=\"pid\">" + me + "</column>") != std::string::npos);
  CHECK(read_all("cpus").find("<column name=\"processor\">") != std::string::npos);

  // Offsets past the end, for a type never read from 0 too, end the document.
  CHECK(*session.handle_packet("qXfer:osdata:read:cpus:fffffffffffffff0,100").payload == "l");
  CHECK(*session.handle_packet("qXfer:osdata:read:sockets:7fffffff,100").payload == "l");
  CHECK(starts_with(*session.handle_packet("qXfer:osdata:read:cpusx:0,100").payload, "E."));
  CHECK(starts_with(*session.handle_packet("qXfer:osdata:read:threads/../x:10,100").payload, "E."));
}

TEST_CASE("os processes: command from cmdline, kernel threads in brackets", "[osdata]") {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("btstub-proc-" + std::to_string(getpid()));
  fs::remove_all(root);
  auto write = [&](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  };
  // Field 39 (processor) of each thread's stat; a name with ") (" inside.
  std::string tail = " S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 ";
  write(root / "42/stat", "42 (we) (ird)" + tail + "0 0\n");
  write(root / "42/cmdline", std::string("/bin/we\0-x\0", 11));
  write(root / "42/status", "Name:\twe\nUid:\t0\t0\t0\t0\n");
  write(root / "42/task/42/stat", "42 (we) (ird)" + tail + "1 0\n");
  write(root / "42/task/43/stat", "43 (we) (ird)" + tail + "0 0\n");
  write(root / "7/stat", "7 (kworker)" + tail + "0 0\n");
  write(root / "7/cmdline", "");
  write(root / "self/stat", "1 (not a pid dir)" + tail);
  auto list = stub::process::list_os_processes(root.string());
  fs::remove_all(root);
  REQUIRE(list.size() == 2);
  CHECK(list[0].pid == 7);
  CHECK(list[0].command == "[kworker]");
  CHECK(list[1].pid == 42);
  // As gdbserver: every NUL a space (the last one too); the owner is that of
  // the pid's directory (here ours), not status's Uid line.
  CHECK(list[1].command == "/bin/we -x ");
  CHECK(list[0].user == stub::process::user_name(geteuid()));
  CHECK(list[1].user == stub::process::user_name(geteuid()));
  CHECK(list[1].cores == std::vector<int>{0, 1});
}

}  // namespace test_extended
