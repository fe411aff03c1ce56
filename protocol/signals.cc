// Host (x86-64 Linux) <-> gdb signal numbers. gdb's numbering is part of the
// remote protocol and differs from Linux for about half of the classic
// signals, and completely for the realtime range.
#include <array>
#include <csignal>
#include <utility>

#include "protocol/replies.h"

namespace protocol {
namespace {

constexpr int kGdbSignalUnknown = 143;

// {host, gdb} for the non-realtime signals gdb knows. A host signal maps
// to its first entry: SIGPOLL is SIGIO on Linux, reported as gdb's IO
// (23), while gdb's POLL (33, which `signal SIGPOLL` sends) is SIGIO too,
// as gdbserver's gdb_signal_to_host has it.
constexpr std::array<std::pair<int, int>, 31> kClassic = {{
    {SIGHUP, 1},   {SIGINT, 2},     {SIGQUIT, 3},   {SIGILL, 4},    {SIGTRAP, 5},
    {SIGABRT, 6},  {SIGFPE, 8},     {SIGKILL, 9},   {SIGBUS, 10},   {SIGSEGV, 11},
    {SIGSYS, 12},  {SIGPIPE, 13},   {SIGALRM, 14},  {SIGTERM, 15},  {SIGURG, 16},
    {SIGSTOP, 17}, {SIGTSTP, 18},   {SIGCONT, 19},  {SIGCHLD, 20},  {SIGTTIN, 21},
    {SIGTTOU, 22}, {SIGIO, 23},     {SIGXCPU, 24},  {SIGXFSZ, 25},  {SIGVTALRM, 26},
    {SIGPROF, 27}, {SIGWINCH, 28},  {SIGUSR1, 30},  {SIGUSR2, 31},  {SIGPWR, 32},
    {SIGPOLL, 33},
}};

// Linux realtime signals are 32..64 in the kernel's numbering (glibc hides
// 32 and 33 for its own use, but they still exist).
constexpr int kHostRealtimeFirst = 32;
constexpr int kHostRealtimeLast = 64;
constexpr int kGdbRealtime32 = 77;
constexpr int kGdbRealtime33 = 45;  // 33..63 are contiguous from here
constexpr int kGdbRealtime64 = 78;

}  // namespace

int host_signal_to_gdb(int host_signal) {
  if (host_signal == 0) return 0;
  for (auto [host, gdb] : kClassic)
    if (host == host_signal) return gdb;
  if (host_signal == kHostRealtimeFirst) return kGdbRealtime32;
  if (host_signal > kHostRealtimeFirst && host_signal < kHostRealtimeLast)
    return kGdbRealtime33 + (host_signal - 33);
  if (host_signal == kHostRealtimeLast) return kGdbRealtime64;
  return kGdbSignalUnknown;
}

int gdb_signal_to_host(int gdb_signal) {
  if (gdb_signal == 0) return 0;
  for (auto [host, gdb] : kClassic)
    if (gdb == gdb_signal) return host;
  if (gdb_signal == kGdbRealtime32) return kHostRealtimeFirst;
  if (gdb_signal == kGdbRealtime64) return kHostRealtimeLast;
  if (gdb_signal >= kGdbRealtime33 && gdb_signal <= kGdbRealtime33 + (63 - 33))
    return 33 + (gdb_signal - kGdbRealtime33);
  return 0;
}

}  // namespace protocol
