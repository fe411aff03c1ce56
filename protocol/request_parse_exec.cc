// Execution-control requests: c/C/s/S, vCont, bc/bs, Z/z, k/vKill, D, and the
// dispatch of the other 'v' packets.
#include "protocol/parse_util.h"
#include "protocol/replies.h"
#include "protocol/request_parsers.h"

namespace protocol::detail {

using btstub::Expected;

namespace {

std::optional<int> parse_signal(std::string_view text) {
  auto sig = parse_hex_int(text);
  if (!sig || *sig < 0 || *sig > 0xff) return std::nullopt;
  return sig;
}

// One vCont action such as "c", "S0b:p1f.20", "t".
Expected<ThreadAction> parse_vcont_action(std::string_view text) {
  ThreadAction action;
  std::string_view verb = text;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    verb = text.substr(0, colon);
    auto thread = parse_thread_id(text.substr(colon + 1));
    if (!thread) return bad_packet("vCont: bad thread id in action");
    action.thread = *thread;
  }
  if (verb.empty()) return bad_packet("vCont: empty action");
  switch (verb.front()) {
    case 'c': action.action = ResumeAction::Continue; break;
    case 's': action.action = ResumeAction::Step; break;
    case 't': action.action = ResumeAction::Stop; break;
    case 'C': action.action = ResumeAction::Continue; break;
    case 'S': action.action = ResumeAction::Step; break;
    default: return bad_packet("vCont: unsupported action '" + std::string(verb.substr(0, 16)) + "'");
  }
  bool with_signal = verb.front() == 'C' || verb.front() == 'S';
  if (with_signal) {
    auto sig = parse_signal(verb.substr(1));
    if (!sig) return bad_packet("vCont: bad signal in action");
    // A signal this host does not have (gdb's SIGEMT, its "unknown"):
    // gdbserver's handle_v_cont answers E rather than resume without it.
    if (*sig != 0 && gdb_signal_to_host(*sig) == 0) return bad_packet("vCont: the signal has no number on this host");
    action.signal = *sig;
  } else if (verb.size() != 1) {
    return bad_packet("vCont: unexpected data after action '" + std::string(1, verb.front()) + "'");
  }
  return action;
}

}  // namespace

Expected<Request> parse_vcont(std::string_view payload) {
  std::string_view rest = payload.substr(5);  // after "vCont"
  if (rest == "?") return Request{QueryVContSupported{}};
  if (rest.empty() || rest.front() != ';') return bad_packet("vCont: expected ';' before actions");
  Resume out;
  for (auto piece : split_all(rest.substr(1), ';')) {
    auto action = parse_vcont_action(piece);
    if (!action) return action.error();
    out.actions.push_back(std::move(*action));
  }
  return Request{std::move(out)};
}

Expected<Request> parse_v_packet(std::string_view payload) {
  std::string name = packet_name(payload);
  std::string_view rest = payload.substr(name.size());
  if (name == "vCont") return parse_vcont(payload);
  if (name == "vFile") return parse_vfile(payload);
  if (name == "vRun") return parse_vrun(payload);
  if (name == "vAttach") return parse_vattach(payload);
  if (name == "vMustReplyEmpty") {
    if (!rest.empty()) return bad_packet("vMustReplyEmpty: unexpected trailing data");
    return Request{MustReplyEmpty{}};
  }
  if (name == "vStopped" || name == "vCtrlC") {
    if (!rest.empty()) return bad_packet(name + ": unexpected trailing data");
    if (name == "vStopped") return Request{StopNotificationAck{}};
    return Request{InterruptRequest{}};
  }
  if (name == "vKill") {
    if (rest.empty() || rest.front() != ';') return bad_packet("vKill: expected ';' before pid");
    auto pid = parse_hex_i64(rest.substr(1));
    if (!pid) return bad_packet("vKill: bad pid");
    return Request{Kill{*pid}};
  }
  return Request{UnknownPacket{name}};
}

