#pragma once
// A hand-assembled program and its recorded history, shared by the replay
// tests. The oracle (pc, rsp, rbp at every position) was worked out by hand
// from the listing below, independently of the code under test.
//
// 0x401000 main:  55              push rbp
// 0x401001:       48 89 e5        mov rbp, rsp
// 0x401004:       48 83 ec 10     sub rsp, 0x10
// 0x401008:       b9 03 00 00 00  mov ecx, 3
// 0x40100d:       e8 0e 00 00 00  call 0x401020
// 0x401012:       ff c9           dec ecx
// 0x401014:       75 f7           jne 0x40100d
// 0x401016:       c9              leave
// 0x401017:       c3              ret
// 0x401018:       90 x 8
// 0x401020 f:     55              push rbp
// 0x401021:       48 89 e5        mov rbp, rsp
// 0x401024:       6a 2a           push 0x2a
// 0x401026:       58              pop rax
// 0x401027:       5d              pop rbp
// 0x401028:       c3              ret
// 0x401029:       90 x 7
// 0x401030 start: e8 cb ff ff ff  call 0x401000
// 0x401035:       90
#include <cstdint>
#include <optional>
#include <vector>

#include "decoder/block_cache.h"
#include "decoder/block_trace.h"
#include "decoder/code_reader.h"
#include "decoder/instruction_decoder.h"
#include "decoder/replay_history.h"

namespace replay_test {

inline constexpr uint64_t kBase = 0x401000;
inline constexpr uint64_t kR0 = 0x7ffe1000;  // rsp on entry to main
inline constexpr uint64_t kB0 = 0x7ffe2000;  // rbp on entry to main

inline const std::vector<uint8_t>& code() {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> b = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0xb9, 3, 0, 0,
                              0,    0xe8, 0x0e, 0,    0,    0,    0xff, 0xc9, 0x75, 0xf7, 0xc9, 0xc3};
    b.insert(b.end(), 8, 0x90);
    for (uint8_t x : {0x55, 0x48, 0x89, 0xe5, 0x6a, 0x2a, 0x58, 0x5d, 0xc3}) b.push_back(x);
    b.insert(b.end(), 7, 0x90);
    for (uint8_t x : {0xe8, 0xcb, 0xff, 0xff, 0xff, 0x90}) b.push_back(x);
    return b;
  }();
  return bytes;
}

struct Point {
  uint64_t pc;
  uint64_t rsp;
  uint64_t rbp;
};

// Every position of the run start -> main (3 calls of f) -> main's ret, in
// execution order; the last one is the live position.
inline std::vector<Point> oracle() {
  const uint64_t R = kR0;
  std::vector<Point> p = {{0x401030, R + 8, kB0}, {0x401000, R, kB0},        {0x401001, R - 8, kB0},
                          {0x401004, R - 8, R - 8}, {0x401008, R - 24, R - 8}, {0x40100d, R - 24, R - 8}};
  const std::vector<Point> f = {{0x401020, R - 32, R - 8},  {0x401021, R - 40, R - 8},
                                {0x401024, R - 40, R - 40}, {0x401026, R - 48, R - 40},
                                {0x401027, R - 40, R - 40}, {0x401028, R - 32, R - 8}};
  const std::vector<Point> after = {{0x401012, R - 24, R - 8}, {0x401014, R - 24, R - 8}};
  for (int i = 0; i < 3; ++i) {
    p.insert(p.end(), f.begin(), f.end());
    p.insert(p.end(), after.begin(), after.end());
    if (i < 2) p.push_back({0x40100d, R - 24, R - 8});
  }
  p.push_back({0x401016, R - 24, R - 8});
  p.push_back({0x401017, R, kB0});
  return p;
}

// The taken branches of that run: each is (from, to) with the oracle's
// rsp/rbp at `from`.
inline decoder::BlockTrace trace(bool with_stacks, std::size_t capacity = 64) {
  const std::vector<Point> p = oracle();
  decoder::BlockTrace t(0x401030, capacity);
  auto is_branch = [](uint64_t from, uint64_t to) {
    return from == 0x401030 || from == 0x40100d || from == 0x401028 || (from == 0x401014 && to == 0x40100d);
  };
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    if (!is_branch(p[i].pc, p[i + 1].pc)) continue;
    if (with_stacks) {
      t.append(p[i].pc, p[i + 1].pc, decoder::StackSnapshot{p[i].rsp, p[i].rbp});
    } else {
      t.append(p[i].pc, p[i + 1].pc);
    }
  }
  return t;
}

inline decoder::LiveState live() {
  const Point last = oracle().back();
  return decoder::LiveState{last.pc, decoder::StackState{last.rsp, last.rbp}};
}

struct Fixture {
  decoder::InstructionDecoder decoder = decoder::InstructionDecoder::create().value();
  decoder::BufferReader reader{kBase, code().data(), code().size()};
  decoder::BlockCache cache{decoder, reader};
};

}  // namespace replay_test
