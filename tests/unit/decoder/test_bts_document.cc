// BtsDocument: the BTS document written chunk by chunk equals the document
// written whole, at any chunk length; it refuses to serve a changed trace
// or text it dropped.
#include <catch2/catch.hpp>

#include "decoder/block_trace.h"
#include "decoder/bts_document.h"

namespace test_bts_document {  // this file's own names, apart in a unity build

using decoder::BlockTrace;
using decoder::BtsDocument;
using protocol::BtraceRead;

namespace {

// A trace from 0x1000 with `count` taken branches, all distinct addresses.
BlockTrace make_trace(std::size_t count, std::size_t capacity = 1 << 20) {
  BlockTrace trace(0x1000, capacity);
  for (std::size_t i = 0; i < count; ++i) trace.append(0x1000 + 16 * i + 8, 0x1000 + 16 * (i + 1));
  return trace;
}

std::string whole(const BlockTrace& trace, uint64_t from, uint64_t pc, BtraceRead kind) {
  std::vector<protocol::BtraceBlock> blocks;
  for (const auto& b : trace.blocks(from, pc)) blocks.push_back({b.begin, b.end});
  return protocol::btrace_bts_xml(blocks, kind);
}

// Reads the whole document as gdb does: each chunk at the offset where the
// previous one ended, `length` bytes at most.
std::string in_chunks(BtsDocument& doc, const BlockTrace& trace, std::size_t length) {
  std::string out;
  for (;;) {
    auto text = doc.read(trace, out.size(), length);
    REQUIRE(text);
    REQUIRE((text->size() > length || doc.complete()));
    out += text->substr(0, std::min(length, text->size()));
    if (doc.complete() && text->size() <= length) return out;
  }
}

}  // namespace

TEST_CASE("a BTS document read in chunks equals the document written whole", "[bts_document]") {
  const BlockTrace trace = make_trace(3000);  // past two chunks of branches
  for (auto kind : {BtraceRead::All, BtraceRead::New, BtraceRead::Delta}) {
    for (uint64_t from : {uint64_t{0}, uint64_t{1}, uint64_t{1500}, uint64_t{3000}}) {
      for (std::size_t length : {std::size_t{1}, std::size_t{37}, std::size_t{4096}, std::size_t{1} << 20}) {
        BtsDocument doc(trace, from, 0x9999, kind);
        CHECK(in_chunks(doc, trace, length) == whole(trace, from, 0x9999, kind));
      }
    }
  }
}

TEST_CASE("a BTS document drops an unknown oldest begin as the whole one does", "[bts_document]") {
  BlockTrace trace(0, 1 << 10);  // tracing began where nothing is known
  trace.append(0x1008, 0x2000);
  for (auto kind : {BtraceRead::All, BtraceRead::Delta}) {
    BtsDocument doc(trace, 0, 0x2004, kind);
    CHECK(in_chunks(doc, trace, 16) == whole(trace, 0, 0x2004, kind));
  }
  BlockTrace empty(0, 1 << 10);
  BtsDocument doc(empty, 0, 0x2004, BtraceRead::All);
  CHECK(in_chunks(doc, empty, 100) == whole(empty, 0, 0x2004, BtraceRead::All));
}

TEST_CASE("a BTS document after dropped branches begins at the newest dropped target", "[bts_document]") {
  BlockTrace trace = make_trace(5000, 2000);  // a ring of 2000 records: 3000 dropped
  REQUIRE(trace.first_sequence() == 3000);
  BtsDocument doc(trace, trace.first_sequence(), 0x9999, BtraceRead::All);
  CHECK(in_chunks(doc, trace, 1000) == whole(trace, trace.first_sequence(), 0x9999, BtraceRead::All));
}

TEST_CASE("the same chunk can be asked again, an earlier one cannot", "[bts_document]") {
  const BlockTrace trace = make_trace(100);
  BtsDocument doc(trace, 0, 0x9999, BtraceRead::All);
  auto first = doc.read(trace, 0, 64);
  REQUIRE(first);
  std::string first_text(first->substr(0, 64));
  auto again = doc.read(trace, 0, 64);  // gdb resends a request whose reply it lost
  REQUIRE(again);
  CHECK(again->substr(0, 64) == first_text);
  REQUIRE(doc.read(trace, 64, 64));
  auto earlier = doc.read(trace, 0, 64);
  REQUIRE_FALSE(earlier);
  CHECK(earlier.error().message == "Bad offset; read the branch trace from offset 0 first.");
  CHECK_FALSE(doc.read(trace, 1 << 20, 64));  // beyond what was written
}

TEST_CASE("a BTS document stays what it was when the trace grows, and refuses a trace that lost its branches",
          "[bts_document]") {
  BlockTrace trace = make_trace(3000, 3100);
  const std::string before = whole(trace, 0, 0x9999, BtraceRead::All);
  BtsDocument doc(trace, 0, 0x9999, BtraceRead::All);
  REQUIRE(doc.read(trace, 0, 64));
  trace.append(0x50000, 0x60000);  // 3001 branches: nothing dropped
  std::string text = before.substr(0, 64);
  auto next = doc.read(trace, 64, 64);
  REQUIRE(next);
  text += next->substr(0, 64);
  CHECK(text == before.substr(0, 128));
  for (int i = 0; i < 200; ++i) trace.append(0x50000, 0x60000);  // the ring drops the oldest
  auto dropped = doc.read(trace, 128, 64);
  REQUIRE_FALSE(dropped);
  CHECK(dropped.error().message ==
        "The branches of this document were dropped since it was begun; read it again from offset 0.");

  const BlockTrace one = make_trace(100);
  const BlockTrace other = make_trace(100);  // the same numbers, another trace
  BtsDocument of_one(one, 0, 0x9999, BtraceRead::All);
  REQUIRE(of_one.read(one, 0, 64));
  CHECK_FALSE(of_one.read(other, 64, 64));
}

}  // namespace test_bts_document
