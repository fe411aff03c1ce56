#pragma once
// Helpers of the tests that look at PT packets gdb gets: a <pt> document's
// bytes, where its PSBs are, and the instructions libipt's decoder finds in
// them, driven as gdb drives it. Used by unit and session tests alike.
#include <catch2/catch.hpp>
#include <intel-pt.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pt_packets {

inline std::vector<uint8_t> unhex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The packets of a `l<btrace>...<raw>HEX</raw>...` reply.
inline std::vector<uint8_t> raw_of(const std::string& reply) {
  const std::string open = "<raw>\n";
  const auto begin = reply.find(open);
  const auto end = reply.find("</raw>");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  return unhex(reply.substr(begin + open.size(), end - begin - open.size()));
}

// Where each PSB begins in `bytes` (the pattern is 02 82 eight times).
inline std::vector<std::size_t> psb_offsets(const std::vector<uint8_t>& bytes) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i + 16 <= bytes.size(); ++i) {
    bool psb = true;
    for (std::size_t k = 0; k < 16 && psb; ++k) psb = bytes[i + k] == (k % 2 == 0 ? 0x02 : 0x82);
    if (psb) {
      out.push_back(i);
      i += 15;
    }
  }
  return out;
}

// The instructions libipt's decoder finds in `packets`, as gdb drives it
// (events taken as they come), the code read through `read` with `context`;
// the stream must end cleanly.
inline std::vector<uint64_t> instructions(std::vector<uint8_t> packets, read_memory_callback_t* read,
                                          void* context) {
  std::vector<uint64_t> ips;
  pt_config config;
  pt_config_init(&config);
  config.begin = packets.data();
  config.end = packets.data() + packets.size();
  pt_insn_decoder* dec = pt_insn_alloc_decoder(&config);
  REQUIRE(dec != nullptr);
  REQUIRE(pt_image_set_callback(pt_insn_get_image(dec), read, context) == 0);
  int status = pt_insn_sync_forward(dec);
  while (status >= 0) {
    while (status >= 0 && (status & pts_event_pending)) {
      pt_event ev;
      status = pt_insn_event(dec, &ev, sizeof ev);
    }
    if (status < 0) break;
    pt_insn insn;
    status = pt_insn_next(dec, &insn, sizeof insn);
    if (status >= 0) ips.push_back(insn.ip);
  }
  CHECK(status == -pte_eos);
  pt_insn_free_decoder(dec);
  return ips;
}

}  // namespace pt_packets
