// The /proc text parsers behind the `info os` tables (stub/process/os_system.h):
// the same rows gdbserver 13.1 makes of the same text.
#include <catch2/catch.hpp>

#include "stub/process/os_system.h"

namespace test_os_tables {  // this file's own names, apart in a unity build

using namespace stub::process;

TEST_CASE("cpuinfo: one cpu per processor line, values as gdbserver keeps them", "[osdata]") {
  std::string text =
      "processor\t: 0\n"
      "model name\t: Some CPU @ 2.10GHz\n"
      "power management:\n"
      "\n"
      "processor\t: 1\n"
      "a::b\n"
      "no colon here\n";
  auto cpus = parse_cpuinfo(text);
  REQUIRE(cpus.size() == 2);
  using Fields = std::vector<std::pair<std::string, std::string>>;
  CHECK(cpus[0].fields == Fields{{"processor", " 0\n"}, {"model name", " Some CPU @ 2.10GHz\n"},
                                 {"power management", "\n"}});
  // strtok skips empty runs between colons; a line without one is left out.
  CHECK(cpus[1].fields == Fields{{"processor", " 1\n"}, {"a", "b\n"}});
  CHECK(parse_cpuinfo("").empty());
  CHECK(parse_cpuinfo("vendor\t: x\n").empty());  // nothing before the first processor
}

TEST_CASE("modules: fields, hex address, malformed lines left out", "[osdata]") {
  auto modules = parse_proc_modules(
      "kvm_intel 380928 0 - Live 0xffffffffc0a00000\n"
      "kvm 1146880 1 kvm_intel, Live 0x0000000000000000 (OE)\n"
      "short 1 2 - Live\n"
      "bad x 0 - Live 0x10\n");
  REQUIRE(modules.size() == 2);
  CHECK(modules[0].name == "kvm_intel");
  CHECK(modules[0].size == 380928);
  CHECK(modules[0].uses == 0);
  CHECK(modules[0].dependencies == "-");
  CHECK(modules[0].status == "Live");
  CHECK(modules[0].address == 0xffffffffc0a00000ULL);
  CHECK(modules[1].dependencies == "kvm_intel,");
  CHECK(modules[1].address == 0);
}

TEST_CASE("sockets: /proc/net lines to numeric addresses and ports", "[osdata]") {
  protocol::OsSocket socket;
  CHECK_FALSE(parse_socket_line("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid",
                                protocol::SocketFamily::Inet, true, socket));
  REQUIRE(parse_socket_line("   0: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
                            "12345 1 0000000000000000 100 0 0 10 0",
                            protocol::SocketFamily::Inet, true, socket));
  CHECK(socket.local_address == "127.0.0.1");
  CHECK(socket.local_port == "22");
  CHECK(socket.remote_address == "0.0.0.0");
  CHECK(socket.remote_port == "0");
  CHECK(socket.state == 10);
  CHECK(socket.user == "root");
  REQUIRE(parse_socket_line("   1: 00000000000000000000000001000000:0035 00000000000000000000000000000000:0000 07 "
                            "00000000:00000000 00:00000000 00000000  1000        0 1 2 0000000000000000 0",
                            protocol::SocketFamily::Inet6, false, socket));
  CHECK(socket.local_address == "::1");
  CHECK(socket.local_port == "53");
  CHECK(socket.remote_address == "::");
  CHECK(socket.state == 7);
  CHECK_FALSE(socket.stream);
}

}  // namespace test_os_tables
