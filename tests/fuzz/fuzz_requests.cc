// Request parsing (protocol::parse_request) of arbitrary packet payloads.
//
// Invariants:
//  - parse_request never throws or crashes; an error has a message, and its
//    E. reply fits PacketSize.
//  - packet_name() is a prefix of the payload.
//  - For every request with a canonical wire form, writing the parsed value
//    back out and parsing that again gives the same value (checked by
//    comparing canonical forms: canon(parse(canon(r))) == canon(r)).
//    vFile:pwrite's binary data and vFile:unlink's hex path included, and
//    LLDB's qThreadStopInfo, qMemoryRegionInfo, x, _M and _m.
//  - qRcmd: what gdb is shown (the decoded command as console text, or for a
//    qRcmd that does not parse its error message, which the session sends
//    as console text before E01) goes out as O packets within PacketSize
//    that decode back to exactly that text; never as an E.text, which gdb
//    would decode as hex.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "fuzz_input.h"
#include "protocol/replies.h"
#include "protocol/requests.h"
#include "protocol/rsp_link.h"

namespace {

using namespace protocol;

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string hex_bytes(const std::vector<uint8_t>& b) { return hex_encode(b.data(), b.size()); }

std::string thread(const ThreadId& id) { return format_thread_id(id, true); }

std::optional<std::string> canon_resume(const Resume& r) {
  if (r.direction == Direction::Reverse) {
    if (r.actions.size() != 1) return std::nullopt;
    return r.actions[0].action == ResumeAction::Step ? "bs" : "bc";
  }
  if (r.resume_addr) return std::nullopt;  // legacy c/s ADDR has no vCont form
  std::string out = "vCont";
  for (const auto& a : r.actions) {
    char verb = a.action == ResumeAction::Step ? 's' : a.action == ResumeAction::Stop ? 't' : 'c';
    out += ';';
    if (a.signal != 0) {
      if (verb == 't') return std::nullopt;
      out += static_cast<char>(verb - 'a' + 'A');
      out += hex(static_cast<uint64_t>(a.signal));
    } else {
      out += verb;
    }
    if (a.thread) out += ":" + thread(*a.thread);
  }
  return out;
}

// The wire form of a request (nullopt where there is no single one).
std::optional<std::string> canon(const Request& r) {
  if (auto* m = std::get_if<ReadMemory>(&r)) return "m" + hex(m->addr) + "," + hex(m->length);
  if (auto* w = std::get_if<WriteMemory>(&r))
    return "M" + hex(w->addr) + "," + hex(w->bytes.size()) + ":" + hex_bytes(w->bytes);
  if (auto* p = std::get_if<ReadRegister>(&r)) return "p" + hex(p->regnum);
  if (auto* p = std::get_if<WriteRegister>(&r)) return "P" + hex(p->regnum) + "=" + hex_bytes(p->bytes);
  if (auto* g = std::get_if<WriteAllRegisters>(&r)) return "G" + hex_bytes(g->bytes);
  if (auto* z = std::get_if<InsertBreakpoint>(&r))
    return "Z" + hex(static_cast<uint64_t>(z->type)) + "," + hex(z->addr) + "," + hex(z->kind);
  if (auto* z = std::get_if<RemoveBreakpoint>(&r))
    return "z" + hex(static_cast<uint64_t>(z->type)) + "," + hex(z->addr) + "," + hex(z->kind);
  if (auto* x = std::get_if<XferRead>(&r))
    return "qXfer:" + x->object + ":read:" + x->annex + ":" + hex(x->offset) + "," + hex(x->length);
  if (auto* m = std::get_if<MonitorCommand>(&r)) return "qRcmd," + hex_encode(m->command);
  if (auto* h = std::get_if<SetThread>(&r)) return std::string("H") + h->op + thread(h->thread);
  if (auto* t = std::get_if<ThreadAlive>(&r)) return "T" + thread(t->thread);
  if (auto* res = std::get_if<Resume>(&r)) return canon_resume(*res);
  if (auto* q = std::get_if<QSupported>(&r)) {
    std::string out = "qSupported";
    for (std::size_t i = 0; i < q->client_features.size(); ++i)
      out += (i == 0 ? ":" : ";") + q->client_features[i];
    return out;
  }
  if (auto* f = std::get_if<FilePread>(&r))
    return "vFile:pread:" + hex(static_cast<uint64_t>(f->fd)) + "," + hex(f->count) + "," + hex(f->offset);
  if (auto* f = std::get_if<FilePwrite>(&r))
    return "vFile:pwrite:" + hex(static_cast<uint64_t>(f->fd)) + "," + hex(f->offset) + "," + escape_binary(f->data);
  if (auto* f = std::get_if<FileUnlink>(&r)) return "vFile:unlink:" + hex_encode(f->path);
  if (auto* f = std::get_if<FileOpen>(&r))
    return "vFile:open:" + hex_encode(f->path) + "," + hex(static_cast<uint32_t>(f->flags)) + "," +
           hex(static_cast<uint32_t>(f->mode));
  // LLDB's packets.
  if (auto* q = std::get_if<ThreadStopInfoQuery>(&r)) return "qThreadStopInfo" + thread(q->thread);
  if (auto* q = std::get_if<MemoryRegionQuery>(&r)) return "qMemoryRegionInfo:" + hex(q->addr);
  if (auto* x = std::get_if<ReadMemoryBinary>(&r)) return "x" + hex(x->addr) + "," + hex(x->length);
  if (auto* m = std::get_if<AllocateMemory>(&r)) {
    return "_M" + hex(m->size) + "," + (m->read ? "r" : "") + (m->write ? "w" : "") + (m->execute ? "x" : "");
  }
  if (auto* m = std::get_if<DeallocateMemory>(&r)) return "_m" + hex(m->addr);
  return std::nullopt;
}

// The console packets of `text` carry exactly it, each a well-formed O
// packet (never "OK", which would end the command) within PacketSize.
void check_console(std::string_view text, std::string_view payload) {
  std::string decoded;
  for (const std::string& packet : reply_console_output(text)) {
    fuzz::check(packet.size() <= RspLink::kMaxPayload, "console packet over PacketSize", payload);
    fuzz::check(packet.size() > 1 && packet.front() == 'O' && packet != "OK", "not an O packet", payload);
    auto bytes = hex_decode(std::string_view(packet).substr(1));
    fuzz::check(bytes.has_value(), "console packet is not hex", payload);
    decoded.append(bytes->begin(), bytes->end());
  }
  fuzz::check(decoded == text, "console packets do not carry the text", payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  if (payload.size() > RspLink::kMaxPayload) return 0;  // the link never delivers these

  std::string name = packet_name(payload);
  fuzz::check(payload.substr(0, name.size()) == name, "packet_name is not a prefix", payload);

  auto request = parse_request(payload);
  if (!request) {
    const auto& e = request.error();
    fuzz::check(!e.message.empty(), "error without a message", payload);
    fuzz::check(reply_error(e).size() <= RspLink::kMaxPayload, "error reply over PacketSize", payload);
    if (name == "qRcmd") check_console(e.message + "\n", payload);
    return 0;
  }
  if (auto* m = std::get_if<MonitorCommand>(&*request)) check_console(m->command, payload);
  if (auto* w = std::get_if<WriteMemory>(&*request)) {
    // M and X carry their length twice; the parser must have compared them.
    auto comma = payload.find(',');
    auto colon = payload.find(':');
    fuzz::check(comma != std::string_view::npos && colon != std::string_view::npos && comma < colon,
                "WriteMemory without ADDR,LENGTH:", payload);
    std::string declared(payload.substr(comma + 1, colon - comma - 1));
    fuzz::check(std::strtoull(declared.c_str(), nullptr, 16) == w->bytes.size(),
                "WriteMemory data length differs from the declared length", payload);
  }
  auto first = canon(*request);
  if (!first) return 0;
  auto again = parse_request(*first);
  fuzz::check(again.ok(), "canonical form of a parsed request does not parse", *first);
  auto second = canon(*again);
  fuzz::check(second && *second == *first, "request changed through its canonical form", *first);
  return 0;
}
