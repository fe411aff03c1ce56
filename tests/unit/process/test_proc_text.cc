// Reading /proc files of processes that may be gone (stub/process/proc_file.h,
// os_proc_text.h): a read that fails is "unknown", never an exception. A
// directory where a file is expected fails its read (EISDIR) the way a
// file of an exited process does (ESRCH); libstdc++'s istreambuf_iterator
// threw on both and took btstub down during `info os`.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "stub/process/os_proc_text.h"
#include "stub/process/proc_file.h"
#include "stub/process/process_identity.h"

namespace test_proc_text {  // this file's own names, apart in a unity build

using namespace stub::process;
namespace fs = std::filesystem;

namespace {

// A fake /proc with one process, 4242, removed at the end.
struct FakeProc {
  fs::path root = fs::temp_directory_path() / ("btstub-fake-proc-" + std::to_string(::getpid()));
  FakeProc() { fs::create_directories(root / "4242"); }
  ~FakeProc() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(root / "4242" / name) << text; }
};

}  // namespace

TEST_CASE("read_proc_file: whole text, nullopt when absent or a read fails", "[osdata]") {
  FakeProc proc;
  proc.write("stat", "4242 (prog) S 1");
  CHECK(read_proc_file((proc.root / "4242" / "stat").string()) == std::optional<std::string>("4242 (prog) S 1"));
  CHECK_FALSE(read_proc_file((proc.root / "4242" / "absent").string()).has_value());
  CHECK_FALSE(read_proc_file((proc.root / "4242").string()).has_value());  // opens, read fails: EISDIR
  CHECK_FALSE(read_proc_file("/proc/self/mem").has_value());                // opens, read at 0 fails: EIO
}

TEST_CASE("short_command and command_line: an unreadable file is unknown, not a throw", "[osdata]") {
  FakeProc proc;
  const std::string root = proc.root.string();
  fs::create_directories(proc.root / "4242" / "stat");
  fs::create_directories(proc.root / "4242" / "cmdline");
  fs::create_directories(proc.root / "4242" / "task" / "4242" / "stat");
  CHECK(short_command(4242, root) == "4242");
  CHECK_FALSE(command_line(4242, root).has_value());
  CHECK(core_of_thread(4242, 4242, root) == -1);
}

TEST_CASE("short_command: gdbserver's first word, a name starting with a space gives empty", "[osdata]") {
  FakeProc proc;
  const std::string root = proc.root.string();
  proc.write("stat", "4242 (tmux: server) S 1");
  CHECK(short_command(4242, root) == "tmux");
  proc.write("stat", "4242 ( lead) S 1");
  CHECK(short_command(4242, root) == "");
  proc.write("stat", "4243 (other) S 1");
  CHECK(short_command(4242, root) == "");  // names another pid
  proc.write("cmdline", std::string("prog\0arg\0", 9));
  CHECK(command_line(4242, root) == std::optional<std::string>("prog arg "));
}

TEST_CASE("process identity: parent and ids from /proc/PID/status, unknown when missing", "[osdata]") {
  const ProcessIdentity full =
      parse_process_status("Name:\tprog\nPPid:\t42\nUid:\t1000\t1001\t1001\t1001\nGid:\t100\t101\t101\t101\n");
  REQUIRE(full.parent);
  CHECK(*full.parent == 42);
  REQUIRE(full.ids);
  CHECK(full.ids->real_uid == 1000);
  CHECK(full.ids->effective_uid == 1001);
  CHECK(full.ids->real_gid == 100);
  CHECK(full.ids->effective_gid == 101);
  const ProcessIdentity partial = parse_process_status("PPid:\t7\nUid:\t0\t0\t0\t0\n");  // no Gid line
  CHECK(partial.parent == std::optional<uint64_t>(7));
  CHECK_FALSE(partial.ids);
  CHECK_FALSE(parse_process_status("").parent);
  CHECK_FALSE(read_process_identity(-1).has_value());
  const auto self = read_process_identity(::getpid());
  REQUIRE(self);
  CHECK(self->parent == std::optional<uint64_t>(static_cast<uint64_t>(::getppid())));
}

}  // namespace test_proc_text
