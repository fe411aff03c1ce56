// Wire syntax of every reply payload.
#include "protocol/replies.h"

#include <algorithm>

#include "protocol/rsp_link.h"

namespace protocol {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool needs_escape(char c) { return c == '#' || c == '$' || c == '}' || c == '*'; }

std::string hex2(unsigned value) {
  std::string out(2, '0');
  out[0] = kHexDigits[(value >> 4) & 0xf];
  out[1] = kHexDigits[value & 0xf];
  return out;
}


std::string fork_child(const StopReply& stop, bool multiprocess) {
  if (stop.child) return format_thread_id(*stop.child, multiprocess);
  return stop.reason_text;
}

std::string exec_file(const StopReply& stop) {
  if (stop.exec_path) return hex_encode(*stop.exec_path);
  return stop.reason_text;
}

std::string stop_reason_field(const StopReply& stop, bool multiprocess) {
  switch (stop.reason) {
    case StopReason::None: return "";
    case StopReason::SoftwareBreakpoint: return "swbreak:;";
    case StopReason::HardwareBreakpoint: return "hwbreak:;";
    case StopReason::Watch: return "watch:" + hex_number(stop.reason_addr) + ";";
    case StopReason::ReadWatch: return "rwatch:" + hex_number(stop.reason_addr) + ";";
    case StopReason::AccessWatch: return "awatch:" + hex_number(stop.reason_addr) + ";";
    case StopReason::ReplayBegin: return "replaylog:begin;";
    case StopReason::ReplayEnd: return "replaylog:end;";
    case StopReason::Fork: return "fork:" + fork_child(stop, multiprocess) + ";";
    case StopReason::Vfork: return "vfork:" + fork_child(stop, multiprocess) + ";";
    case StopReason::VforkDone: return "vforkdone:;";
    case StopReason::Exec: return "exec:" + exec_file(stop) + ";";
    case StopReason::Create: return "create:;";
    case StopReason::SyscallEntry: return "syscall_entry:" + hex_number(stop.reason_addr) + ";";
    case StopReason::SyscallReturn: return "syscall_return:" + hex_number(stop.reason_addr) + ";";
  }
  return "";
}

std::string process_suffix(const StopReply& stop, bool multiprocess) {
  if (!multiprocess || !stop.process) return "";
  int64_t pid = *stop.process;
  if (pid < 0) return ";process:-" + hex_number(0 - static_cast<uint64_t>(pid));
  return ";process:" + hex_number(static_cast<uint64_t>(pid));
}

}  // namespace

std::string hex_number(uint64_t value) {
  std::string out;
  do {
    out.insert(out.begin(), kHexDigits[value & 0xf]);
    value >>= 4;
  } while (value != 0);
  return out;
}

std::string hex_encode(const uint8_t* data, std::size_t len) {
  std::string out;
  out.reserve(len * 2);
  for (std::size_t i = 0; i < len; ++i) {
    out += kHexDigits[data[i] >> 4];
    out += kHexDigits[data[i] & 0xf];
  }
  return out;
}

