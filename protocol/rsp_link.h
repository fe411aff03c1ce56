#pragma once
// RSP framing without any I/O: bytes from the wire go in, whole packets and
// interrupt bytes come out, and the bytes to send back (acks, framed replies,
// retransmissions) accumulate in an outbox the caller drains.
// Bytes not yet consumed are kept, so a 0x03 or the next packet that arrives
// in the same read as a packet is never lost.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace protocol {

struct InboundPacket {
  std::string payload;  // between '$' and '#', still escaped ('}' kept)
};
struct InboundInterrupt {};  // a lone 0x03 outside a packet
using Inbound = std::variant<InboundPacket, InboundInterrupt>;

class RspLink {
 public:
  // Largest packet payload we accept; advertised as PacketSize. A longer
  // packet is discarded and NAKed.
  static constexpr std::size_t kMaxPayload = 16384;

  // Feeds raw bytes from the client.
  void receive(std::string_view bytes);

  // Next complete inbound item, in arrival order. A good packet is acked with
  // '+' (unless no-ack mode is on), a bad checksum or oversize packet with '-'
  // and not returned. A '-' from the client retransmits the last reply.
  std::optional<Inbound> next();

  // While a request is being answered: whether the client sent an
  // interrupt (0x03) since, consuming it and the acks before it; a packet
  // and what follows it stay for next().
  bool take_interrupt();

  // Whether a packet from the client has begun to arrive (and waits for
  // next()). While a request is being answered that means the client gave
  // up on it: gdb sends nothing but an interrupt until it has its reply.
  bool packet_waiting() const { return inbuf_.find('$') != std::string::npos; }

  // Frames a reply payload ('$' payload '#' checksum) into the outbox and
  // remembers it for retransmission. The payload must already be escaped
  // where binary (see escape_binary in replies.h).
  void send(std::string_view payload);
  // Frames an asynchronous notification ('%' payload '#' checksum, e.g.
  // "Stop:T05..." in non-stop mode) into the outbox, between replies.
  void send_notification(std::string_view payload);
  // Sends a notification-free raw string (used for nothing but tests today).
  void send_raw(std::string_view bytes) { outbox_.append(bytes); }

  // Bytes to write to the client; clears the outbox.
  std::string take_output();
  bool has_output() const { return !outbox_.empty(); }

  void set_no_ack_mode(bool on) { no_ack_ = on; }
  bool no_ack_mode() const { return no_ack_; }

  // Count of packets rejected for bad checksum/oversize/garbage (for tests and logs).
  std::size_t rejected_packets() const { return rejected_; }
  // Inbound bytes held for a packet not yet complete (bounded by about
  // kMaxPayload once next() has drained the complete items).
  std::size_t buffered_bytes() const { return inbuf_.size(); }

 private:
  std::string inbuf_;
  std::string outbox_;
  std::string last_sent_;  // framed, for retransmission on '-'
  bool no_ack_ = false;
  std::size_t rejected_ = 0;
  // Rest of an oversize packet still to be thrown away: until its '#', then
  // its two checksum digits.
  bool skipping_payload_ = false;
  int skipping_checksum_ = 0;
  // How far take_packet has already searched the pending packet for its
  // '#' (or a restarting '$'), so a packet trickling in byte by byte costs
  // linear, not quadratic, time. 0 when no packet is pending.
  std::size_t scanned_ = 0;

  // Each returns false when it needs more input before it can go on.
  bool discard_oversize();
  bool take_packet(std::optional<Inbound>& out);
  void reject();
  void take_between_packets(char c);  // an ack, a NAK or noise (already taken off inbuf_)
};

// '$' + payload + '#' + two hex digits of the modulo-256 sum.
std::string frame(std::string_view payload);
uint8_t checksum(std::string_view payload);

}  // namespace protocol
