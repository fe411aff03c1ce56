// The thread library's packets: qSymbol (gdb answering the stub's symbol
// questions) and qGetTLSAddr.
#include "protocol/parse_util.h"
#include "protocol/replies.h"
#include "protocol/request_parsers.h"

namespace protocol::detail {

using btstub::Expected;

// qSymbol:: | qSymbol:VALUE:HEXNAME | qSymbol::HEXNAME
Expected<Request> parse_symbol(std::string_view payload) {
  std::string_view rest = payload.substr(std::string_view("qSymbol").size());
  if (rest.empty() || rest.front() != ':') return bad_packet("qSymbol: expected ':'");
  rest.remove_prefix(1);
  if (rest == ":") return Request{SymbolsReady{}};
  auto parts = split_once(rest, ':');
  if (!parts) return bad_packet("qSymbol: expected VALUE:NAME");
  auto name = hex_decode(parts->second);
  if (!name || name->empty()) return bad_packet("qSymbol: symbol name is not hex");
  SymbolAnswer out;
  out.name.assign(name->begin(), name->end());
  if (!parts->first.empty()) {
    out.address = parse_hex_u64(parts->first);
    if (!out.address) return bad_packet("qSymbol: bad symbol value");
  }
  return Request{std::move(out)};
}

// qGetTLSAddr:THREAD,OFFSET,LM (gdb always sends all three).
Expected<Request> parse_tls_address(std::string_view payload) {
  std::string_view rest = payload.substr(std::string_view("qGetTLSAddr").size());
  if (rest.empty() || rest.front() != ':') return bad_packet("qGetTLSAddr: expected ':'");
  auto fields = split_all(rest.substr(1), ',');
  if (fields.size() != 3) return bad_packet("qGetTLSAddr: expected THREAD,OFFSET,LM");
  auto thread = parse_thread_id(fields[0]);
  if (!thread) return bad_packet("qGetTLSAddr: bad thread id");
  auto offset = parse_hex_u64(fields[1]);
  auto link_map = parse_hex_u64(fields[2]);
  if (!offset || !link_map) return bad_packet("qGetTLSAddr: bad offset or link map address");
  return Request{GetTlsAddress{*thread, *offset, *link_map}};
}

}  // namespace protocol::detail
