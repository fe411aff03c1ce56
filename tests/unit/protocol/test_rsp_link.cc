#include <catch2/catch.hpp>

#include <string>

#include "protocol/rsp_link.h"

namespace test_rsp_link {  // this file's own names, apart in a unity build

using protocol::frame;
using protocol::Inbound;
using protocol::InboundInterrupt;
using protocol::InboundPacket;
using protocol::RspLink;

namespace {

std::string payload_of(const std::optional<Inbound>& item) {
  REQUIRE(item.has_value());
  REQUIRE(std::holds_alternative<InboundPacket>(*item));
  return std::get<InboundPacket>(*item).payload;
}

bool is_interrupt(const std::optional<Inbound>& item) {
  return item.has_value() && std::holds_alternative<InboundInterrupt>(*item);
}

}  // namespace

TEST_CASE("checksum and frame", "[rsp_link]") {
  CHECK(protocol::checksum("") == 0);
  CHECK(protocol::checksum("g") == 0x67);
  // 'O'+'K' = 0x4f + 0x4b = 0x9a
  CHECK(frame("OK") == "$OK#9a");
  CHECK(frame("") == "$#00");
  // Modulo 256 with high bytes: 0xff + 0x02 = 0x101 -> 0x01
  CHECK(frame(std::string("\xff\x02", 2)) == std::string("$\xff\x02#01", 6));
  CHECK(frame("qSupported") == "$qSupported#37");
}

TEST_CASE("a whole packet is returned and acked", "[rsp_link]") {
  RspLink link;
  link.receive("$qSupported#37");
  CHECK(payload_of(link.next()) == "qSupported");
  CHECK(link.take_output() == "+");
  CHECK_FALSE(link.next().has_value());
  CHECK_FALSE(link.has_output());
  CHECK(link.rejected_packets() == 0);
}

TEST_CASE("a packet split across receives", "[rsp_link]") {
  RspLink link;
  std::string wire = frame("m401000,40");
  for (std::size_t i = 0; i + 1 < wire.size(); ++i) {
    link.receive(wire.substr(i, 1));
    CHECK_FALSE(link.next().has_value());
  }
  CHECK_FALSE(link.has_output());
  link.receive(wire.substr(wire.size() - 1));
  CHECK(payload_of(link.next()) == "m401000,40");
  CHECK(link.take_output() == "+");
}

TEST_CASE("several packets and interrupts in one receive", "[rsp_link]") {
  RspLink link;
  link.receive("+" + frame("g") + "\x03" + frame("vCont;c") + "+\x03" + frame("?") + "$par");
  CHECK(payload_of(link.next()) == "g");
  CHECK(is_interrupt(link.next()));
  CHECK(payload_of(link.next()) == "vCont;c");
  CHECK(is_interrupt(link.next()));
  CHECK(payload_of(link.next()) == "?");
  CHECK_FALSE(link.next().has_value());
  CHECK(link.take_output() == "+++");
  link.receive("tial#" );
  CHECK_FALSE(link.next().has_value());
  std::string sum = frame("partial").substr(9);
  link.receive(sum);
  CHECK(payload_of(link.next()) == "partial");
}

TEST_CASE("0x03 inside a packet is payload, not an interrupt", "[rsp_link]") {
  RspLink link;
  std::string payload = std::string("X1000,1:") + '\x03';
  link.receive(frame(payload));
  CHECK(payload_of(link.next()) == payload);
  CHECK_FALSE(link.next().has_value());
}

TEST_CASE("bad checksum is NAKed and dropped", "[rsp_link]") {
  RspLink link;
  link.receive("$g#00" + frame("c"));
  CHECK(payload_of(link.next()) == "c");
  CHECK(link.take_output() == "-+");
  CHECK(link.rejected_packets() == 1);

  link.receive("$g#zz");  // non-hex checksum digits
  CHECK_FALSE(link.next().has_value());
  CHECK(link.take_output() == "-");
  CHECK(link.rejected_packets() == 2);
}

TEST_CASE("checksum digits are case-insensitive", "[rsp_link]") {
  RspLink link;
  link.receive("$OK#9A");
  CHECK(payload_of(link.next()) == "OK");
}

TEST_CASE("'-' from the client retransmits the last reply", "[rsp_link]") {
  RspLink link;
  link.receive("-");
  CHECK_FALSE(link.next().has_value());
  CHECK_FALSE(link.has_output());  // nothing sent yet, nothing to resend

  link.send("OK");
  CHECK(link.take_output() == "$OK#9a");
  link.send("E01");
  CHECK(link.take_output() == frame("E01"));
  link.receive("-");
  CHECK_FALSE(link.next().has_value());
  CHECK(link.take_output() == frame("E01"));
  link.receive("+");
  CHECK_FALSE(link.next().has_value());
  CHECK_FALSE(link.has_output());
}

TEST_CASE("no-ack mode sends no acks and drops bad packets silently", "[rsp_link]") {
  RspLink link;
  link.set_no_ack_mode(true);
  CHECK(link.no_ack_mode());
  link.receive(frame("g") + "$g#00" + frame("s"));
  CHECK(payload_of(link.next()) == "g");
  CHECK(payload_of(link.next()) == "s");
  CHECK_FALSE(link.has_output());
  CHECK(link.rejected_packets() == 1);

  link.send("OK");
  link.take_output();
  link.receive("-");
  CHECK_FALSE(link.next().has_value());
  CHECK_FALSE(link.has_output());
}

TEST_CASE("garbage outside packets is discarded", "[rsp_link]") {
  RspLink link;
  link.receive("hello world" + frame("qC") + "zz");
  CHECK(payload_of(link.next()) == "qC");
  CHECK_FALSE(link.next().has_value());
  CHECK(link.buffered_bytes() == 0);
  CHECK(link.rejected_packets() == 2);
  CHECK(link.take_output() == "+");
}

TEST_CASE("a restarted packet replaces the truncated one", "[rsp_link]") {
  RspLink link;
  link.receive("$m10" + frame("g"));
  CHECK(payload_of(link.next()) == "g");
  CHECK_FALSE(link.next().has_value());
}

TEST_CASE("payload of exactly kMaxPayload is accepted", "[rsp_link]") {
  RspLink link;
  std::string payload(RspLink::kMaxPayload, 'a');
  link.receive(frame(payload));
  CHECK(payload_of(link.next()) == payload);
}

TEST_CASE("oversize packet arriving whole is NAKed and discarded", "[rsp_link]") {
  RspLink link;
  std::string big(RspLink::kMaxPayload + 1, 'a');
  link.receive(frame(big) + frame("g"));
  CHECK(payload_of(link.next()) == "g");
  CHECK(link.take_output() == "-+");
  CHECK(link.rejected_packets() == 1);
}

TEST_CASE("oversize packet arriving in pieces does not grow the buffer", "[rsp_link]") {
  RspLink link;
  // Contains '+' and '-' so that treating its tail as out-of-packet bytes
  // would wrongly trigger retransmissions.
  std::string chunk(1000, 'a');
  chunk[10] = '-';
  chunk[20] = '+';
  link.send("OK");
  link.take_output();
  link.receive("$");
  for (int i = 0; i < 100; ++i) {
    link.receive(chunk);
    CHECK_FALSE(link.next().has_value());
    CHECK(link.buffered_bytes() <= RspLink::kMaxPayload + 4);
  }
  CHECK(link.take_output() == "-");
  link.receive("#4");  // end of the oversize packet, first checksum digit
  CHECK_FALSE(link.next().has_value());
  link.receive("2" + frame("g"));
  CHECK(payload_of(link.next()) == "g");
  CHECK(link.take_output() == "+");
  CHECK(link.rejected_packets() == 1);
}

TEST_CASE("send_raw and take_output", "[rsp_link]") {
  RspLink link;
  link.send_raw("+");
  link.send("");
  CHECK(link.has_output());
  CHECK(link.take_output() == "+$#00");
  CHECK_FALSE(link.has_output());
  CHECK(link.take_output().empty());
}

TEST_CASE("take_interrupt takes an interrupt and the acks before it, never a packet", "[rsp_link]") {
  RspLink link;
  link.receive("$bc#c5\x03");
  CHECK(payload_of(link.next()) == "bc");
  CHECK(link.take_interrupt());  // came with the request
  CHECK_FALSE(link.take_interrupt());
  CHECK_FALSE(link.next().has_value());

  link.receive("++\x03$g#67");
  CHECK(link.take_interrupt());
  CHECK(payload_of(link.next()) == "g");

  // A packet first: it and what follows wait for next().
  link.receive(std::string("$g#67\x03", 6));
  CHECK_FALSE(link.take_interrupt());
  CHECK(payload_of(link.next()) == "g");
  CHECK(is_interrupt(link.next()));

  // A NAK before it still retransmits the last reply.
  link.take_output();
  link.send("OK");
  link.take_output();
  link.receive("-\x03");
  CHECK(link.take_interrupt());
  CHECK(link.take_output() == "$OK#9a");
}

TEST_CASE("packet_waiting tells a packet begun after the one taken", "[rsp_link]") {
  RspLink link;
  link.receive("$bc#c5");
  CHECK(payload_of(link.next()) == "bc");
  CHECK_FALSE(link.packet_waiting());
  link.receive("+\x03");
  CHECK_FALSE(link.packet_waiting());  // an ack and an interrupt are no request
  link.receive("$g");
  CHECK(link.packet_waiting());  // not complete yet: the client has begun it
  link.receive("#67");
  CHECK(is_interrupt(link.next()));
  CHECK(payload_of(link.next()) == "g");
  CHECK_FALSE(link.packet_waiting());
}

}  // namespace test_rsp_link
