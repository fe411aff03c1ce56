#include "stub/tracing/code_writes.h"

#include <unistd.h>

#include "protocol/amd64_registers.h"
#include "stub/process/page_size.h"

#include <optional>
#include <regex>
#include <string>

namespace stub::tracing {

namespace {

// x86-64 system call numbers.
constexpr int64_t kWrite = 1, kMmap = 9, kMprotect = 10, kMunmap = 11, kBrk = 12, kPwrite64 = 18, kWritev = 20,
                  kMremap = 25, kMadvise = 28, kShmat = 30, kShmdt = 67, kRemapFilePages = 216,
                  kMapShadowStack = 453, kMseal = 462, kSendfile = 40, kFtruncate = 77, kSplice = 275, kFallocate = 285,
                  kPwritev = 296, kProcessVmWritev = 311, kCopyFileRange = 326, kPwritev2 = 328, kPkeyMprotect = 329;
constexpr uint64_t kMapFixed = 0x10, kMapFixedNoreplace = 0x100000, kMapAnonymous = 0x20, kProtExec = 0x4,
                   kProtWrite = 0x2, kMapShared = 0x1;

CodeWrite range(uint64_t begin, uint64_t length) {
  return {CodeWrite::Kind::Range, begin, begin + length < begin ? UINT64_MAX : begin + length, -1, std::nullopt};
}

CodeWrite descriptor(uint64_t fd) { return {CodeWrite::Kind::Descriptor, 0, 0, static_cast<int>(fd), std::nullopt}; }

// What descriptor `fd` of `tid` names; nullopt when it cannot be read (the
// descriptor closed by another thread meanwhile).
std::optional<std::string> descriptor_path(pid_t tid, int fd) {
  if (fd < 0) return std::nullopt;
  char target[4096];
  const std::string link = "/proc/" + std::to_string(tid) + "/fd/" + std::to_string(fd);
  const ssize_t length = ::readlink(link.c_str(), target, sizeof target - 1);
  if (length < 0) return std::nullopt;
  return std::string(target, static_cast<std::size_t>(length));
}

}  // namespace

SystemCall system_call_of(const protocol::RegisterFile& regs) {
  using protocol::Amd64Reg;
  SystemCall call;
  call.number = static_cast<int64_t>(regs.get_u64(Amd64Reg::orig_rax));
  call.args = {regs.get_u64(Amd64Reg::rdi), regs.get_u64(Amd64Reg::rsi), regs.get_u64(Amd64Reg::rdx),
               regs.get_u64(Amd64Reg::r10), regs.get_u64(Amd64Reg::r8),  regs.get_u64(Amd64Reg::r9)};
  return call;
}

CodeWrite code_write_of(const SystemCall& call) {
  const auto& a = call.args;
  switch (call.number) {
    case kWrite:
    case kPwrite64:
    case kWritev:
    case kPwritev:
    case kPwritev2:
    case kFtruncate:
    case kFallocate:
    case kSendfile:  // out_fd first
      return descriptor(a[0]);
    case kSplice:         // fd_out third
    case kCopyFileRange:  // fd_out third
      return descriptor(a[2]);
    case kMprotect:
    case kPkeyMprotect:
    case kMunmap:
    case kMadvise:
    case kMremap:
      return range(a[0], a[1]);
    case kMmap:
      // Without MAP_FIXED the kernel picks free addresses: no code there.
      if ((a[3] & (kMapFixed | kMapFixedNoreplace)) != 0) return range(a[0], a[1]);
      return {};
    case kProcessVmWritev:
    case kShmdt:
      return {CodeWrite::Kind::Anything, 0, 0, -1, std::nullopt};
    default:
      return {};
  }
}

CodeWrite code_write_in(pid_t tid, const SystemCall& call) {
  CodeWrite write = code_write_of(call);
  if (write.kind == CodeWrite::Kind::Descriptor) write.file = descriptor_path(tid, write.fd);
  return write;
}

bool writes_process_memory(const CodeWrite& write) {
  if (write.kind != CodeWrite::Kind::Descriptor || write.fd < 0) return false;  // fd < 0: failed with EBADF
  // Any process's memory file: this program's under whatever pid or tid
  // it was opened, rarely another's (then the tracer's work is wasted only).
  static const std::regex memory_file(R"(/proc/\d+(/task/\d+)?/mem)");
  return !write.file || std::regex_match(*write.file, memory_file);
}

bool changes_code(const CodeWrite& write, const TranslatableCode& code) {
  switch (write.kind) {
    case CodeWrite::Kind::None: return false;
    case CodeWrite::Kind::Anything: return true;
    case CodeWrite::Kind::Range: return code.overlaps(write.begin, write.end);
    case CodeWrite::Kind::Descriptor: break;
  }
  if (write.fd < 0) return false;  // the call failed with EBADF
  return writes_process_memory(write) || code.maps_file(*write.file);
}

bool may_map_changeable_code(const SystemCall& call) {
  const auto& a = call.args;
  switch (call.number) {
    case kMmap: {
      // Executable memory; or a file mapped shared and writable, whose
      // other, executable mappings a store then changes.
      // (MAP_SHARED_VALIDATE holds MAP_SHARED's bit; MAP_PRIVATE is 2.)
      return (a[2] & kProtExec) != 0 || ((a[3] & kMapShared) != 0 && (a[2] & kProtWrite) != 0);
    }
    case kMprotect:
    case kPkeyMprotect: return (a[2] & kProtExec) != 0;
    case kMremap:
    case kShmat:
    case kRemapFilePages: return true;
    default: return false;
  }
}

bool changes_memory_map(const SystemCall& call) {
  // madvise is not here: malloc calls it often, and where it drops pages of
  // translated code code_write_of names their range.
  switch (call.number) {
    case kMmap:
    case kMprotect:
    case kMunmap:
    case kBrk:
    case kMremap:
    case kShmat:
    case kShmdt:
    case kRemapFilePages:
    case kPkeyMprotect:
    case kMapShadowStack:
    case kMseal:
      return true;
    default:
      return false;
  }
}

std::vector<std::pair<uint64_t, uint64_t>> mapping_changes_of(const SystemCall& call, uint64_t result,
                                                              const CodeWrite& write) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const auto add = [&](uint64_t begin, uint64_t length) {
    const uint64_t first = begin & ~(kPageSize - 1);
    const uint64_t last = begin + length < begin ? UINT64_MAX : begin + length;
    const uint64_t end = last > UINT64_MAX - (kPageSize - 1) ? UINT64_MAX : (last + kPageSize - 1) & ~(kPageSize - 1);
    if (first < end) out.emplace_back(first, end);
  };
  // -4095..-1: the call failed (nothing mapped at the result, nothing written).
  const bool succeeded = result < static_cast<uint64_t>(-4095);
  const auto& a = call.args;
  switch (call.number) {
    case kMmap:
      // New anonymous memory the program cannot run is never read from the
      // present for the past (nor is what an unmapped range held): left out,
      // as munmap is, so that malloc's calls do not fill the list.
      if ((a[3] & kMapAnonymous) != 0 && (a[2] & kProtExec) == 0) break;
      if ((a[3] & (kMapFixed | kMapFixedNoreplace)) != 0) {
        add(a[0], a[1]);
      } else if (succeeded) {
        add(result, a[1]);
      }
      break;
    case kMprotect:
    case kPkeyMprotect:
    case kMadvise:
    case kRemapFilePages:
      add(a[0], a[1]);
      break;
    case kMremap:
      add(a[0], a[1]);
      if (succeeded) add(result, a[2]);
      break;
    case kProcessVmWritev:
      if (succeeded) out.emplace_back(0, UINT64_MAX);
      break;
    default:
      // A write to a descriptor that cannot be named counts only if it wrote.
      if (succeeded && writes_process_memory(write)) out.emplace_back(0, UINT64_MAX);
      break;
  }
  return out;
}

}  // namespace stub::tracing
