#pragma once
// The small program the PT tests encode and decode traces of
// (test_pt_encoder.cc, test_pt_decoder.cc, tracing/test_intel_pt_backend.cc),
// mapped at B, and blocks of it by offset.
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "decoder/branch.h"

namespace pt_program {

inline constexpr uint64_t B = 0x401000;
// B+0x00: mov ecx, 3
// B+0x05: dec ecx                  (loop1)
// B+0x07: jne loop1
// B+0x09: call func
// B+0x0e: lea rdx, [rip + func2]
// B+0x15: call rdx
// B+0x17: lea rax, [rip + tail]
// B+0x1e: jmp rax
// B+0x20: ud2
// B+0x22: syscall                  (tail)
// B+0x24: cmp eax, 0
// B+0x27: je skip
// B+0x29: nop
// B+0x2a: nop                      (skip)
// B+0x2b: nop
// B+0x2c: hlt
// B+0x2d: test ecx, ecx            (func)
// B+0x2f: jne fx
// B+0x31: ret
// B+0x32: ret                      (fx)
// B+0x33: ret                      (func2)
// B+0x34: nop                      (handler)
// B+0x35: nop
// B+0x36: mov eax, 15
// B+0x3b: syscall                  (rt_sigreturn)
inline const std::vector<uint8_t> kCode = {
    0xb9, 0x03, 0x00, 0x00, 0x00, 0xff, 0xc9, 0x75, 0xfc, 0xe8, 0x1f, 0x00, 0x00, 0x00, 0x48, 0x8d,
    0x15, 0x1e, 0x00, 0x00, 0x00, 0xff, 0xd2, 0x48, 0x8d, 0x05, 0x04, 0x00, 0x00, 0x00, 0xff, 0xe0,
    0x0f, 0x0b, 0x0f, 0x05, 0x83, 0xf8, 0x00, 0x74, 0x01, 0x90, 0x90, 0x90, 0xf4, 0x85, 0xc9, 0x75,
    0x01, 0xc3, 0xc3, 0xc3, 0x90, 0x90, 0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};

inline std::vector<decoder::Block> blocks(std::initializer_list<std::pair<uint64_t, uint64_t>> offsets) {
  std::vector<decoder::Block> out;
  for (auto [b, e] : offsets) out.push_back(decoder::Block{B + b, B + e});
  return out;
}

}  // namespace pt_program
