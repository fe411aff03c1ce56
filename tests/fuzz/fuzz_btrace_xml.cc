// The btrace path gdb's `record btrace` reads: a decoder::BlockTrace built
// from fuzz bytes (appends, overflow under both policies, clear, resize),
// its blocks, and the BTS XML document built from them.
//
// Invariants:
//  - BlockTrace matches a plain model (a deque with the same capacity):
//    size, sequence numbers, every retained branch and stack snapshot, the
//    begin of the oldest block, and which appends Stop refuses.
//  - blocks(from_seq, pc) chain: each block ends at its branch's source,
//    the next begins at its target, the last ends at pc.
//  - The XML is well formed in the strict shape gdb's parser accepts (the
//    DOCTYPE, <btrace version="1.0">, one <block begin="0x.." end="0x.."/>
//    per line, </btrace>), lists the blocks newest first, and applies the
//    delta/all rules for the oldest block.
#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "decoder/block_trace.h"
#include "decoder/bts_document.h"
#include "fuzz_input.h"
#include "protocol/btrace_xml.h"

namespace {

using decoder::BlockTrace;
using decoder::Branch;
using decoder::StackSnapshot;

struct Model {
  std::deque<std::pair<Branch, StackSnapshot>> kept;
  std::size_t capacity = 1;
  uint64_t oldest_begin = 0;
  uint64_t next_seq = 0;
  bool stop = false;

  bool append(Branch b, StackSnapshot s) {
    if (kept.size() == capacity) {
      if (stop) return false;
      oldest_begin = kept.front().first.to;
      kept.pop_front();
    }
    kept.emplace_back(b, s);
    ++next_seq;
    return true;
  }
  void resize(std::size_t c) {
    capacity = std::max<std::size_t>(c, 1);
    while (kept.size() > capacity) {
      oldest_begin = kept.front().first.to;
      kept.pop_front();
    }
  }
};

void compare(const BlockTrace& t, const Model& m, bool stacks) {
  fuzz::check(t.size() == m.kept.size(), "trace size");
  fuzz::check(t.capacity() == m.capacity, "trace capacity");
  fuzz::check(t.end_sequence() == m.next_seq, "end sequence");
  fuzz::check(t.first_sequence() == m.next_seq - m.kept.size(), "first sequence");
  fuzz::check(t.oldest_begin() == m.oldest_begin, "oldest begin");
  for (std::size_t i = 0; i < m.kept.size(); ++i) {
    uint64_t seq = t.first_sequence() + i;
    fuzz::check(t.at(seq) == m.kept[i].first, "retained branch");
    if (stacks) fuzz::check(t.stack_at(seq) == m.kept[i].second, "retained stack snapshot");
  }
}

// Lower-case hex without leading zeros, as gdbserver writes it.
bool take_hex(std::string_view& s, uint64_t& value) {
  if (s.substr(0, 2) != "0x") return false;
  s.remove_prefix(2);
  std::size_t n = 0;
  value = 0;
  while (n < s.size() && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) {
    if (n == 16) return false;
    value = value * 16 + static_cast<uint64_t>(s[n] <= '9' ? s[n] - '0' : s[n] - 'a' + 10);
    ++n;
  }
  if (n == 0 || (n > 1 && s[0] == '0')) return false;
  s.remove_prefix(n);
  return true;
}

bool take(std::string_view& s, std::string_view literal) {
  if (s.substr(0, literal.size()) != literal) return false;
  s.remove_prefix(literal.size());
  return true;
}

// The blocks of a BTS document, in document order; aborts if malformed.
std::vector<protocol::BtraceBlock> parse_bts(std::string_view xml) {
  std::string_view s = xml;
  fuzz::check(take(s, "<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n<btrace version=\"1.0\">\n"), "btrace header", xml);
  std::vector<protocol::BtraceBlock> out;
  while (!take(s, "</btrace>\n")) {
    protocol::BtraceBlock b;
    bool ok = take(s, "<block begin=\"") && take_hex(s, b.begin) && take(s, "\" end=\"") &&
              take_hex(s, b.end) && take(s, "\"/>\n");
    fuzz::check(ok, "malformed <block> element", s);
    out.push_back(b);
  }
  fuzz::check(s.empty(), "data after </btrace>", s);
  return out;
}

void check_blocks(const BlockTrace& t, const Model& m, fuzz::Input& in) {
  uint64_t span = t.end_sequence() - t.first_sequence();
  uint64_t from = t.first_sequence() + in.byte() % (span + 1);
  uint64_t pc = in.integer(in.byte() % 2 ? 8 : 2);
  auto blocks = t.blocks(from, pc);
  fuzz::check(blocks.size() == t.end_sequence() - from + 1, "block count");
  uint64_t begin = from == t.first_sequence() ? m.oldest_begin : t.at(from - 1).to;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    fuzz::check(blocks[i].begin == begin, "block begin is not the previous branch's target");
    bool last = i + 1 == blocks.size();
    fuzz::check(blocks[i].end == (last ? pc : t.at(from + i).from), "block end is not the branch source");
    if (!last) begin = t.at(from + i).to;
  }

