// Registers and memory of the stopped program.
#include "stub/session/handlers.h"
#include "protocol/amd64_registers.h"
#include "stub/tracing/trace_backend.h"

namespace stub::session {

namespace {

Reply running_error() {
  return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "The program is running"));
}

}  // namespace

Reply handle(Session& s, const ReadAllRegisters&) {
  if (!s.has_process()) return no_process_reply();
  if (s.thread_running(s.current_thread())) return running_error();
  auto regs = s.thread_registers(s.current_thread());
  if (!regs) return error(regs.error());
  return Reply::now(reply_registers(*regs, s.register_layout()));
}

Reply handle(Session& s, const WriteAllRegisters& req) {
  if (!s.has_process()) return no_process_reply();
  if (s.thread_running(s.current_thread())) return running_error();
  if (auto ok = check_writable(s, s.current_thread()); !ok) return error(ok.error());
  auto regs = s.process()->read_registers(s.current_thread());
  if (!regs) return error(regs.error());
  const protocol::RegisterFile before = *regs;
  const protocol::RegisterLayout layout = s.register_layout();
  if (req.bytes.size() > layout.buffer_size()) {
    return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "Register buffer too long"));
  }
  // A short G writes the leading registers only, as gdbserver accepts.
  std::size_t at = 0;
  for (unsigned wire = 0; wire < layout.count() && at < req.bytes.size(); ++wire) {
    const unsigned n = layout.index(wire);
    const std::size_t take = std::min(amd64_register_size(n), req.bytes.size() - at);
    std::copy_n(req.bytes.begin() + static_cast<std::ptrdiff_t>(at), take, regs->bytes(n));
    at += take;
  }
  if (auto ok = write_client_registers(s, s.current_thread(), before, *regs); !ok) return error(ok.error());
  return Reply::now(reply_ok());
}

Reply handle(Session& s, const ReadRegister& req) {
  if (!s.has_process()) return no_process_reply();
  const protocol::RegisterLayout layout = s.register_layout();
  if (req.regnum >= layout.count()) {
    return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "Invalid register number"));
  }
  auto regs = s.thread_registers(s.current_thread());
  if (!regs) return error(regs.error());
  return Reply::now(reply_register(*regs, layout.index(req.regnum)));
}

Reply handle(Session& s, const WriteRegister& req) {
  if (!s.has_process()) return no_process_reply();
  const protocol::RegisterLayout layout = s.register_layout();
  if (req.regnum >= layout.count()) {
    return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "Invalid register number"));
  }
  const unsigned n = layout.index(req.regnum);
  if (req.bytes.size() != amd64_register_size(n)) {
    return error(btstub::make_error(btstub::ErrorCode::InvalidArgument, "Register value has the wrong size"));
  }
  if (auto ok = check_writable(s, s.current_thread()); !ok) return error(ok.error());
  auto regs = s.process()->read_registers(s.current_thread());
  if (!regs) return error(regs.error());
  const protocol::RegisterFile before = *regs;
  std::copy(req.bytes.begin(), req.bytes.end(), regs->bytes(n));
  if (auto ok = write_client_registers(s, s.current_thread(), before, *regs); !ok) return error(ok.error());
  return Reply::now(reply_ok());
}

Expected<void> write_client_registers(Session& s, pid_t tid, const protocol::RegisterFile& before,
                                      const protocol::RegisterFile& regs) {
  if (auto ok = s.process()->write_registers(tid, regs); !ok) return ok;
  if (s.trace_backend != nullptr) {
    using protocol::Amd64Reg;
    const decoder::StackSnapshot stack{before.get_u64(Amd64Reg::rsp), before.get_u64(Amd64Reg::rbp)};
    s.trace_backend->client_wrote_registers(tid, before.get_u64(Amd64Reg::rip), stack);
  }
  return {};
}

Expected<std::vector<uint8_t>> read_client_memory(Session& s, uint64_t addr, uint64_t length) {
  // Answer at most what fits in one reply; the client asks again for the rest.
  length = std::min<uint64_t>(length, RspLink::kMaxPayload / 2 - 1);
  if (length == 0) return std::vector<uint8_t>{};
  return s.thread_memory(s.current_thread(), addr, length);
}

Reply handle(Session& s, const ReadMemory& req) {
  if (!s.has_process()) return no_process_reply();
  if (req.length == 0) return Reply::now(reply_memory({}));
  auto bytes = read_client_memory(s, req.addr, req.length);
  if (!bytes) return Reply::now(reply_error_code(kMemoryErrorCode));
  return Reply::now(reply_memory(*bytes));
}

Reply handle(Session& s, const WriteMemory& req) {
  if (!s.has_process()) return no_process_reply();
  if (req.bytes.empty()) return Reply::now(reply_ok());  // gdb's X probe
  // Not a numeric code: gdb shows this text, and the past stays unchanged.
  if (auto ok = check_writable(s, s.current_thread()); !ok) return error(ok.error());
  if (auto ok = s.process()->write_memory(req.addr, req.bytes); !ok) {
    return Reply::now(reply_error_code(kMemoryErrorCode));
  }
  if (s.trace_backend != nullptr) {
    const uint64_t end = req.addr + req.bytes.size();
    s.trace_backend->client_wrote(req.addr, end < req.addr ? UINT64_MAX : end);
  }
  return Reply::now(reply_ok());
}

}  // namespace stub::session