std::string hex_encode(std::string_view bytes) {
  return hex_encode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::optional<std::vector<uint8_t>> hex_decode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int high = hex_value(hex[i]);
    int low = hex_value(hex[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out.push_back(static_cast<uint8_t>(high * 16 + low));
  }
  return out;
}

std::string escape_binary(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char c : bytes) {
    if (needs_escape(c)) {
      out += '}';
      out += static_cast<char>(c ^ 0x20);
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_binary_within(std::string_view bytes, std::size_t budget, std::size_t& taken) {
  std::string out;
  out.reserve(std::min(bytes.size(), budget));
  for (taken = 0; taken < bytes.size(); ++taken) {
    const char c = bytes[taken];
    const std::size_t cost = needs_escape(c) ? 2 : 1;
    if (out.size() + cost > budget) break;
    if (cost == 2) {
      out += '}';
      out += static_cast<char>(c ^ 0x20);
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> unescape_binary(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '}') {
      out += bytes[i];
      continue;
    }
    if (++i == bytes.size()) return std::nullopt;
    out += static_cast<char>(bytes[i] ^ 0x20);
  }
  return out;
}

std::string reply_ok() { return "OK"; }
std::string reply_empty() { return ""; }

std::string reply_error(const btstub::Error& error) {
  std::string text = error.message.empty() ? "error" : error.message;
  // A message may quote the request, which can fill a whole packet; the
  // reply must still fit the client's PacketSize.
  constexpr std::string_view kCut = "...";
  constexpr std::size_t kMaxText = RspLink::kMaxPayload - 2;  // after "E."
  if (text.size() > kMaxText) text = text.substr(0, kMaxText - kCut.size()) + std::string(kCut);
  // '#', '$' would break framing, '*' is run-length encoding to gdb and '}'
  // an escape; non-printables are just noise in gdb's error message.
  for (char& c : text) {
    if (needs_escape(c) || static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      c = '?';
  }
  return "E." + text;
}

std::string reply_error_code(uint8_t code) { return "E" + hex2(code); }

std::string reply_supported(const std::vector<std::string>& features) {
  std::string out;
  for (const auto& feature : features) {
    if (!out.empty()) out += ';';
    out += feature;
  }
  return out;
}

std::string reply_current_thread(const ThreadId& id, bool multiprocess) {
  return "QC" + format_thread_id(id, multiprocess);
}

std::string reply_thread_list(const std::vector<ThreadId>& ids, bool multiprocess) {
  if (ids.empty()) return "l";
  std::string out = "m";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i != 0) out += ',';
    out += format_thread_id(ids[i], multiprocess);
  }
  return out;
}

std::string reply_attached(bool attached) { return attached ? "1" : "0"; }

std::vector<std::string> reply_console_output(std::string_view text) {
  const std::size_t budget = (RspLink::kMaxPayload - 1) / 2;  // text bytes after the 'O'
  std::vector<std::string> packets;
  while (!text.empty()) {
    std::size_t take = text.size();
    if (take > budget) {
      std::size_t line_end = text.rfind('\n', budget - 1);
      take = line_end == std::string_view::npos ? budget : line_end + 1;
    }
    packets.push_back("O" + hex_encode(text.substr(0, take)));
    text.remove_prefix(take);
  }
  return packets;
}

std::string reply_xfer_chunk(std::string_view object, uint64_t offset, uint64_t length) {
  if (offset >= object.size()) return "l";
  std::string_view rest = object.substr(offset);
  uint64_t wanted = std::min<uint64_t>(length, rest.size());
  // gdb asks for `length` raw bytes, but escaping can make the reply longer
  // than the packet size we advertised; like gdbserver, send fewer bytes then.
  std::size_t taken = 0;
  const std::string chunk = escape_binary_within(rest.substr(0, wanted), RspLink::kMaxPayload - 1, taken);
  return (taken < rest.size() ? "m" : "l") + chunk;
}

std::string reply_vcont_supported(std::string_view actions) {
  if (actions.substr(0, 5) == "vCont") return std::string(actions);
  if (!actions.empty() && actions.front() == ';') return "vCont" + std::string(actions);
  return "vCont;" + std::string(actions);
}

std::string reply_symbol_question(std::string_view name) { return "qSymbol:" + hex_encode(name); }

std::string reply_tls_address(uint64_t address) { return hex_number(address); }

std::string reply_register(const RegisterFile& regs, unsigned regnum) {
  if (regnum >= kAmd64RegisterCount)
    return reply_error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "no such register"));
  std::size_t size = amd64_register_size(regnum);
  if (!regs.available(regnum)) return std::string(size * 2, 'x');
  return hex_encode(regs.bytes(regnum), size);
}

std::string reply_registers(const RegisterFile& regs, const RegisterLayout& layout) {
  std::string out;
  out.reserve(layout.buffer_size() * 2);
  for (unsigned wire = 0; wire < layout.count(); ++wire) out += reply_register(regs, layout.index(wire));
  return out;
}

std::string reply_memory(const std::vector<uint8_t>& bytes) { return hex_encode(bytes.data(), bytes.size()); }

std::string reply_stop(const StopReply& stop, bool multiprocess) {
  switch (stop.kind) {
    case StopReply::Kind::Exited:
      return "W" + hex2(static_cast<unsigned>(stop.exit_code) & 0xff) + process_suffix(stop, multiprocess);
    case StopReply::Kind::Terminated:
      return "X" + hex2(static_cast<unsigned>(stop.signal) & 0xff) + process_suffix(stop, multiprocess);
    case StopReply::Kind::ThreadExited: {
      std::string out = "w" + hex2(static_cast<unsigned>(stop.exit_code) & 0xff);
      if (stop.thread) out += ";" + format_thread_id(*stop.thread, multiprocess);
      return out;
    }
    case StopReply::Kind::NoResumed:
      return "N";
    case StopReply::Kind::Signal:
      break;
  }
  std::string out = "T" + hex2(static_cast<unsigned>(stop.signal) & 0xff);
  for (const auto& [regnum, value] : stop.expedited)
    out += (regnum < 0x100 ? hex2(regnum) : hex_number(regnum)) + ":" + hex_encode(value.data(), value.size()) + ";";
  if (stop.thread) out += "thread:" + format_thread_id(*stop.thread, multiprocess) + ";";
  out += stop_reason_field(stop, multiprocess);
  return out;
}

}  // namespace protocol
