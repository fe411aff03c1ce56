// Replies to LLDB's own packets, in lldb-server's syntax.
#include <nlohmann/json.hpp>

#include "protocol/replies.h"

namespace protocol {

std::string reply_key_values(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string out;
  for (const auto& [key, value] : pairs) out += key + ":" + value + ";";
  return out;
}

std::string lldb_error_strings(std::string_view payload) {
  if (!payload.starts_with("E.")) return std::string(payload);
  return "E01;" + hex_encode(payload.substr(2));
}

std::string reply_binary_memory(const std::vector<uint8_t>& bytes) {
  if (bytes.empty()) return reply_ok();
  return escape_binary(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string reply_threads_info(const std::vector<ThreadStopSummary>& threads) {
  nlohmann::json list = nlohmann::json::array();
  for (const ThreadStopSummary& thread : threads) {
    nlohmann::json entry;
    entry["tid"] = thread.tid;
    if (!thread.name.empty()) entry["name"] = thread.name;
    if (thread.signal) entry["signal"] = *thread.signal;
    if (!thread.reason.empty()) entry["reason"] = thread.reason;
    nlohmann::json registers = nlohmann::json::object();
    for (const auto& [regnum, bytes] : thread.registers) {
      registers[std::to_string(regnum)] = hex_encode(bytes.data(), bytes.size());
    }
    if (!registers.empty()) entry["registers"] = registers;
    list.push_back(entry);
  }
  // Thread names are the program's bytes: replaced, not rejected, when
  // they are not UTF-8.
  return escape_binary(list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace protocol
