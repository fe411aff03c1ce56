// Branch-trace control packets of gdb's `record btrace`: Qbtrace:OP and
// Qbtrace-conf:FORMAT:size=N. Error texts are the ones gdb users know from
// gdbserver, since gdb prints them verbatim.
#include <limits>

#include "protocol/parse_util.h"
#include "protocol/request_parsers.h"

namespace protocol::detail {

using btstub::Expected;

Expected<Request> parse_btrace(std::string_view payload) {
  std::string_view rest = payload.substr(7);  // after "Qbtrace"
  if (rest.empty() || rest.front() != ':')
    return bad_packet("Qbtrace: expected ':' before the operation");
  std::string_view op = rest.substr(1);
  if (op == "bts") return Request{BtraceControl{BtraceOp::Bts}};
  if (op == "pt") return Request{BtraceControl{BtraceOp::Pt}};
  if (op == "off") return Request{BtraceControl{BtraceOp::Off}};
  return bad_packet("Bad Qbtrace operation.  Use bts, pt, or off.");
}

Expected<Request> parse_btrace_conf(std::string_view payload) {
  std::string_view rest = payload.substr(12);  // after "Qbtrace-conf"
  if (rest.empty() || rest.front() != ':') return bad_packet("Bad Qbtrace configuration option.");
  rest.remove_prefix(1);
  BtraceConfigure out;
  constexpr std::string_view kBts = "bts:size=";
  constexpr std::string_view kPt = "pt:size=";
  if (rest.substr(0, kBts.size()) == kBts) {
    out.format = BtraceFormat::Bts;
    rest.remove_prefix(kBts.size());
  } else if (rest.substr(0, kPt.size()) == kPt) {
    out.format = BtraceFormat::Pt;
    rest.remove_prefix(kPt.size());
  } else {
    return bad_packet("Bad Qbtrace configuration option.");
  }
  // gdb sends "0x..."; a bare hex number is accepted too, as gdbserver's
  // strtoul does.
  if (rest.size() > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X')) rest.remove_prefix(2);
  auto size = parse_hex_u64(rest);
  // gdb keeps the size in an unsigned int; anything wider is a bad value.
  if (!size || *size > std::numeric_limits<uint32_t>::max()) return bad_packet("Bad size value.");
  out.size = *size;
  return Request{out};
}

}  // namespace protocol::detail
