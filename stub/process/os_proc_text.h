#pragma once
// What the `info os` tables show of a process, a user or a time, read the
// way gdbserver 13.1 reads it (linux-osdata.c), quirks included, so that
// btstub's tables equal gdbserver's.
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace stub::process {

// The numeric entries of `dir` (names starting with a digit) in the order
// the directory lists them, as gdbserver reads them: /proc's pids and fd/'s
// descriptors rising, task/'s threads the leader first, then the kernel's
// thread list order (not sorted: a thread with a lower tid can come later).
std::vector<std::string> numeric_entries(const std::string& dir);
// Every entry's name in `dir`, as far as it can be read: /proc changes
// while it is listed (a process exits, its task directory vanishes), and
// a read that fails midway ends the list instead of throwing.
std::vector<std::string> entry_names(const std::string& dir);

// A process's short command as gdbserver shows it: the first word of the
// name in /proc/PID/stat without its parentheses ("tmux: server" gives
// "tmux"); empty if stat names another pid; the pid itself when stat cannot
// be read.
std::string short_command(long long pid, const std::string& proc_root = "/proc");

// The command line with each NUL made a space (so usually one trailing
// space), "[name]" when it is empty (kernel threads), nullopt when
// /proc/PID/cmdline cannot be read.
std::optional<std::string> command_line(long long pid, const std::string& proc_root = "/proc");

// The core a thread last ran on (field 39 of its stat); -1 if unreadable.
int core_of_thread(long long pid, long long tid, const std::string& proc_root = "/proc");

// User and group names, empty when unknown.
std::string user_name(uid_t uid);
std::string group_name(gid_t gid);

// ctime(3) text, newline included; empty for 0 ("never").
std::string time_text(long long seconds);

}  // namespace stub::process
