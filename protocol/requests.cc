// parse_request() dispatch, packet names, and the query/thread families.
#include "protocol/requests.h"

#include "protocol/parse_util.h"
#include "protocol/replies.h"
#include "protocol/request_parsers.h"

namespace protocol {

using btstub::Expected;
using detail::bad_packet;

std::string packet_name(std::string_view payload) {
  if (payload.empty()) return "";
  char first = payload.front();
  // LLDB's thread stop query has its thread id straight after the name.
  if (payload.starts_with("qThreadStopInfo")) return "qThreadStopInfo";
  if (first == 'q' || first == 'Q' || first == 'v' || first == 'j') {
    auto end = payload.find_first_of(":,;?");
    return std::string(payload.substr(0, end));
  }
  if ((first == 'Z' || first == 'z') && payload.size() > 1) {
    auto end = payload.find(',');
    return std::string(payload.substr(0, end));
  }
  // bc/bs are documented as packets of their own (reverse continue/step).
  if (first == 'b' && payload.size() > 1 && (payload[1] == 'c' || payload[1] == 's'))
    return std::string(payload.substr(0, 2));
  return std::string(1, first);
}

namespace detail {
namespace {

Expected<Request> expect_exact(std::string_view rest, std::string_view name, Request value) {
  if (!rest.empty()) return bad_packet(std::string(name) + ": unexpected trailing data");
  return value;
}

Expected<Request> parse_supported(std::string_view rest) {
  QSupported out;
  if (rest.empty()) return Request{out};
  if (rest.front() != ':') return bad_packet("qSupported: expected ':' before features");
  for (auto feature : split_all(rest.substr(1), ';'))
    if (!feature.empty()) out.client_features.emplace_back(feature);
  return Request{out};
}

Expected<Request> parse_attached(std::string_view rest) {
  if (rest.empty()) return Request{QueryAttached{}};
  if (rest.front() != ':') return bad_packet("qAttached: expected ':' before pid");
  auto pid = parse_hex_i64(rest.substr(1));
  if (!pid) return bad_packet("qAttached: bad pid");
  return Request{QueryAttached{*pid}};
}

Expected<Request> parse_xfer(std::string_view rest) {
  if (rest.empty() || rest.front() != ':') return bad_packet("qXfer: expected ':' after qXfer");
  auto object = split_once(rest.substr(1), ':');
  if (!object || object->first.empty()) return bad_packet("qXfer: missing object");
  auto op = split_once(object->second, ':');
  if (!op) return bad_packet("qXfer: missing operation");
  if (op->first == "write") {
    // ANNEX:OFFSET:DATA, the data binary (it may hold ':').
    auto annex = split_once(op->second, ':');
    if (!annex) return bad_packet("qXfer: missing annex separator");
    auto offset_data = split_once(annex->second, ':');
    if (!offset_data) return bad_packet("qXfer: expected OFFSET:DATA");
    auto offset = parse_hex_u64(offset_data->first);
    if (!offset) return bad_packet("qXfer: bad offset");
    auto data = unescape_binary(offset_data->second);
    if (!data) return bad_packet("qXfer: bad escape in data");
    return Request{XferWrite{std::string(object->first), std::string(annex->first), *offset, std::move(*data)}};
  }
  if (op->first != "read") return Request{UnknownPacket{"qXfer"}};
  // The annex is whatever precedes the last ':' so an annex with ':' in it
  // still parses.
  auto tail = op->second;
  auto colon = tail.rfind(':');
  if (colon == std::string_view::npos) return bad_packet("qXfer: missing annex separator");
  auto range = split_once(tail.substr(colon + 1), ',');
  if (!range) return bad_packet("qXfer: expected OFFSET,LENGTH");
  auto offset = parse_hex_u64(range->first);
  auto length = parse_hex_u64(range->second);
  if (!offset || !length) return bad_packet("qXfer: bad offset or length");
  XferRead out;
  out.object = std::string(object->first);
  out.annex = std::string(tail.substr(0, colon));
  out.offset = *offset;
  out.length = *length;
  return Request{out};
}

Expected<Request> parse_rcmd(std::string_view rest) {
  if (rest.empty() || rest.front() != ',') return bad_packet("qRcmd: expected ',' before command");
  auto bytes = hex_decode(rest.substr(1));
  if (!bytes) return bad_packet("qRcmd: command is not valid hex");
  return Request{MonitorCommand{std::string(bytes->begin(), bytes->end())}};
}

Expected<std::vector<int>> parse_signal_list(std::string_view rest, std::string_view name) {
  if (rest.empty() || rest.front() != ':')
    return bad_packet(std::string(name) + ": expected ':' before signal list");
  std::vector<int> signals;
  for (auto piece : split_all(rest.substr(1), ';')) {
    if (piece.empty()) continue;  // tolerate a trailing ';'
    auto sig = parse_hex_int(piece);
    if (!sig || *sig < 0 || *sig > 0xff) return bad_packet(std::string(name) + ": bad signal number");
    signals.push_back(*sig);
  }
  return signals;
}

// QCatchSyscalls:0, QCatchSyscalls:1, QCatchSyscalls:1;NR;NR... (hex).
Expected<Request> parse_catch_syscalls(std::string_view rest) {
  if (rest == ":0") return Request{SetCatchSyscalls{}};
  if (rest.substr(0, 2) != ":1" || (rest.size() > 2 && rest[2] != ';')) {
    return bad_packet("QCatchSyscalls: expected ':0' or ':1[;SYSNO]...'");
  }
  SetCatchSyscalls req{.enable = true, .syscalls = {}};
  if (rest.size() > 2) {
    for (auto piece : split_all(rest.substr(3), ';')) {
      auto number = parse_hex_int(piece);
      if (!number || *number < 0 || *number > 0xffff) return bad_packet("QCatchSyscalls: bad system call number");
      req.syscalls.push_back(*number);
    }
  }
  return Request{std::move(req)};
}

}  // namespace

Expected<Request> parse_query(std::string_view payload) {
  std::string name = packet_name(payload);
  std::string_view rest = payload.substr(name.size());
  if (name == "qSupported") return parse_supported(rest);
  if (name == "QStartNoAckMode") return expect_exact(rest, name, QStartNoAckMode{});
  if (name == "qAttached") return parse_attached(rest);
  if (name == "qC") return expect_exact(rest, name, QueryCurrentThread{});
  if (name == "qfThreadInfo") return expect_exact(rest, name, QueryThreadInfoFirst{});
  if (name == "qsThreadInfo") return expect_exact(rest, name, QueryThreadInfoNext{});
  if (name == "qXfer") return parse_xfer(rest);
  if (name == "qRcmd") return parse_rcmd(rest);
  if (name == "QThreadEvents") return parse_thread_events(payload);
  if (name == "QNonStop") return parse_non_stop(payload);
  if (name == "QEnvironmentHexEncoded" || name == "QEnvironmentUnset" || name == "QEnvironmentReset" ||
      name == "QSetWorkingDir" || name == "QDisableRandomization") {
    return parse_run_setting(name, payload);
  }
  if (name == "Qbtrace") return parse_btrace(payload);
  if (name == "Qbtrace-conf") return parse_btrace_conf(payload);
  if (name == "qSymbol") return parse_symbol(payload);
  if (name == "qGetTLSAddr") return parse_tls_address(payload);
  if (name == "QCatchSyscalls") return parse_catch_syscalls(rest);
  if (name == "QPassSignals" || name == "QProgramSignals") {
    auto signals = parse_signal_list(rest, name);
    if (!signals) return signals.error();
    if (name == "QPassSignals") return Request{SetPassSignals{std::move(*signals)}};
    return Request{SetProgramSignals{std::move(*signals)}};
  }
  return parse_lldb_query(payload);
}

Expected<Request> parse_thread_packet(std::string_view payload) {
  if (payload.front() == 'T') {
    auto thread = parse_thread_id(payload.substr(1));
    if (!thread) return bad_packet("T: bad thread id");
    return Request{ThreadAlive{*thread}};
  }
  if (payload.size() < 2) return bad_packet("H: missing operation");
  char op = payload[1];
  if (op != 'g' && op != 'c') return Request{UnknownPacket{"H"}};
  auto thread = parse_thread_id(payload.substr(2));
  if (!thread) return bad_packet(std::string("H") + op + ": bad thread id");
  return Request{SetThread{op, *thread}};
}

}  // namespace detail

Expected<Request> parse_request(std::string_view payload) {
  if (payload.empty()) return Request{UnknownPacket{""}};
  switch (payload.front()) {
    case 'q':
    case 'Q':
      return detail::parse_query(payload);
    case 'v':
      return detail::parse_v_packet(payload);
    case '?':
      return detail::expect_exact(payload.substr(1), "?", QueryStopReason{});
    case 'H':
    case 'T':
      return detail::parse_thread_packet(payload);
    case 'g':
    case 'G':
    case 'p':
    case 'P':
      return detail::parse_registers(payload);
    case 'm':
    case 'M':
    case 'X':
      return detail::parse_memory(payload);
    case 'Z':
    case 'z':
      return detail::parse_breakpoint(payload);
    case 'c':
    case 'C':
    case 's':
    case 'S':
      return detail::parse_legacy_resume(payload);
    case 'b':
      return detail::parse_reverse(payload);
    case 'k':
    case 'D':
      return detail::parse_kill_detach(payload);
    case 'R':
      return detail::parse_restart(payload);
    case '!':
      return detail::parse_extended_mode(payload);
    case 'j':
      return detail::parse_lldb_query(payload);
    case 'x':
      return detail::parse_binary_read(payload);
    case '_':
      return detail::parse_allocation(payload);
    default:
      return Request{UnknownPacket{packet_name(payload)}};
  }
}

}  // namespace protocol
