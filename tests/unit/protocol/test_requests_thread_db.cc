// parse_request() and the replies of the thread library's packets: qSymbol
// and qGetTLSAddr.
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/replies.h"
#include "protocol/requests.h"

namespace test_requests_thread_db {  // this file's own names, apart in a unity build

using namespace protocol;
using test::parse_as;
using test::require_bad;

TEST_CASE("qSymbol:: says gdb is ready to answer", "[requests][thread_db]") {
  parse_as<SymbolsReady>("qSymbol::");
}

TEST_CASE("qSymbol answers carry the name and, when gdb knows it, the value", "[requests][thread_db]") {
  // "nptl_version" in hex, as gdb 13 sends it.
  auto known = parse_as<SymbolAnswer>("qSymbol:7ffff7e1a2b0:6e70746c5f76657273696f6e");
  CHECK(known.name == "nptl_version");
  REQUIRE(known.address.has_value());
  CHECK(*known.address == 0x7ffff7e1a2b0);

  auto unknown = parse_as<SymbolAnswer>("qSymbol::6e70746c5f76657273696f6e");
  CHECK(unknown.name == "nptl_version");
  CHECK_FALSE(unknown.address.has_value());
}

TEST_CASE("malformed qSymbol packets are errors", "[requests][thread_db]") {
  for (const char* payload : {"qSymbol", "qSymbol:", "qSymbol:::", "qSymbol:12", "qSymbol:12:",
                              "qSymbol:12:6e7", "qSymbol:12:zz", "qSymbol:zz:6e", "qSymbol;12:6e",
                              "qSymbol:10000000000000000:6e"}) {
    require_bad(payload);
  }
}

TEST_CASE("qGetTLSAddr parses thread, offset and link map", "[requests][thread_db]") {
  auto plain = parse_as<GetTlsAddress>("qGetTLSAddr:2a,10,7ffff7ffe2e0");
  CHECK(plain.thread == ThreadId{ThreadId::kAny, 0x2a});
  CHECK(plain.offset == 0x10);
  CHECK(plain.link_map == 0x7ffff7ffe2e0);

  auto multiprocess = parse_as<GetTlsAddress>("qGetTLSAddr:p1f.20,0,0");
  CHECK(multiprocess.thread == ThreadId{0x1f, 0x20});
  CHECK(multiprocess.offset == 0);
  CHECK(multiprocess.link_map == 0);
}

TEST_CASE("malformed qGetTLSAddr packets are errors", "[requests][thread_db]") {
  for (const char* payload : {"qGetTLSAddr", "qGetTLSAddr:", "qGetTLSAddr:2a", "qGetTLSAddr:2a,10",
                              "qGetTLSAddr:2a,10,", "qGetTLSAddr:2a,10,20,30", "qGetTLSAddr:zz,10,20",
                              "qGetTLSAddr:2a,zz,20", "qGetTLSAddr:2a,10,-1", "qGetTLSAddr;2a,10,20",
                              "qGetTLSAddr:p.1,10,20"}) {
    require_bad(payload);
  }
}

TEST_CASE("thread library replies", "[replies][thread_db]") {
  CHECK(reply_symbol_question("nptl_version") == "qSymbol:6e70746c5f76657273696f6e");
  CHECK(reply_tls_address(0x7ffff7d8a6fc) == "7ffff7d8a6fc");
  CHECK(reply_tls_address(0) == "0");
}

TEST_CASE("thread library packets keep their names for --disable-packet", "[requests][thread_db]") {
  CHECK(packet_name("qSymbol::") == "qSymbol");
  CHECK(packet_name("qGetTLSAddr:2a,10,20") == "qGetTLSAddr");
}

}  // namespace test_requests_thread_db