Expected<Request> parse_legacy_resume(std::string_view payload) {
  char letter = payload.front();
  std::string_view rest = payload.substr(1);
  ThreadAction action;
  action.action = (letter == 'c' || letter == 'C') ? ResumeAction::Continue : ResumeAction::Step;
  std::string_view addr_text = rest;
  if (letter == 'C' || letter == 'S') {
    auto semi = rest.find(';');
    auto sig = parse_signal(rest.substr(0, semi));
    if (!sig) return bad_packet(std::string(1, letter) + ": bad signal number");
    // A signal this host does not have is dropped: gdbserver's C and S
    // resume without it (vCont's are refused, parse_vcont_action).
    action.signal = gdb_signal_to_host(*sig) != 0 ? *sig : 0;
    addr_text = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    if (semi != std::string_view::npos && addr_text.empty())
      return bad_packet(std::string(1, letter) + ": missing address after ';'");
  }
  Resume out;
  out.actions.push_back(action);
  if (!addr_text.empty()) {
    auto addr = parse_hex_u64(addr_text);
    if (!addr) return bad_packet(std::string(1, letter) + ": bad resume address");
    out.resume_addr = *addr;
  }
  return Request{std::move(out)};
}

Expected<Request> parse_reverse(std::string_view payload) {
  if (payload.size() < 2 || (payload[1] != 'c' && payload[1] != 's'))
    return Request{UnknownPacket{packet_name(payload)}};
  if (payload.size() != 2) return bad_packet(std::string(payload.substr(0, 2)) + ": unexpected trailing data");
  Resume out;
  out.direction = Direction::Reverse;
  ThreadAction action;
  action.action = payload[1] == 'c' ? ResumeAction::Continue : ResumeAction::Step;
  out.actions.push_back(action);
  return Request{std::move(out)};
}

Expected<Request> parse_breakpoint(std::string_view payload) {
  char letter = payload.front();
  auto fields = split_once(payload.substr(1), ',');
  if (!fields) return bad_packet(std::string(1, letter) + ": expected TYPE,ADDR,KIND");
  auto type = parse_hex_u64(fields->first);
  if (!type) return bad_packet(std::string(1, letter) + ": bad breakpoint type");
  if (*type > 4) return Request{UnknownPacket{packet_name(payload)}};
  auto addr_kind = split_once(fields->second, ',');
  if (!addr_kind) return bad_packet(std::string(1, letter) + ": expected ADDR,KIND");
  // Conditions and commands (";X..." or ";cmds:..." after the kind) come
  // only from a client that ignored qSupported (no ConditionalBreakpoints+
  // or BreakpointCommands+): ignored, the breakpoint would stop where the
  // client asked it not to.
  if (addr_kind->second.find(';') != std::string_view::npos) {
    return bad_packet(std::string(1, letter) +
                      ": breakpoint conditions and commands are not supported (not in qSupported)");
  }
  auto kind_text = addr_kind->second;
  auto addr = parse_hex_u64(addr_kind->first);
  auto kind = parse_hex_u64(kind_text);
  if (!addr) return bad_packet(std::string(1, letter) + ": bad address");
  if (!kind) return bad_packet(std::string(1, letter) + ": bad kind");
  auto bp_type = static_cast<BreakpointType>(*type);
  if (letter == 'Z') return Request{InsertBreakpoint{bp_type, *addr, *kind}};
  return Request{RemoveBreakpoint{bp_type, *addr, *kind}};
}

Expected<Request> parse_kill_detach(std::string_view payload) {
  char letter = payload.front();
  std::string_view rest = payload.substr(1);
  if (letter == 'k') {
    if (!rest.empty()) return bad_packet("k: unexpected trailing data");
    return Request{Kill{}};
  }
  if (rest.empty()) return Request{Detach{}};
  if (rest.front() != ';') return bad_packet("D: expected ';' before pid");
  auto pid = parse_hex_i64(rest.substr(1));
  if (!pid) return bad_packet("D: bad pid");
  return Request{Detach{*pid}};
}

}  // namespace protocol::detail
