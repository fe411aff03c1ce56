#pragma once
// Reading a whole file (most often under /proc) without exceptions. A
// process or thread can exit while its files are read; the read then fails
// with ESRCH, and libstdc++'s istreambuf_iterator turns that into a thrown
// std::ios_base::failure whatever the stream's exception mask (it killed
// btstub during `info os procgroups` while processes came and went).
#include <optional>
#include <string>

#include "protocol/expected.h"

namespace stub::process {

// The file's bytes, or why not: "Cannot open PATH: REASON" or "Cannot read
// PATH: REASON" (a failed read is unknown, never a partial text).
btstub::Expected<std::string> read_whole_file(const std::string& path);

// The same where the reason does not matter: nullopt when the file cannot
// be opened or read (the process is gone).
std::optional<std::string> read_proc_file(const std::string& path);

}  // namespace stub::process
