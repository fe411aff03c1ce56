// Register, memory and host-I/O (vFile) requests.
#include "protocol/parse_util.h"
#include "protocol/replies.h"
#include "protocol/request_parsers.h"

namespace protocol::detail {

using btstub::Expected;

namespace {

std::optional<unsigned> parse_regnum(std::string_view text) {
  auto value = parse_hex_u64(text);
  if (!value || *value > 0xffffffffu) return std::nullopt;
  return static_cast<unsigned>(*value);
}

struct AddrLen {
  uint64_t addr = 0;
  uint64_t length = 0;
};

Expected<AddrLen> parse_addr_len(std::string_view text, char letter) {
  auto fields = split_once(text, ',');
  if (!fields) return bad_packet(std::string(1, letter) + ": expected ADDR,LENGTH");
  auto addr = parse_hex_u64(fields->first);
  auto length = parse_hex_u64(fields->second);
  if (!addr) return bad_packet(std::string(1, letter) + ": bad address");
  if (!length) return bad_packet(std::string(1, letter) + ": bad length");
  return AddrLen{*addr, *length};
}

Expected<Request> parse_write_memory(std::string_view payload) {
  char letter = payload.front();
  auto header_data = split_once(payload.substr(1), ':');
  if (!header_data) return bad_packet(std::string(1, letter) + ": expected ':' before data");
  auto range = parse_addr_len(header_data->first, letter);
  if (!range) return range.error();
  WriteMemory out;
  out.addr = range->addr;
  if (letter == 'M') {
    auto bytes = hex_decode(header_data->second);
    if (!bytes) return bad_packet("M: data is not valid hex");
    out.bytes = std::move(*bytes);
  } else {
    auto bytes = unescape_binary(header_data->second);
    if (!bytes) return bad_packet("X: bad escape in data");
    out.bytes.assign(bytes->begin(), bytes->end());
  }
  if (out.bytes.size() != range->length)
    return bad_packet(std::string(1, letter) + ": length does not match the data");
  return Request{std::move(out)};
}

std::optional<std::string> decode_path(std::string_view hex) {
  auto bytes = hex_decode(hex);
  // An embedded NUL would silently truncate the path at the OS boundary.
  if (!bytes || bytes->empty()) return std::nullopt;
  for (auto b : *bytes)
    if (b == 0) return std::nullopt;
  return std::string(bytes->begin(), bytes->end());
}

std::optional<int> parse_fd(std::string_view text) {
  auto fd = parse_hex_int(text);
  if (!fd || *fd < 0) return std::nullopt;
  return fd;
}

Expected<Request> parse_vfile_open(std::string_view args) {
  auto parts = split_all(args, ',');
  if (parts.size() != 3) return bad_packet("vFile:open: expected PATH,FLAGS,MODE");
  auto path = decode_path(parts[0]);
  auto flags = parse_hex_int(parts[1]);
  auto mode = parse_hex_int(parts[2]);
  if (!path) return bad_packet("vFile:open: bad path");
  // Both are bit sets (File-I/O's own values): a '-' is malformed, not a
  // negative number to pass on.
  if (!flags || !mode || *flags < 0 || *mode < 0) return bad_packet("vFile:open: bad flags or mode");
  return Request{FileOpen{std::move(*path), *flags, *mode}};
}

Expected<Request> parse_vfile_pread(std::string_view args) {
  auto parts = split_all(args, ',');
  if (parts.size() != 3) return bad_packet("vFile:pread: expected FD,COUNT,OFFSET");
  auto fd = parse_fd(parts[0]);
  auto count = parse_hex_u64(parts[1]);
  auto offset = parse_hex_u64(parts[2]);
  if (!fd || !count || !offset) return bad_packet("vFile:pread: bad fd, count or offset");
  return Request{FilePread{*fd, *count, *offset}};
}

// The data is binary (escaped) and may hold ',' and ':': only the first two
// commas separate fields.
Expected<Request> parse_vfile_pwrite(std::string_view args) {
  auto fd_rest = split_once(args, ',');
  if (!fd_rest) return bad_packet("vFile:pwrite: expected FD,OFFSET,DATA");
  auto offset_data = split_once(fd_rest->second, ',');
  if (!offset_data) return bad_packet("vFile:pwrite: expected FD,OFFSET,DATA");
  auto fd = parse_fd(fd_rest->first);
  auto offset = parse_hex_u64(offset_data->first);
  if (!fd || !offset) return bad_packet("vFile:pwrite: bad fd or offset");
  auto data = unescape_binary(offset_data->second);
  if (!data) return bad_packet("vFile:pwrite: bad escape in data");
  return Request{FilePwrite{*fd, *offset, std::move(*data)}};
}

}  // namespace

Expected<Request> parse_registers(std::string_view payload) {
  char letter = payload.front();
  std::string_view rest = payload.substr(1);
  switch (letter) {
    case 'g':
      if (!rest.empty()) return bad_packet("g: unexpected trailing data");
      return Request{ReadAllRegisters{}};
    case 'G': {
      auto bytes = hex_decode(rest);
      if (!bytes || bytes->empty()) return bad_packet("G: register data is not valid hex");
      return Request{WriteAllRegisters{std::move(*bytes)}};
    }
    case 'p': {
      auto regnum = parse_regnum(rest);
      if (!regnum) return bad_packet("p: bad register number");
      return Request{ReadRegister{*regnum}};
    }
    default: {  // 'P'
      auto fields = split_once(rest, '=');
      if (!fields) return bad_packet("P: expected REGNUM=VALUE");
      auto regnum = parse_regnum(fields->first);
      if (!regnum) return bad_packet("P: bad register number");
      auto bytes = hex_decode(fields->second);
      if (!bytes || bytes->empty()) return bad_packet("P: value is not valid hex");
      return Request{WriteRegister{*regnum, std::move(*bytes)}};
    }
  }
}

Expected<Request> parse_memory(std::string_view payload) {
  if (payload.front() != 'm') return parse_write_memory(payload);
  auto range = parse_addr_len(payload.substr(1), 'm');
  if (!range) return range.error();
  return Request{ReadMemory{range->addr, range->length}};
}

Expected<Request> parse_vfile(std::string_view payload) {
  std::string_view rest = payload.substr(5);  // after "vFile"
  if (rest.empty() || rest.front() != ':') return bad_packet("vFile: expected ':' after vFile");
  auto op_args = split_once(rest.substr(1), ':');
  if (!op_args) return bad_packet("vFile: expected OPERATION:ARGS");
  auto [op, args] = *op_args;
  if (op == "open") return parse_vfile_open(args);
  if (op == "pread") return parse_vfile_pread(args);
  if (op == "pwrite") return parse_vfile_pwrite(args);
  if (op == "close" || op == "fstat") {
    auto fd = parse_fd(args);
    if (!fd) return bad_packet("vFile:" + std::string(op) + ": bad fd");
    if (op == "close") return Request{FileClose{*fd}};
    return Request{FileFstat{*fd}};
  }
  if (op == "setfs") {
    auto pid = parse_hex_i64(args);
    if (!pid || *pid < 0) return bad_packet("vFile:setfs: bad pid");
    return Request{FileSetFs{*pid}};
  }
  if (op == "readlink" || op == "unlink") {
    auto path = decode_path(args);
    if (!path) return bad_packet("vFile:" + std::string(op) + ": bad path");
    if (op == "readlink") return Request{FileReadlink{std::move(*path)}};
    return Request{FileUnlink{std::move(*path)}};
  }
  return Request{UnknownPacket{"vFile:" + std::string(op)}};
}

}  // namespace protocol::detail
