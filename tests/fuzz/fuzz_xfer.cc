// qXfer: the request's OBJECT:read:ANNEX:OFFSET,LENGTH parsing, the btrace
// annex, and the chunked replies gdb reassembles documents from.
//
// Input: "qXfer:" + input is the packet. Invariants:
//  - A parsed XferRead's object has no ':', its annex is exactly the text
//    between "read:" and the last ':', and offset/length are that packet's.
//  - parse_btrace_annex accepts exactly "all", "new" and "delta".
//  - reply_xfer_chunk on a document (the input itself, special bytes and
//    all) fits PacketSize, starts with 'm' or 'l', unescapes to the slice at
//    the offset, ends with 'l' exactly when the slice reaches the end, and
//    makes progress; reading on the way gdb does rebuilds the document.
#include <string>

#include "fuzz_input.h"
#include "protocol/btrace_xml.h"
#include "protocol/replies.h"
#include "protocol/requests.h"
#include "protocol/rsp_link.h"

namespace {

using namespace protocol;

// One chunk: its unescaped bytes, and whether it said "last".
std::pair<std::string, bool> read_chunk(std::string_view doc, uint64_t offset, uint64_t length) {
  std::string reply = reply_xfer_chunk(doc, offset, length);
  fuzz::check(reply.size() <= RspLink::kMaxPayload, "qXfer reply over PacketSize");
  fuzz::check(!reply.empty() && (reply[0] == 'm' || reply[0] == 'l'), "qXfer reply without m/l", reply);
  auto data = unescape_binary(std::string_view(reply).substr(1));
  fuzz::check(data.has_value(), "qXfer reply is not validly escaped", reply);
  fuzz::check(data->size() <= length, "qXfer reply longer than asked", reply);
  std::string_view want = offset < doc.size() ? doc.substr(offset, data->size()) : std::string_view{};
  fuzz::check(*data == want, "qXfer reply is not the document's slice", reply);
  bool last = reply[0] == 'l';
  bool reaches_end = offset >= doc.size() || offset + data->size() == doc.size();
  fuzz::check(last == reaches_end, "qXfer m/l does not match the end of the document", reply);
  if (offset < doc.size() && length > 0) fuzz::check(!data->empty(), "qXfer read made no progress");
  return {std::move(*data), last};
}

void check_reads(std::string_view doc, uint64_t offset, uint64_t length) {
  read_chunk(doc, offset, length);
  // gdb's way: from 0, its packet size worth at a time, until 'l'.
  uint64_t step = length % 0x10000 + 1;
  std::string rebuilt;
  for (int guard = 0;; ++guard) {
    fuzz::check(guard <= static_cast<int>(doc.size()) + 1, "qXfer reads never end");
    auto [data, last] = read_chunk(doc, rebuilt.size(), step);
    rebuilt += data;
    if (last) break;
  }
  fuzz::check(rebuilt == doc, "qXfer chunks do not rebuild the document");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.size() > RspLink::kMaxPayload - 6) return 0;
  std::string packet = "qXfer:" + std::string(input);
  auto request = parse_request(packet);
  if (request) {
    if (auto* x = std::get_if<XferRead>(&*request)) {
      fuzz::check(!x->object.empty() && x->object.find(':') == std::string::npos, "qXfer object", packet);
      std::string prefix = "qXfer:" + x->object + ":read:";
      fuzz::check(packet.compare(0, prefix.size(), prefix) == 0, "qXfer object/op not at the start", packet);
      auto last_colon = packet.rfind(':');
      fuzz::check(last_colon >= prefix.size() - 1, "qXfer annex bounds", packet);
      fuzz::check(x->annex == packet.substr(prefix.size(), last_colon - prefix.size()), "qXfer annex", packet);
      auto kind = parse_btrace_annex(x->annex);
      bool known = x->annex == "all" || x->annex == "new" || x->annex == "delta";
      fuzz::check(kind.has_value() == known, "btrace annex", x->annex);
      check_reads(input, x->offset % (input.size() + 2), x->length);
    }
  }
  // Documents with every byte value, not just well-formed packets.
  fuzz::Input in(data, size);
  uint64_t offset = in.integer(2);
  uint64_t length = in.integer(3);
  check_reads(in.remaining(), offset % (size + 1), length);
  return 0;
}
