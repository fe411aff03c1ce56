#pragma once
// Every reply's wire syntax lives here; handlers never format packets by hand.
// All functions return the payload (unframed); RspLink::send frames it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/expected.h"
#include "protocol/register_file.h"
#include "protocol/thread_id.h"

namespace protocol {

// ---- encoding helpers ----
std::string hex_encode(const uint8_t* data, std::size_t len);
std::string hex_encode(std::string_view bytes);
// Minimal lower-case hex ("0" for zero), as gdbserver prints addresses and pids.
std::string hex_number(uint64_t value);
// nullopt on odd length or a non-hex digit.
std::optional<std::vector<uint8_t>> hex_decode(std::string_view hex);
// Escapes '#', '$', '}' and '*' as '}' followed by byte ^ 0x20.
std::string escape_binary(std::string_view bytes);
// escape_binary of the longest prefix of `bytes` whose escaped form fits in
// `budget` bytes; `taken` is that prefix's length.
std::string escape_binary_within(std::string_view bytes, std::size_t budget, std::size_t& taken);
// Reverses escape_binary; nullopt on a trailing lone '}'.
std::optional<std::string> unescape_binary(std::string_view bytes);

// ---- generic ----
std::string reply_ok();                       // "OK"
std::string reply_empty();                    // "" (unsupported)
std::string reply_error(const btstub::Error&);  // "E." + message (never empty message)
std::string reply_error_code(uint8_t code);   // "Enn" for packets whose clients want a number

// ---- queries ----
// `features` are the stub's own, e.g. "PacketSize=4000", "swbreak+".
std::string reply_supported(const std::vector<std::string>& features);
std::string reply_current_thread(const ThreadId& id, bool multiprocess);  // "QC" + id
// qfThreadInfo/qsThreadInfo: "m" + comma-separated ids, or "l" when `ids` is empty.
std::string reply_thread_list(const std::vector<ThreadId>& ids, bool multiprocess);
std::string reply_attached(bool attached);    // "1" / "0"
// qRcmd: console output as "O" + hex(text), in as many packets as
// PacketSize needs (whole lines kept together where they fit); none for an
// empty text. The final reply is reply_ok(), or reply_error_code(1) for a
// command that failed (gdbserver's E01; gdb: "Protocol error with Rcmd"):
// gdb decodes any other final reply, an E.text too, as hex output.
std::vector<std::string> reply_console_output(std::string_view text);
// qXfer read of `object` (whole document) at offset/length: "m"+chunk when more
// follows, "l"+chunk for the last part; chunk is binary-escaped.
std::string reply_xfer_chunk(std::string_view object, uint64_t offset, uint64_t length);
// vCont?: the actions we support, e.g. "vCont;c;C;s;S;t".
std::string reply_vcont_supported(std::string_view actions);
// qSymbol: the stub asks gdb for one symbol's address: "qSymbol:" + hex(name).
std::string reply_symbol_question(std::string_view name);
// qGetTLSAddr: the address in minimal hex, as gdbserver sends it.
std::string reply_tls_address(uint64_t address);

// ---- registers / memory ----
// g: the registers of `layout` in its order, hex, "xx" for unavailable.
std::string reply_registers(const RegisterFile& regs, const RegisterLayout& layout);
// p: register `regnum` of the table (the caller maps the wire number).
std::string reply_register(const RegisterFile& regs, unsigned regnum);
std::string reply_memory(const std::vector<uint8_t>& bytes);           // m: hex

// ---- stop replies ----
enum class StopReason { None, SoftwareBreakpoint, HardwareBreakpoint, Watch, ReadWatch, AccessWatch,
                        ReplayBegin, ReplayEnd, Fork, Vfork, VforkDone, Exec, Create,
                        SyscallEntry, SyscallReturn };
struct StopReply {
  enum class Kind { Signal, Exited, Terminated, ThreadExited, NoResumed };
  Kind kind = Kind::Signal;
  int signal = 0;        // gdb signal number (Signal, Terminated)
  int exit_code = 0;     // Exited, ThreadExited
  std::optional<ThreadId> thread;
  std::optional<int64_t> process;  // pid for W/X ";process:pid"
  StopReason reason = StopReason::None;
  uint64_t reason_addr = 0;        // data address for watch kinds; the system call's number
  std::string reason_text;         // child id for fork, path hex for exec
  // Preferred over reason_text when set: the (v)fork child, formatted like
  // every other thread id of this reply, and the exec'd program's path (raw;
  // reply_stop hex-encodes it).
  std::optional<ThreadId> child;
  std::optional<std::string> exec_path;
  // Registers to expedite in a T reply (regnum -> value): pc, sp, fp.
  std::vector<std::pair<unsigned, std::vector<uint8_t>>> expedited;
};
std::string reply_stop(const StopReply& stop, bool multiprocess);

// ---- XML documents (qXfer objects built from data, not from the OS) ----
// Escapes &, <, >, " and ' for element text and attribute values.
std::string xml_escape(std::string_view text);

// qXfer:threads:read. `name` is omitted when empty, `core` when negative.
struct ThreadInfo {
  ThreadId id;
  std::string name;
  int core = -1;
};
std::string threads_xml(const std::vector<ThreadInfo>& threads, bool multiprocess);

// ---- LLDB (as lldb-server answers; docs/protocol.md "LLDB") ----
// "key:value;" for each pair in order: qHostInfo, qProcessInfo,
// qMemoryRegionInfo, qWatchpointSupportInfo.
std::string reply_key_values(const std::vector<std::pair<std::string, std::string>>& pairs);
// An "E.text" error as LLDB reads it once QEnableErrorStrings is on:
// "E01;" + hex(text). Any other payload comes back unchanged.
std::string lldb_error_strings(std::string_view payload);
// x: the bytes binary-escaped; "OK" when there are none (lldb probes the
// packet with x0,0 and takes an empty reply for "unsupported").
std::string reply_binary_memory(const std::vector<uint8_t>& bytes);
// jThreadsInfo: a JSON array, one object per thread, binary-escaped.
struct ThreadStopSummary {
  int64_t tid = 0;
  std::string name;                // omitted when empty
  std::optional<int> signal;       // gdb number; none for a thread stopped only because others did
  std::string reason;              // "breakpoint", "watchpoint", "trace", "signal", ...; omitted when empty
  std::vector<std::pair<unsigned, std::vector<uint8_t>>> registers;  // expedited: regnum -> bytes
};
std::string reply_threads_info(const std::vector<ThreadStopSummary>& threads);

// ---- vFile ----
// "F" + hex result, or "F-1," + hex errno on failure, with ";" + escaped data attached.
std::string reply_file_result(int64_t result, int error_number = 0);
// `data` (the call's result: its length) escaped after "F<length>;", or,
// where escaping would make the reply longer than the packet size btstub
// advertises, as much of it as fits and that length (a short read, as
// gdbserver answers): nothing else reads more than a packet holds.
// A negative `result` is a failure with no data.
std::string reply_file_data(int64_t result, std::string_view data);

// Signal number translation (host <-> gdb). Equal for common signals on
// x86-64 Linux but not in general (e.g. realtime signals).
int host_signal_to_gdb(int host_signal);
int gdb_signal_to_host(int gdb_signal);

}  // namespace protocol

namespace protocol {
// gdb's File-I/O protocol values (vFile): big-endian struct stat, its own
// errno numbers and open flags.
struct FileioStat {
  uint32_t dev = 0, ino = 0, mode = 0, nlink = 0, uid = 0, gid = 0, rdev = 0;
  uint64_t size = 0, blksize = 0, blocks = 0;
  uint32_t atime = 0, mtime = 0, ctime = 0;
};
std::string encode_fileio_stat(const FileioStat& st);  // 64 raw bytes (escape before sending)
int host_errno_to_fileio(int host_errno);
int fileio_open_flags_to_host(int fileio_flags);
}  // namespace protocol
