#pragma once
// Reading a whole file under /proc without exceptions. A process or thread
// can exit while its files are read; the read then fails with ESRCH, and
// libstdc++'s istreambuf_iterator turns that into a thrown
// std::ios_base::failure whatever the stream's exception mask (it killed
// btstub during `info os procgroups` while processes came and went).
#include <optional>
#include <string>

namespace stub::process {

// The file's bytes; nullopt when it cannot be opened or a read fails (the
// process is gone: unknown, not a partial text).
std::optional<std::string> read_proc_file(const std::string& path);

}  // namespace stub::process
