// XML documents served through qXfer that are built from plain data: the
// thread list (the `info os` tables are in osdata_xml.cc). The layout
// follows what gdb parses (threads.dtd) and what gdbserver emits.
#include <string>

#include "protocol/replies.h"

namespace protocol {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c; break;
    }
  }
  return out;
}

std::string threads_xml(const std::vector<ThreadInfo>& threads, bool multiprocess) {
  std::string out = "<?xml version=\"1.0\"?>\n<threads>\n";
  for (const auto& thread : threads) {
    out += "<thread id=\"" + format_thread_id(thread.id, multiprocess) + "\"";
    if (thread.core >= 0) out += " core=\"" + std::to_string(thread.core) + "\"";
    if (!thread.name.empty()) out += " name=\"" + xml_escape(thread.name) + "\"";
    out += "/>\n";
  }
  out += "</threads>\n";
  return out;
}

}  // namespace protocol
