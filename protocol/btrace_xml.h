#pragma once
// The documents gdb's `record btrace` reads over qXfer: the branch trace in
// BTS format (qXfer:btrace:read) and the trace configuration
// (qXfer:btrace-conf:read). Pure text building; the caller supplies blocks.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace protocol {

// One BTS block: from a branch target (`begin`) to the last instruction
// before the next taken branch (`end`, inclusive). protocol/ does not see
// decoder::Block, so handlers convert.
struct BtraceBlock {
  uint64_t begin = 0;
  uint64_t end = 0;
  bool operator==(const BtraceBlock&) const = default;
};

// The qXfer:btrace:read annexes.
enum class BtraceRead {
  All,    // the whole buffer
  New,    // the whole buffer, or nothing if nothing changed since the last read
  Delta,  // only what is new since the last read
};

// nullopt for anything but "all", "new" or "delta".
std::optional<BtraceRead> parse_btrace_annex(std::string_view annex);

// The BTS document for `oldest_first` blocks (the last one ends at the
// thread's current pc). Blocks go out newest first, as gdb expects.
//   Delta: the oldest block gets begin 0: gdb glues it onto the end of the
//          trace it already has and asserts on that zero.
//   All/New: an oldest block whose begin is unknown (0) is dropped, as the
//          reference server does, because gdb cannot decode from address 0.
std::string btrace_bts_xml(std::vector<BtraceBlock> oldest_first, BtraceRead kind);

// A trace document with no blocks (a `new` read when nothing changed).
std::string btrace_empty_xml();

// The pieces btrace_bts_xml joins, for a document written a piece at a
// time (decoder/bts_document.h): the header, one <block> line appended to
// `out`, and the footer.
std::string_view btrace_xml_header();
void append_btrace_block(std::string& out, const BtraceBlock& block);
std::string_view btrace_xml_footer();

// <btrace-conf> for a BTS trace of `size` bytes.
std::string btrace_conf_bts_xml(uint64_t size);

// The Intel PT document: <pt> with an empty <pt-config> and the packets as
// hex in <raw> (left out when there are none, as gdbserver does). No <cpu>:
// gdb then applies no vendor's errata workarounds, which is right for a
// trace no Intel CPU wrote.
std::string btrace_pt_xml(const std::vector<uint8_t>& packets);

// The pieces btrace_pt_xml joins, for a document written a piece at a
// time: everything up to the packets, the <raw> element's opening and
// closing (only when there are packets), the packets as hex appended to
// `out`, and what follows the packets.
std::string btrace_pt_xml_head();
std::string_view btrace_pt_raw_open();
std::string_view btrace_pt_raw_close();
void append_pt_hex(std::string& out, const uint8_t* bytes, std::size_t count);
std::string btrace_pt_xml_tail();

// <btrace-conf> for a PT trace of `size` bytes.
std::string btrace_conf_pt_xml(uint64_t size);

}  // namespace protocol