  std::vector<protocol::BtraceBlock> sent;
  for (const auto& b : blocks) sent.push_back({b.begin, b.end});
  auto kind = static_cast<protocol::BtraceRead>(in.byte() % 3);
  const std::string document = protocol::btrace_bts_xml(sent, kind);
  // The same document written as gdb reads it, in chunks of a random length.
  decoder::BtsDocument stream(t, from, pc, kind);
  const std::size_t length = 1 + in.byte() % 64;
  std::string streamed;
  for (;;) {
    auto text = stream.read(t, streamed.size(), length);
    fuzz::check(text.ok(), "BtsDocument refused its own trace");
    fuzz::check(text->size() > length || stream.complete(), "BtsDocument chunk shorter than asked");
    streamed += text->substr(0, std::min(length, text->size()));
    if (stream.complete() && text->size() <= length) break;
  }
  fuzz::check(streamed == document, "BtsDocument differs from the document written whole");
  auto parsed = parse_bts(document);
  if (kind == protocol::BtraceRead::Delta) {
    sent.front().begin = 0;
  } else if (sent.front().begin == 0) {
    sent.erase(sent.begin());
  }
  fuzz::check(parsed.size() == sent.size(), "XML block count");
  for (std::size_t i = 0; i < sent.size(); ++i)
    fuzz::check(parsed[parsed.size() - 1 - i] == sent[i], "XML blocks are not the trace's, newest first");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  uint8_t flags = in.byte();
  Model m;
  m.stop = flags & 1;
  bool stacks = flags & 2;
  m.capacity = std::max<std::size_t>(in.byte() % 48, 1);
  m.oldest_begin = in.integer(flags & 4 ? 8 : 2);
  BlockTrace trace(m.oldest_begin, m.capacity,
                   m.stop ? decoder::OverflowPolicy::Stop : decoder::OverflowPolicy::DropOldest);

  for (int ops = 0; !in.empty() && ops < 4096; ++ops) {
    uint8_t op = in.byte();
    if (op == 0xff) {
      uint64_t origin = in.integer(2);
      trace.clear(origin);
      m.kept.clear();
      m.oldest_begin = origin;
    } else if (op == 0xfe) {
      std::size_t c = in.byte() % 64;
      trace.resize(c);
      m.resize(c);
    } else if (op == 0xfd) {
      check_blocks(trace, m, in);
    } else {
      int width = op & 0x80 ? 8 : 2;  // small addresses repeat, so zeros and equal blocks happen
      Branch b{in.integer(width), in.integer(width)};
      StackSnapshot s{in.integer(1), in.integer(1)};
      bool stored = stacks ? trace.append(b.from, b.to, s) : trace.append(b.from, b.to);
      fuzz::check(stored == m.append(b, s), "append accepted/refused differently from the model");
    }
    compare(trace, m, stacks);
  }
  check_blocks(trace, m, in);

  uint64_t conf_size = in.integer(8);
  std::string conf = protocol::btrace_conf_bts_xml(conf_size);
  std::string_view s = conf;
  uint64_t parsed = 0;
  bool ok = take(s, "<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n<btrace-conf version=\"1.0\">\n<bts size=\"") &&
            take_hex(s, parsed) && take(s, "\" />\n</btrace-conf>\n") && s.empty();
  fuzz::check(ok && parsed == conf_size, "btrace-conf document", conf);
  return 0;
}
