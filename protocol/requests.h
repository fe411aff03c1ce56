#pragma once
// Every request btstub understands, parsed into a typed value before anything
// acts on it. parse_request() never throws: a malformed known packet is an
// Error (the caller answers `E.<message>`), an unknown one is UnknownPacket
// (the caller answers with the empty packet, as the protocol requires).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/expected.h"
#include "protocol/thread_id.h"

namespace protocol {

// ---- session / queries ----
struct QSupported { std::vector<std::string> client_features; };  // "swbreak+", "xmlRegisters=i386", ...
struct QStartNoAckMode {};
struct QueryAttached { std::optional<int64_t> pid; };   // qAttached[:pid]
struct QueryCurrentThread {};                           // qC
struct QueryThreadInfoFirst {};                         // qfThreadInfo
struct QueryThreadInfoNext {};                          // qsThreadInfo
struct QueryStopReason {};                              // ?
struct XferRead {                                       // qXfer:OBJECT:read:ANNEX:OFF,LEN
  std::string object;
  std::string annex;
  uint64_t offset = 0;
  uint64_t length = 0;
};
// qXfer:OBJECT:write:ANNEX:OFFSET:DATA (DATA binary, escaped as in X).
struct XferWrite {
  std::string object;
  std::string annex;
  uint64_t offset = 0;
  std::string data;
};
struct MonitorCommand { std::string command; };         // qRcmd,<hex> decoded
struct SetThread { char op = 'g'; ThreadId thread; };   // Hg / Hc
struct ThreadAlive { ThreadId thread; };                // T<thread>
struct MustReplyEmpty {};                               // vMustReplyEmpty
struct SetPassSignals { std::vector<int> signals; };    // QPassSignals:a;b
struct SetProgramSignals { std::vector<int> signals; }; // QProgramSignals:a;b
// QCatchSyscalls:1[;NR]... (gdb's `catch syscall`): stop at the entry and
// return of the system calls listed (hex numbers), of every one when none
// is; QCatchSyscalls:0: stop at none.
struct SetCatchSyscalls {
  bool enable = false;
  std::vector<int> syscalls;
};
struct QueryVContSupported {};                          // vCont?

// ---- registers / memory ----
struct ReadAllRegisters {};                                  // g
struct WriteAllRegisters { std::vector<uint8_t> bytes; };    // G<hex>
struct ReadRegister { unsigned regnum = 0; };                // p<n>
struct WriteRegister { unsigned regnum = 0; std::vector<uint8_t> bytes; };  // P<n>=<hex>
struct ReadMemory { uint64_t addr = 0; uint64_t length = 0; };              // m
struct WriteMemory { uint64_t addr = 0; std::vector<uint8_t> bytes; };      // M (hex) and X (binary)

// ---- breakpoints ----
enum class BreakpointType { Software = 0, Hardware = 1, WriteWatch = 2, ReadWatch = 3, AccessWatch = 4 };
struct InsertBreakpoint { BreakpointType type; uint64_t addr = 0; uint64_t kind = 0; };  // Z
struct RemoveBreakpoint { BreakpointType type; uint64_t addr = 0; uint64_t kind = 0; };  // z

// ---- execution ----
enum class ResumeAction { Continue, Step, Stop };
enum class Direction { Forward, Reverse };
struct ThreadAction {
  ResumeAction action = ResumeAction::Continue;
  int signal = 0;                 // 0: none (gdb signal number)
  std::optional<ThreadId> thread; // none: applies to all threads without an action
};
// c, C, s, S, vCont;..., bs, bc all parse to Resume: forward and reverse share
// one path. Legacy c/s with an address set `resume_addr`.
struct Resume {
  std::vector<ThreadAction> actions;
  Direction direction = Direction::Forward;
  std::optional<uint64_t> resume_addr;
};
struct Kill { std::optional<int64_t> pid; };    // k, vKill;pid
struct Detach { std::optional<int64_t> pid; };  // D, D;pid

// ---- host I/O (vFile) ----
struct FileOpen { std::string path; int flags = 0; int mode = 0; };   // vFile:open:hexpath,flags,mode
struct FileClose { int fd = -1; };                                     // vFile:close:fd
struct FilePread { int fd = -1; uint64_t count = 0; uint64_t offset = 0; };  // vFile:pread:fd,count,offset
struct FilePwrite { int fd = -1; uint64_t offset = 0; std::string data; };   // vFile:pwrite:fd,offset,escaped data
struct FileFstat { int fd = -1; };                                     // vFile:fstat:fd
struct FileSetFs { int64_t pid = 0; };                                 // vFile:setfs:pid
struct FileReadlink { std::string path; };                             // vFile:readlink:hexpath
struct FileUnlink { std::string path; };                               // vFile:unlink:hexpath

// ---- extended-remote / multi-threading ----
// vRun;HEXARG0;HEXARG1...: argv[0] empty means "the program given on the
// command line"; later arguments may be empty strings too.
struct RunProgram { std::vector<std::string> argv; };
struct AttachProcess { int64_t pid = 0; };               // vAttach;PID
struct Restart {};                                       // R XX (argument ignored)
struct ExtendedMode {};                                  // !
struct SetThreadEvents { bool enable = false; };         // QThreadEvents:0|1
// gdb's run settings for the programs vRun starts, sent before each vRun
// once offered in qSupported (gdbserver's QEnvironment*, QSetWorkingDir,
// QDisableRandomization).
struct EnvironmentSet { std::string name, value; };      // QEnvironmentHexEncoded:HEX(NAME=VALUE)
struct EnvironmentUnset { std::string name; };           // QEnvironmentUnset:HEX(NAME)
struct EnvironmentReset {};                              // QEnvironmentReset
struct SetWorkingDir { std::string dir; };               // QSetWorkingDir:[HEX(DIR)]; empty: the server's own
struct SetDisableRandomization { bool disable = true; }; // QDisableRandomization:0|1

// ---- non-stop mode (gdb's `set non-stop on`) ----
struct SetNonStop { bool enable = false; };              // QNonStop:0|1
struct StopNotificationAck {};                           // vStopped
struct InterruptRequest {};                              // vCtrlC

// ---- branch tracing (gdb's `record btrace`) ----
enum class BtraceOp { Bts, Pt, Off };
enum class BtraceFormat { Bts, Pt };
struct BtraceControl { BtraceOp op = BtraceOp::Bts; };      // Qbtrace:bts|pt|off
struct BtraceConfigure {                                    // Qbtrace-conf:bts:size=0xN, ...:pt:size=0xN
  BtraceFormat format = BtraceFormat::Bts;
  uint64_t size = 0;  // bytes; fits 32 bits (gdb's limit)
};

// ---- thread library (libthread_db) ----
// qSymbol:: : gdb is ready to answer symbol questions (after connecting and
// after each library load); the reply asks one (qSymbol:HEXNAME) or says OK.
struct SymbolsReady {};
// qSymbol:VALUE:HEXNAME or qSymbol::HEXNAME: gdb's answer to one question;
// no address when gdb does not know the symbol.
struct SymbolAnswer {
  std::string name;
  std::optional<uint64_t> address;
};
// qGetTLSAddr:THREAD,OFFSET,LM: the address of the variable at OFFSET in the
// thread's block of the module whose link_map is at LM (0: the program of a
// static executable, module 1).
struct GetTlsAddress {
  ThreadId thread;
  uint64_t offset = 0;
  uint64_t link_map = 0;
};

// ---- LLDB's extensions (lldb-server's packets; gdb sends none of them) ----
struct HostInfoQuery {};                                  // qHostInfo
struct ProcessInfoQuery {};                               // qProcessInfo
struct ThreadStopInfoQuery { ThreadId thread; };          // qThreadStopInfo<thread>
struct ThreadsInfoQuery {};                               // jThreadsInfo
struct MemoryRegionQuery { uint64_t addr = 0; };          // qMemoryRegionInfo:<addr>
struct WatchpointCountQuery {};                           // qWatchpointSupportInfo[:]
struct EnableErrorStrings {};                             // QEnableErrorStrings
struct SharedLibraryInfoQuery {};                         // qShlibInfoAddr
struct ReadMemoryBinary { uint64_t addr = 0; uint64_t length = 0; };  // x<addr>,<length>
// _M<size>,<permissions>: memory for LLDB's expressions ("rw", "rx", ...).
struct AllocateMemory {
  uint64_t size = 0;
  bool read = false, write = false, execute = false;
};
struct DeallocateMemory { uint64_t addr = 0; };           // _m<addr>

// A packet we do not implement: the reply is the empty packet.
struct UnknownPacket { std::string name; };

using Request = std::variant<
    QSupported, QStartNoAckMode, QueryAttached, QueryCurrentThread,
    QueryThreadInfoFirst, QueryThreadInfoNext, QueryStopReason, XferRead, XferWrite,
    MonitorCommand, SetThread, ThreadAlive, MustReplyEmpty, SetPassSignals,
    SetProgramSignals, SetCatchSyscalls, QueryVContSupported,
    ReadAllRegisters, WriteAllRegisters, ReadRegister, WriteRegister,
    ReadMemory, WriteMemory,
    InsertBreakpoint, RemoveBreakpoint,
    Resume, Kill, Detach,
    FileOpen, FileClose, FilePread, FilePwrite, FileFstat, FileSetFs, FileReadlink, FileUnlink,
    RunProgram, AttachProcess, Restart, ExtendedMode, SetThreadEvents,
    EnvironmentSet, EnvironmentUnset, EnvironmentReset, SetWorkingDir, SetDisableRandomization,
    SetNonStop, StopNotificationAck, InterruptRequest,
    BtraceControl, BtraceConfigure,
    SymbolsReady, SymbolAnswer, GetTlsAddress,
    HostInfoQuery, ProcessInfoQuery, ThreadStopInfoQuery, ThreadsInfoQuery, MemoryRegionQuery,
    WatchpointCountQuery, EnableErrorStrings, SharedLibraryInfoQuery, ReadMemoryBinary,
    AllocateMemory, DeallocateMemory,
    UnknownPacket>;

// Parses one packet payload (as returned by RspLink, still escaped).
btstub::Expected<Request> parse_request(std::string_view payload);

// Short name of a packet for logs and --disable-packet matching: "qXfer",
// "vCont", "m", "Z0", ...
std::string packet_name(std::string_view payload);

}  // namespace protocol
