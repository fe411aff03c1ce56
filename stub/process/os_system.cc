#include "stub/process/os_system.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>

#include "stub/process/os_proc_text.h"
#include "stub/process/proc_file.h"

namespace stub::process {

namespace {

std::string read_file(const std::string& path) { return read_proc_file(path).value_or(""); }

// The text as gdbserver's fgets loop sees it: lines with their newline, a
// line longer than its 8 KiB buffer read in pieces.
std::vector<std::string> lines_of(std::string_view text) {
  constexpr std::size_t kPiece = 8191;
  std::vector<std::string> lines;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::size_t length = end == std::string_view::npos ? text.size() : end + 1;
    length = std::min(length, kPiece);
    lines.emplace_back(text.substr(0, length));
    text.remove_prefix(length);
  }
  return lines;
}

// strtok's view of a line: the non-empty runs between separators.
std::vector<std::string> tokens(std::string_view line, char separator) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < line.size()) {
    std::size_t end = line.find(separator, at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) out.emplace_back(line.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string up_to_tab(const std::string& text) { return text.substr(0, text.find('\t')); }

// getnameinfo's numeric host and service for an address from /proc/net.
bool numeric_name(const sockaddr* address, socklen_t size, bool stream, std::string& host, std::string& service) {
  char host_text[NI_MAXHOST];
  char service_text[NI_MAXSERV];
  int flags = NI_NUMERICHOST | NI_NUMERICSERV | (stream ? 0 : NI_DGRAM);
  if (getnameinfo(address, size, host_text, sizeof host_text, service_text, sizeof service_text, flags) != 0) {
    return false;
  }
  host = host_text;
  service = service_text;
  return true;
}

// /proc/net prints an address as the hex of its 32-bit words in host order.
bool socket_address(const char* hex, unsigned port, protocol::SocketFamily family, bool stream, std::string& host,
                    std::string& service) {
  if (family == protocol::SocketFamily::Inet) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    unsigned word = 0;
    std::sscanf(hex, "%X", &word);
    address.sin_addr.s_addr = word;
    address.sin_port = htons(static_cast<uint16_t>(port));
    return numeric_name(reinterpret_cast<sockaddr*>(&address), sizeof address, stream, host, service);
  }
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  unsigned words[4] = {};
  std::sscanf(hex, "%8X%8X%8X%8X", &words[0], &words[1], &words[2], &words[3]);
  std::memcpy(&address.sin6_addr, words, sizeof words);
  address.sin6_port = htons(static_cast<uint16_t>(port));
  return numeric_name(reinterpret_cast<sockaddr*>(&address), sizeof address, stream, host, service);
}

}  // namespace

std::vector<protocol::OsCpu> parse_cpuinfo(std::string_view text) {
  std::vector<protocol::OsCpu> cpus;
  for (const auto& line : lines_of(text)) {
    auto parts = tokens(line, ':');
    if (parts.size() < 2) continue;
    std::string key = up_to_tab(parts[0]);
    std::string value = up_to_tab(parts[1]);
    if (key == "processor") cpus.emplace_back();
    // Lines before the first "processor" belong to no cpu (gdbserver sends
    // them outside any item, where gdb does not show them).
    if (!cpus.empty()) cpus.back().fields.emplace_back(std::move(key), std::move(value));
  }
  return cpus;
}

std::vector<protocol::OsCpu> list_os_cpus(const std::string& path) { return parse_cpuinfo(read_file(path)); }

std::vector<protocol::OsModule> parse_proc_modules(std::string_view text) {
  std::vector<protocol::OsModule> modules;
  for (const auto& line : lines_of(text)) {
    // Five space-separated words, then the rest of the line from the address.
    std::vector<std::string> words;
    std::size_t at = 0;
    while (words.size() < 5) {
      at = line.find_first_not_of(' ', at);
      if (at == std::string::npos) break;
      std::size_t end = std::min(line.find(' ', at), line.size());
      words.push_back(line.substr(at, end - at));
      at = end;
    }
    if (words.size() < 5 || at >= line.size()) continue;
    // The separator after the status is consumed; strtok then skips newlines.
    std::size_t rest_at = line.find_first_not_of('\n', at + 1);
    std::string rest = rest_at == std::string::npos ? "" : line.substr(rest_at);
    protocol::OsModule module;
    unsigned long long address = 0;
    if (std::sscanf(words[1].c_str(), "%u", &module.size) != 1 || std::sscanf(words[2].c_str(), "%d", &module.uses) != 1 ||
        rest.empty() || std::sscanf(rest.c_str(), "%llx", &address) != 1) {
      continue;
    }
    module.name = words[0];
    module.dependencies = words[3];
    module.status = words[4];
    module.address = address;
    modules.push_back(std::move(module));
  }
  return modules;
}

std::vector<protocol::OsModule> list_os_modules(const std::string& path) { return parse_proc_modules(read_file(path)); }

bool parse_socket_line(const std::string& line, protocol::SocketFamily family, bool stream, protocol::OsSocket& out) {
  char local[33];
  char remote[33];
  unsigned local_port = 0;
  unsigned remote_port = 0;
  unsigned state = 0;
  int uid = 0;
  if (std::sscanf(line.c_str(), "%*d: %32[0-9A-F]:%X %32[0-9A-F]:%X %X %*X:%*X %*X:%*X %*X %d", local, &local_port,
                  remote, &remote_port, &state, &uid) != 6) {
    return false;
  }
  if (!socket_address(local, local_port, family, stream, out.local_address, out.local_port) ||
      !socket_address(remote, remote_port, family, stream, out.remote_address, out.remote_port)) {
    return false;
  }
  out.state = state;
  out.user = user_name(static_cast<uid_t>(uid));
  out.family = family;
  out.stream = stream;
  return true;
}

std::vector<protocol::OsSocket> list_os_sockets(const std::string& proc_net) {
  struct Source {
    const char* file;
    protocol::SocketFamily family;
    bool stream;
  };
  static const Source sources[] = {{"tcp", protocol::SocketFamily::Inet, true},
                                   {"udp", protocol::SocketFamily::Inet, false},
                                   {"tcp6", protocol::SocketFamily::Inet6, true},
                                   {"udp6", protocol::SocketFamily::Inet6, false}};
  std::vector<protocol::OsSocket> out;
  for (const auto& source : sources) {
    for (const auto& line : lines_of(read_file(proc_net + "/" + source.file))) {
      protocol::OsSocket socket;
      if (parse_socket_line(line, source.family, source.stream, socket)) out.push_back(std::move(socket));
    }
  }
  return out;
}

}  // namespace stub::process
