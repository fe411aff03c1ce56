#pragma once
// The machine-wide `info os` tables: cpus (/proc/cpuinfo), modules
// (/proc/modules) and sockets (/proc/net/{tcp,udp,tcp6,udp6}), parsed as
// gdbserver 13.1 parses them.
#include <string>
#include <string_view>
#include <vector>

#include "protocol/osdata_xml.h"

namespace stub::process {

// /proc/cpuinfo's text: each "key : value" line, split at colons, the key
// and value each cut at their first tab; the value keeps its leading space
// and its newline. A "processor" key starts the next cpu.
std::vector<protocol::OsCpu> parse_cpuinfo(std::string_view text);
std::vector<protocol::OsCpu> list_os_cpus(const std::string& path = "/proc/cpuinfo");

// /proc/modules' text: "name size uses dependencies status address ...";
// a line missing a field is left out.
std::vector<protocol::OsModule> parse_proc_modules(std::string_view text);
std::vector<protocol::OsModule> list_os_modules(const std::string& path = "/proc/modules");

// One line of /proc/net/tcp (or udp, tcp6, udp6), with numeric addresses and
// ports; false for the header and malformed lines.
bool parse_socket_line(const std::string& line, protocol::SocketFamily family, bool stream, protocol::OsSocket& out);
// TCP then UDP over IPv4, then TCP and UDP over IPv6.
std::vector<protocol::OsSocket> list_os_sockets(const std::string& proc_net = "/proc/net");

}  // namespace stub::process
