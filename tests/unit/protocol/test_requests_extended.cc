// parse_request(): extended-remote (vRun, vAttach, R, !), the run settings and QThreadEvents.
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/requests.h"

namespace test_requests_extended {  // this file's own names, apart in a unity build

using namespace protocol;

namespace {

using test::parse_as;
using test::require_bad;

using Args = std::vector<std::string>;

}  // namespace

TEST_CASE("vRun decodes every hex argument", "[requests][extended]") {
  // "/bin/ls" "-l" "a b"
  CHECK(parse_as<RunProgram>("vRun;2f62696e2f6c73;2d6c;612062").argv == Args{"/bin/ls", "-l", "a b"});
  CHECK(parse_as<RunProgram>("vRun;2F62696E2F6C73").argv == Args{"/bin/ls"});
  // What gdb sends for a bare `run` with no program: argv[0] empty.
  CHECK(parse_as<RunProgram>("vRun;").argv == Args{""});
  CHECK(parse_as<RunProgram>("vRun;;78").argv == Args{"", "x"});
  // Empty arguments are real arguments, including a trailing one.
  CHECK(parse_as<RunProgram>("vRun;2f;;").argv == Args{"/", "", ""});
  // Bytes that mean something in the protocol are plain data once decoded.
  CHECK(parse_as<RunProgram>("vRun;2f;233b24").argv == Args{"/", "#;$"});
  for (const char* bad : {"vRun", "vRun:2f", "vRun;2", "vRun;zz", "vRun;2f;6", "vRun;2f00",
                          "vRun;2f;00", "vRun; 2f"})
    require_bad(bad);
  // Without a separator the name is a different (unknown) packet.
  CHECK(parse_as<UnknownPacket>("vRun2f").name == "vRun2f");
}

TEST_CASE("vAttach takes a positive hex pid", "[requests][extended]") {
  CHECK(parse_as<AttachProcess>("vAttach;1f").pid == 0x1f);
  CHECK(parse_as<AttachProcess>("vAttach;7FFFFFFF").pid == 0x7fffffff);
  for (const char* bad : {"vAttach", "vAttach;", "vAttach:1f", "vAttach;0", "vAttach;-1",
                          "vAttach;zz", "vAttach;1f;2", "vAttach;8000000000000000"})
    require_bad(bad);
}

TEST_CASE("R restarts and ! enables extended mode", "[requests][extended]") {
  parse_as<Restart>("R00");
  parse_as<Restart>("Rff");
  parse_as<Restart>("R0");  // gdb formats the ignored argument with %x
  parse_as<Restart>("R");
  parse_as<ExtendedMode>("!");
  for (const char* bad : {"Rzz", "R0g", "R-1", "!!", "!0"}) require_bad(bad);
}

TEST_CASE("QThreadEvents", "[requests][extended]") {
  CHECK(parse_as<SetThreadEvents>("QThreadEvents:1").enable);
  CHECK_FALSE(parse_as<SetThreadEvents>("QThreadEvents:0").enable);
  for (const char* bad : {"QThreadEvents", "QThreadEvents:", "QThreadEvents:2", "QThreadEvents:01",
                          "QThreadEvents;1", "QThreadEvents:1;"})
    require_bad(bad);
}

TEST_CASE("extended packets are named for logs and --disable-packet", "[requests][extended]") {
  CHECK(packet_name("vRun;2f62696e") == "vRun");
  CHECK(packet_name("vRun;") == "vRun");
  CHECK(packet_name("vAttach;1f") == "vAttach");
  CHECK(packet_name("R00") == "R");
  CHECK(packet_name("!") == "!");
  CHECK(packet_name("QThreadEvents:1") == "QThreadEvents");
}

TEST_CASE("extended packets never throw on arbitrary bytes", "[requests][extended]") {
  const std::vector<std::string> prefixes = {"vRun", "vAttach", "R", "!", "QThreadEvents", "QNonStop", "QCatchSyscalls"};
  const std::string alphabet = ";:0123456789abcdefABCDEFxz-\xff";
  uint32_t state = 777;
  for (int i = 0; i < 5000; ++i) {
    std::string payload = prefixes[i % prefixes.size()];
    std::size_t len = i % 12;
    for (std::size_t j = 0; j < len; ++j) {
      state = state * 1103515245u + 12345u;
      payload += alphabet[(state >> 16) % alphabet.size()];
    }
    CHECK_NOTHROW((void)parse_request(payload));
  }
}

TEST_CASE("run settings parse into their values", "[requests][extended]") {
  // "FOO=a=b c": split at the first '='.
  auto set = parse_as<EnvironmentSet>("QEnvironmentHexEncoded:464f4f3d613d622063");
  CHECK(set.name == "FOO");
  CHECK(set.value == "a=b c");
  CHECK(parse_as<EnvironmentSet>("QEnvironmentHexEncoded:583d").value.empty());  // "X=": empty value
  CHECK(parse_as<EnvironmentUnset>("QEnvironmentUnset:484f4d45").name == "HOME");
  (void)parse_as<EnvironmentReset>("QEnvironmentReset");
  CHECK(parse_as<SetWorkingDir>("QSetWorkingDir:2f746d70").dir == "/tmp");
  CHECK(parse_as<SetWorkingDir>("QSetWorkingDir:").dir.empty());  // the server's own
  CHECK(parse_as<SetDisableRandomization>("QDisableRandomization:1").disable);
  CHECK_FALSE(parse_as<SetDisableRandomization>("QDisableRandomization:0").disable);
  for (const char* bad : {"QEnvironmentHexEncoded", "QEnvironmentHexEncoded:", "QEnvironmentHexEncoded:464f4f",
                          "QEnvironmentHexEncoded:3d61", "QEnvironmentHexEncoded:zz",
                          "QEnvironmentHexEncoded:46003d61", "QEnvironmentUnset:", "QEnvironmentUnset:413d42",
                          "QEnvironmentReset:1", "QSetWorkingDir", "QSetWorkingDir:2f002f",
                          "QDisableRandomization", "QDisableRandomization:2", "QDisableRandomization:1;"})
    require_bad(bad);
}

}  // namespace test_requests_extended
