// extended-remote requests (vRun, vAttach, R, !), the run settings for vRun
// (QEnvironment*, QSetWorkingDir, QDisableRandomization), QThreadEvents and
// QNonStop.
#include "protocol/parse_util.h"
#include "protocol/replies.h"
#include "protocol/request_parsers.h"

namespace protocol::detail {

using btstub::Expected;

namespace {

// One vRun argument. Unlike a vFile path an empty argument is legal (argv[0]
// empty selects the default program); an embedded NUL is not, because the
// argument ends up in an execve() argv.
std::optional<std::string> decode_argument(std::string_view hex) {
  auto bytes = hex_decode(hex);
  if (!bytes) return std::nullopt;
  for (auto b : *bytes)
    if (b == 0) return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

}  // namespace

Expected<Request> parse_vrun(std::string_view payload) {
  std::string_view rest = payload.substr(4);  // after "vRun"
  if (rest.empty() || rest.front() != ';') return bad_packet("vRun: expected ';' before the program");
  RunProgram out;
  for (auto piece : split_all(rest.substr(1), ';')) {
    auto arg = decode_argument(piece);
    if (!arg) return bad_packet("vRun: argument " + std::to_string(out.argv.size()) + " is not valid hex");
    out.argv.push_back(std::move(*arg));
  }
  return Request{std::move(out)};
}

Expected<Request> parse_vattach(std::string_view payload) {
  std::string_view rest = payload.substr(7);  // after "vAttach"
  if (rest.empty() || rest.front() != ';') return bad_packet("vAttach: expected ';' before pid");
  auto pid = parse_hex_i64(rest.substr(1));
  if (!pid || *pid <= 0) return bad_packet("vAttach: bad pid");
  return Request{AttachProcess{*pid}};
}

Expected<Request> parse_restart(std::string_view payload) {
  // The argument is documented as ignored; gdb sends "R0" or "R00". Accept
  // any hex (or none) but still refuse garbage.
  std::string_view rest = payload.substr(1);
  if (!rest.empty() && !parse_hex_u64(rest)) return bad_packet("R: bad argument");
  return Request{Restart{}};
}

Expected<Request> parse_extended_mode(std::string_view payload) {
  if (payload.size() != 1) return bad_packet("!: unexpected trailing data");
  return Request{ExtendedMode{}};
}

Expected<Request> parse_thread_events(std::string_view payload) {
  std::string_view rest = payload.substr(13);  // after "QThreadEvents"
  if (rest == ":1") return Request{SetThreadEvents{true}};
  if (rest == ":0") return Request{SetThreadEvents{false}};
  return bad_packet("QThreadEvents: expected ':0' or ':1'");
}

// QNonStop:1 asks for non-stop mode, QNonStop:0 for all-stop; gdbserver
// refuses any other mode with an error.
Expected<Request> parse_non_stop(std::string_view payload) {
  std::string_view rest = payload.substr(8);  // after "QNonStop"
  if (rest == ":1") return Request{SetNonStop{true}};
  if (rest == ":0") return Request{SetNonStop{false}};
  return bad_packet("QNonStop: expected ':0' or ':1'");
}

// The run settings: each value hex-encoded text that ends up in an execve()
// environment or a chdir() path, so an embedded NUL is refused.
Expected<Request> parse_run_setting(std::string_view name, std::string_view payload) {
  std::string_view rest = payload.substr(name.size());
  if (name == "QEnvironmentReset") {
    if (!rest.empty()) return bad_packet("QEnvironmentReset: unexpected trailing data");
    return Request{EnvironmentReset{}};
  }
  if (name == "QDisableRandomization") {
    if (rest == ":1") return Request{SetDisableRandomization{true}};
    if (rest == ":0") return Request{SetDisableRandomization{false}};
    return bad_packet("QDisableRandomization: expected ':0' or ':1'");
  }
  if (rest.empty() || rest.front() != ':') return bad_packet(std::string(name) + ": expected ':'");
  auto text = decode_argument(rest.substr(1));
  if (!text) return bad_packet(std::string(name) + ": not valid hex, or a NUL in it");
  if (name == "QSetWorkingDir") return Request{SetWorkingDir{std::move(*text)}};
  if (name == "QEnvironmentUnset") {
    if (text->empty() || text->find('=') != std::string::npos) {
      return bad_packet("QEnvironmentUnset: not a variable name");
    }
    return Request{EnvironmentUnset{std::move(*text)}};
  }
  // QEnvironmentHexEncoded: NAME=VALUE, split at the first '=' (a value
  // may hold more).
  const auto eq = text->find('=');
  if (eq == std::string::npos || eq == 0) return bad_packet("QEnvironmentHexEncoded: expected NAME=VALUE");
  return Request{EnvironmentSet{text->substr(0, eq), text->substr(eq + 1)}};
}

}  // namespace protocol::detail
