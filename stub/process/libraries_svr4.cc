#include "stub/process/libraries_svr4.h"

#include "protocol/hex_text.h"
#include "protocol/replies.h"

#include <cstring>
#include <vector>

namespace stub::process {
namespace {

using btstub::ErrorCode;
using btstub::make_error;

// ELF / auxv constants (64-bit), spelled out to keep <elf.h> macros local.
constexpr uint64_t kAtNull = 0, kAtPhdr = 3, kAtPhent = 4, kAtPhnum = 5;
constexpr uint32_t kPtDynamic = 2, kPtPhdr = 6;
constexpr int64_t kDtNull = 0, kDtDebug = 21;
constexpr std::size_t kPhdrSize = 56;
constexpr std::size_t kMaxLibraries = 100000;  // guards against a looping list
constexpr std::size_t kMaxNameLength = 4096;

uint64_t load_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

uint32_t load_u32(const uint8_t* p) { return static_cast<uint32_t>(load_u64(p) & 0xffffffffu); }

using protocol::hex;

// Reads exactly `len` bytes or fails.
Expected<std::vector<uint8_t>> read_exact(Process& process, uint64_t addr, std::size_t len) {
  auto bytes = process.read_memory(addr, len);
  if (!bytes) return bytes.error();
  if (bytes->size() != len) {
    return make_error(ErrorCode::MemoryFault, "Cannot access memory at address " + hex(addr + bytes->size()));
  }
  return bytes;
}

Expected<uint64_t> read_u64(Process& process, uint64_t addr) {
  auto bytes = read_exact(process, addr, 8);
  if (!bytes) return bytes.error();
  return load_u64(bytes->data());
}

Expected<std::string> read_c_string(Process& process, uint64_t addr) {
  std::string out;
  while (out.size() < kMaxNameLength) {
    // Small chunks: a name near the end of a mapping still reads.
    auto chunk = process.read_memory(addr + out.size(), 64);
    if (!chunk) return chunk.error();
    for (uint8_t byte : *chunk) {
      if (byte == 0) return out;
      out += static_cast<char>(byte);
    }
  }
  return out;
}

struct Auxv {
  uint64_t phdr = 0, phent = 0, phnum = 0;
};

Auxv parse_auxv(const std::string& raw) {
  Auxv auxv;
  const auto* data = reinterpret_cast<const uint8_t*>(raw.data());
  for (std::size_t off = 0; off + 16 <= raw.size(); off += 16) {
    uint64_t type = load_u64(data + off), value = load_u64(data + off + 8);
    if (type == kAtNull) break;
    if (type == kAtPhdr) auxv.phdr = value;
    if (type == kAtPhent) auxv.phent = value;
    if (type == kAtPhnum) auxv.phnum = value;
  }
  return auxv;
}

// Run-time address of the main program's dynamic section.
Expected<uint64_t> find_dynamic(Process& process) {
  auto raw_auxv = process.read_auxv();
  if (!raw_auxv) return raw_auxv.error();
  Auxv auxv = parse_auxv(*raw_auxv);
  if (auxv.phdr == 0 || auxv.phnum == 0 || auxv.phnum > 0xffff || (auxv.phent && auxv.phent != kPhdrSize)) {
    return make_error(ErrorCode::NotSupported, "No usable program headers in the auxiliary vector");
  }
  auto phdrs = read_exact(process, auxv.phdr, auxv.phnum * kPhdrSize);
  if (!phdrs) return phdrs.error();
  std::optional<uint64_t> bias, dynamic;
  for (std::size_t i = 0; i < auxv.phnum; ++i) {
    const uint8_t* ph = phdrs->data() + i * kPhdrSize;
    uint32_t type = load_u32(ph);
    uint64_t vaddr = load_u64(ph + 16);
    if (type == kPtPhdr) bias = auxv.phdr - vaddr;
    if (type == kPtDynamic) dynamic = vaddr;
  }
  // Without PT_PHDR the load bias is unknown; such programs (static ones,
  // some exotic linkers) have no DT_DEBUG anyway.
  if (!bias || !dynamic) {
    return make_error(ErrorCode::NotSupported, "The program has no dynamic section");
  }
  return *dynamic + *bias;
}

// The address of DT_DEBUG's value in the dynamic section at `dynamic`.
Expected<uint64_t> find_debug_slot(Process& process, uint64_t dynamic) {
  for (std::size_t i = 0; i < 10000; ++i) {
    auto entry = read_exact(process, dynamic + i * 16, 16);
    if (!entry) return entry.error();
    auto tag = static_cast<int64_t>(load_u64(entry->data()));
    if (tag == kDtNull) break;
    if (tag == kDtDebug) return dynamic + i * 16 + 8;
  }
  return make_error(ErrorCode::NotSupported, "The program has no DT_DEBUG entry");
}

// DT_DEBUG's value: the address of r_debug, 0 while ld.so has not run.
Expected<uint64_t> find_r_debug(Process& process, uint64_t dynamic) {
  auto slot = find_debug_slot(process, dynamic);
  if (!slot) return slot.error();
  return read_u64(process, *slot);
}

}  // namespace

Expected<uint64_t> r_debug_slot(Process& process) {
  auto dynamic = find_dynamic(process);
  if (!dynamic) return dynamic.error();
  return find_debug_slot(process, *dynamic);
}

Expected<std::string> libraries_svr4_xml(Process& process) {
  auto dynamic = find_dynamic(process);
  if (!dynamic) return dynamic.error();
  auto r_debug = find_r_debug(process, *dynamic);
  if (!r_debug) return r_debug.error();

  const std::string empty = "<library-list-svr4 version=\"1.0\"/>";
  if (*r_debug == 0) return empty;
  // struct r_debug: int r_version; link_map* r_map (offset 8); ...
  auto r_map = read_u64(process, *r_debug + 8);
  if (!r_map) return r_map.error();
  if (*r_map == 0) return empty;

  std::string header = "<library-list-svr4 version=\"1.0\"";
  std::string body;
  uint64_t lm = *r_map, prev = 0;
  for (std::size_t count = 0; lm != 0 && count < kMaxLibraries; ++count) {
    // struct link_map: l_addr, l_name, l_ld, l_next, l_prev (8 bytes each).
    auto fields = read_exact(process, lm, 40);
    if (!fields) return fields.error();
    uint64_t l_addr = load_u64(fields->data()), l_name = load_u64(fields->data() + 8);
    uint64_t l_ld = load_u64(fields->data() + 16), l_next = load_u64(fields->data() + 24);
    uint64_t l_prev = load_u64(fields->data() + 32);
    if (l_prev != prev) break;  // corrupt or being modified: stop where consistent
    if (prev == 0) {
      // The first entry is the main program, which gdb knows already.
      header += " main-lm=\"" + hex(lm) + "\"";
    } else {
      auto name = l_name ? read_c_string(process, l_name) : Expected<std::string>(std::string());
      if (name && !name->empty()) {
        body += "<library name=\"" + protocol::xml_escape(*name) + "\" lm=\"" + hex(lm) + "\" l_addr=\"" +
                hex(l_addr) + "\" l_ld=\"" + hex(l_ld) + "\" lmid=\"0x0\"/>";
      }
    }
    prev = lm;
    lm = l_next;
  }
  return header + ">" + body + "</library-list-svr4>";
}

}  // namespace stub::process
