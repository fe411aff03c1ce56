// Bugs the fuzz targets (tests/fuzz) found, each pinned by a plain test so
// the normal build keeps catching them; the inputs are in the seed corpora.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "protocol/replies.h"
#include "protocol/requests.h"
#include "protocol/rsp_link.h"

namespace test_fuzz_regressions {  // this file's own names, apart in a unity build

namespace {

// Every packet payload the link yields for `stream` read `read_size` bytes at
// a time, and everything it wrote back.
std::pair<std::vector<std::string>, std::string> read_all(const std::string& stream, std::size_t read_size) {
  protocol::RspLink link;
  std::vector<std::string> packets;
  std::string written;
  for (std::size_t at = 0; at < stream.size(); at += read_size) {
    link.receive(std::string_view(stream).substr(at, read_size));
    while (auto item = link.next())
      if (auto* p = std::get_if<protocol::InboundPacket>(&*item)) packets.push_back(p->payload);
    written += link.take_output();
  }
  return {packets, written};
}

}  // namespace

// fuzz_rsp_link: an oversize packet the client abandons by starting a new
// one ('$' before any '#') lost the new packet when the oversize part had
// already been discarded by an earlier read, but not when both came in one.
TEST_CASE("a packet after an abandoned oversize one survives any read split", "[rsp_link][fuzz]") {
  std::string stream = "$" + std::string(protocol::RspLink::kMaxPayload + 600, 'b') + protocol::frame("?");
  for (std::size_t read_size : {stream.size(), std::size_t{4096}, std::size_t{1000}, std::size_t{7}}) {
    INFO("read size " << read_size);
    auto [packets, written] = read_all(stream, read_size);
    CHECK(packets == std::vector<std::string>{"?"});
    CHECK(written == "-+");  // the oversize packet NAKed once, the new one acked
  }
}

// fuzz_requests: legacy `Sbc` (a signal this host does not have) parsed
// with its signal, and its canonical form `vCont;Sbc` is refused.
TEST_CASE("a legacy step with a signal the host lacks has a canonical form that parses", "[requests][fuzz]") {
  auto request = protocol::parse_request("Sbc");
  REQUIRE(request);
  const auto& resume = std::get<protocol::Resume>(*request);
  REQUIRE(resume.actions.size() == 1);
  CHECK(resume.actions[0].signal == 0);
  CHECK(protocol::parse_request("vCont;s"));
}

// fuzz_requests: a vCont action that is not an action letter was quoted
// whole in the error, so a packet-sized request got an error reply over
// PacketSize, which the client cannot receive.
TEST_CASE("the error for a packet-sized vCont fits PacketSize", "[requests][fuzz]") {
  std::string payload = "vCont;r5555," + std::string(protocol::RspLink::kMaxPayload - 12, 'A');
  REQUIRE(payload.size() == protocol::RspLink::kMaxPayload);
  auto request = protocol::parse_request(payload);
  REQUIRE_FALSE(request);
  CHECK(request.error().message.size() < 100);
  CHECK(protocol::reply_error(request.error()).size() <= protocol::RspLink::kMaxPayload);
}

}  // namespace test_fuzz_regressions
