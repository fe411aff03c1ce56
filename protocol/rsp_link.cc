#include "protocol/rsp_link.h"

#include <algorithm>

namespace protocol {
namespace {

constexpr char kInterrupt = '\x03';

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_control(char c) { return c == '$' || c == '+' || c == '-' || c == kInterrupt; }

}  // namespace

uint8_t checksum(std::string_view payload) {
  uint8_t sum = 0;
  for (char c : payload) sum = static_cast<uint8_t>(sum + static_cast<uint8_t>(c));
  return sum;
}

std::string frame(std::string_view payload) {
  static constexpr char kDigits[] = "0123456789abcdef";
  uint8_t sum = checksum(payload);
  std::string out;
  out.reserve(payload.size() + 4);
  out += '$';
  out.append(payload);
  out += '#';
  out += kDigits[sum >> 4];
  out += kDigits[sum & 0xf];
  return out;
}

void RspLink::receive(std::string_view bytes) { inbuf_.append(bytes); }

void RspLink::send(std::string_view payload) {
  last_sent_ = frame(payload);
  outbox_ += last_sent_;
}

// Framed as a packet with '%' for '$'. The client never acks a
// notification, so a '-' still retransmits the last reply, not this.
void RspLink::send_notification(std::string_view payload) {
  std::string framed = frame(payload);
  framed.front() = '%';
  outbox_ += framed;
}

std::string RspLink::take_output() {
  std::string out;
  out.swap(outbox_);
  return out;
}

void RspLink::reject() {
  ++rejected_;
  if (!no_ack_) outbox_ += '-';
}

bool RspLink::discard_oversize() {
  if (skipping_payload_) {
    // A '$' starts a new packet here too, as it does in take_packet, so
    // where the reads happened to split the stream does not matter.
    auto hash = inbuf_.find_first_of("#$");
    if (hash == std::string::npos) {
      inbuf_.clear();
      return false;
    }
    skipping_payload_ = false;
    if (inbuf_[hash] == '$') {
      inbuf_.erase(0, hash);
      return true;
    }
    inbuf_.erase(0, hash + 1);
    skipping_checksum_ = 2;
  }
  while (skipping_checksum_ > 0 && !inbuf_.empty()) {
    inbuf_.erase(0, 1);
    --skipping_checksum_;
  }
  return skipping_checksum_ == 0;
}

bool RspLink::take_packet(std::optional<Inbound>& out) {
  // inbuf_[0] is '$'. A second '$' before '#' means the client gave up on a
  // truncated packet and started over; keep the newer one.
  auto end = inbuf_.find_first_of("#$", std::max<std::size_t>(scanned_, 1));
  scanned_ = 0;
  bool oversize = (end == std::string::npos ? inbuf_.size() - 1 : end - 1) > kMaxPayload;
  if (oversize) {
    // Throw the bytes away now rather than buffer a packet we will refuse.
    // (Checked before the restart rule: whether the oversize part arrived
    // before or together with the next '$' must not change the answer.)
    reject();
    if (end == std::string::npos) {
      inbuf_.clear();
      skipping_payload_ = true;
    } else if (inbuf_[end] == '$') {
      inbuf_.erase(0, end);
    } else {
      inbuf_.erase(0, end + 1);
      skipping_checksum_ = 2;
    }
    return true;
  }
  if (end != std::string::npos && inbuf_[end] == '$') {
    ++rejected_;
    inbuf_.erase(0, end);
    return true;
  }
  if (end == std::string::npos || inbuf_.size() < end + 3) {
    scanned_ = end == std::string::npos ? inbuf_.size() : end;
    return false;
  }
  int high = hex_digit_value(inbuf_[end + 1]);
  int low = hex_digit_value(inbuf_[end + 2]);
  std::string payload = inbuf_.substr(1, end - 1);
  inbuf_.erase(0, end + 3);
  if (high < 0 || low < 0 || checksum(payload) != high * 16 + low) {
    reject();
    return true;
  }
  if (!no_ack_) outbox_ += '+';
  out = InboundPacket{std::move(payload)};
  return true;
}

std::optional<Inbound> RspLink::next() {
  while (true) {
    if ((skipping_payload_ || skipping_checksum_ > 0) && !discard_oversize()) return std::nullopt;
    if (inbuf_.empty()) return std::nullopt;
    char c = inbuf_.front();
    if (c == '$') {
      std::optional<Inbound> packet;
      if (!take_packet(packet)) return std::nullopt;
      if (packet) return packet;
      continue;
    }
    inbuf_.erase(0, 1);
    if (c == kInterrupt) return InboundInterrupt{};
    take_between_packets(c);
  }
}

void RspLink::take_between_packets(char c) {
  if (c == '-') {
    // In no-ack mode nothing is ever retransmitted.
    if (!no_ack_ && !last_sent_.empty()) outbox_ += last_sent_;
  } else if (c != '+') {
    // Line noise outside a packet: drop the whole run at once.
    std::size_t run = 0;
    while (run < inbuf_.size() && !is_control(inbuf_[run])) ++run;
    inbuf_.erase(0, run);
    ++rejected_;
  }
}

bool RspLink::take_interrupt() {
  while (!skipping_payload_ && skipping_checksum_ == 0 && !inbuf_.empty() && inbuf_.front() != '$') {
    const char c = inbuf_.front();
    inbuf_.erase(0, 1);
    if (c == kInterrupt) return true;
    take_between_packets(c);
  }
  return false;
}

}  // namespace protocol
