// LLDB's own packets, as lldb-server answers them (lldb's
// docs/lldb-gdb-remote.txt): host and process facts, per-thread stop
// queries, memory regions, the binary memory read and memory allocation
// for expressions. gdb sends none of them.
#include "protocol/parse_util.h"
#include "protocol/request_parsers.h"
#include "protocol/thread_id.h"

namespace protocol::detail {

using btstub::Expected;

namespace {

Expected<Request> exactly(std::string_view payload, std::string_view name, Request value) {
  if (payload.size() != name.size()) return bad_packet(std::string(name) + ": unexpected trailing data");
  return value;
}

}  // namespace

Expected<Request> parse_lldb_query(std::string_view payload) {
  if (payload.starts_with("qThreadStopInfo")) {
    auto thread = parse_thread_id(payload.substr(std::string_view("qThreadStopInfo").size()));
    if (!thread) return bad_packet("qThreadStopInfo: bad thread id");
    return Request{ThreadStopInfoQuery{*thread}};
  }
  const std::string name = packet_name(payload);
  if (name == "qHostInfo") return exactly(payload, name, HostInfoQuery{});
  if (name == "qProcessInfo") return exactly(payload, name, ProcessInfoQuery{});
  if (name == "jThreadsInfo") return exactly(payload, name, ThreadsInfoQuery{});
  if (name == "QEnableErrorStrings") return exactly(payload, name, EnableErrorStrings{});
  if (name == "qShlibInfoAddr") return exactly(payload, name, SharedLibraryInfoQuery{});
  // lldb sends "qWatchpointSupportInfo:" (older ones without the colon).
  if (name == "qWatchpointSupportInfo") {
    if (payload != "qWatchpointSupportInfo" && payload != "qWatchpointSupportInfo:")
      return bad_packet("qWatchpointSupportInfo: unexpected trailing data");
    return Request{WatchpointCountQuery{}};
  }
  if (name == "qMemoryRegionInfo") {
    std::string_view rest = payload.substr(name.size());
    if (rest.empty() || rest.front() != ':') return bad_packet("qMemoryRegionInfo: expected ':' before the address");
    auto addr = parse_hex_u64(rest.substr(1));
    if (!addr) return bad_packet("qMemoryRegionInfo: bad address");
    return Request{MemoryRegionQuery{*addr}};
  }
  return Request{UnknownPacket{name}};
}

// x<addr>,<length>: like m, the reply binary instead of hex.
Expected<Request> parse_binary_read(std::string_view payload) {
  auto parts = split_once(payload.substr(1), ',');
  if (!parts) return bad_packet("x: expected ADDR,LENGTH");
  auto addr = parse_hex_u64(parts->first);
  auto length = parse_hex_u64(parts->second);
  if (!addr || !length) return bad_packet("x: bad address or length");
  return Request{ReadMemoryBinary{*addr, *length}};
}

// _M<size>,<permissions> allocates, _m<addr> frees.
Expected<Request> parse_allocation(std::string_view payload) {
  if (payload.size() < 2 || (payload[1] != 'M' && payload[1] != 'm')) {
    return Request{UnknownPacket{std::string(payload.substr(0, 2))}};
  }
  std::string_view rest = payload.substr(2);
  if (payload[1] == 'm') {
    auto addr = parse_hex_u64(rest);
    if (!addr) return bad_packet("_m: bad address");
    return Request{DeallocateMemory{*addr}};
  }
  auto parts = split_once(rest, ',');
  if (!parts) return bad_packet("_M: expected SIZE,PERMISSIONS");
  auto size = parse_hex_u64(parts->first);
  if (!size || *size == 0) return bad_packet("_M: bad size");
  AllocateMemory out;
  out.size = *size;
  for (char c : parts->second) {
    bool& flag = c == 'r' ? out.read : c == 'w' ? out.write : c == 'x' ? out.execute : out.read;
    if ((c != 'r' && c != 'w' && c != 'x') || flag) return bad_packet("_M: permissions are r, w and x, each once");
    flag = true;
  }
  return Request{out};
}

}  // namespace protocol::detail
