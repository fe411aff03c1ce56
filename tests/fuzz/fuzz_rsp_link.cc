// RSP framing (protocol::RspLink) on arbitrary byte streams: acks, NAKs,
// 0x03, '$' restarts, bad and good checksums, oversize packets.
//
// Input: byte 0 picks how the stream is cut into reads (its low 4 bits
// bound the read size), the rest is the stream. Invariants:
//  - TCP may split the stream anywhere: fed in one read or in many, the
//    link yields the same packets and interrupts, and writes the same bytes.
//  - A packet is at most kMaxPayload bytes and holds no raw '$' or '#'.
//  - frame(payload) read by a fresh link gives back that payload, acked.
//  - What the link writes is only '+', '-' and well-framed replies.
//  - Bytes held for an incomplete packet stay bounded.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "protocol/rsp_link.h"

namespace {

using protocol::RspLink;

struct Transcript {
  std::vector<std::string> items;  // packet payloads; "\x03" marks an interrupt
  std::string written;
};

// Serves like the stub does: a reply per packet, no-ack mode on request.
void drain(RspLink& link, Transcript& t) {
  while (auto item = link.next()) {
    if (auto* packet = std::get_if<protocol::InboundPacket>(&*item)) {
      const std::string& p = packet->payload;
      fuzz::check(p.size() <= RspLink::kMaxPayload, "packet longer than kMaxPayload", p);
      fuzz::check(p.find_first_of("$#") == std::string::npos, "raw '$' or '#' in a payload", p);
      t.items.push_back("$" + p);
      if (p == "QStartNoAckMode") {
        link.send("OK");
        link.set_no_ack_mode(true);
      } else {
        link.send(p.substr(0, 8));
      }
    } else {
      t.items.push_back("\x03");
    }
    t.written += link.take_output();
  }
  t.written += link.take_output();
  fuzz::check(link.buffered_bytes() <= RspLink::kMaxPayload + 3, "unbounded input buffer");
}

Transcript run(std::string_view stream, uint8_t cut_seed) {
  RspLink link;
  Transcript t;
  if (cut_seed == 0) {
    link.receive(stream);
    drain(link, t);
    return t;
  }
  uint32_t state = cut_seed;
  while (!stream.empty()) {
    state = state * 1103515245u + 12345u;
    // The seed's low bits bound the read size (1 byte .. 32 KiB), so the
    // fuzzer can pick byte-by-byte reads as well as a few large ones.
    std::size_t max_read = std::size_t{1} << (cut_seed % 16);
    std::size_t n = (state >> 8) % max_read + 1;
    n = std::min(n, stream.size());
    link.receive(stream.substr(0, n));
    stream.remove_prefix(n);
    drain(link, t);
  }
  return t;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

void check_written(std::string_view out) {
  while (!out.empty()) {
    char c = out.front();
    if (c == '+' || c == '-') {
      out.remove_prefix(1);
      continue;
    }
    fuzz::check(c == '$', "link wrote something that is not an ack or a packet", out);
    auto hash = out.find('#');
    fuzz::check(hash != std::string_view::npos && hash + 2 < out.size(), "truncated reply", out);
    std::string_view payload = out.substr(1, hash - 1);
    int sum = hex_value(out[hash + 1]) * 16 + hex_value(out[hash + 2]);
    fuzz::check(sum == protocol::checksum(payload), "reply with a wrong checksum", out);
    out.remove_prefix(hash + 3);
  }
}

void check_round_trip(const std::string& payload) {
  RspLink fresh;
  fresh.receive(protocol::frame(payload));
  auto item = fresh.next();
  fuzz::check(item && std::holds_alternative<protocol::InboundPacket>(*item),
              "framed payload not read back", payload);
  fuzz::check(std::get<protocol::InboundPacket>(*item).payload == payload,
              "framed payload read back changed", payload);
  fuzz::check(fresh.take_output() == "+", "framed payload not acked", payload);
  fuzz::check(!fresh.next() && fresh.buffered_bytes() == 0, "bytes left after one frame", payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  uint8_t cut_seed = in.byte();
  std::string_view stream = in.remaining();

  Transcript whole = run(stream, 0);
  Transcript pieces = run(stream, cut_seed == 0 ? 1 : cut_seed);
  fuzz::check(whole.items.size() == pieces.items.size(), "item count depends on read boundaries");
  for (std::size_t i = 0; i < whole.items.size(); ++i)
    fuzz::check(whole.items[i] == pieces.items[i], "items depend on read boundaries", whole.items[i]);
  fuzz::check(whole.written == pieces.written, "output depends on read boundaries", whole.written);

  check_written(whole.written);
  for (const auto& item : whole.items)
    if (item.front() == '$') check_round_trip(item.substr(1));
  return 0;
}
