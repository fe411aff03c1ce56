// XML documents served through qXfer that are built from plain data: the
// thread list and the `info os` tables. The layouts follow what gdb parses
// (threads.dtd, osdata.dtd) and what gdbserver emits.
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

namespace {

std::string column(std::string_view name, std::string_view value) {
  return "<column name=\"" + std::string(name) + "\">" + xml_escape(value) + "</column>";
}

}  // namespace

std::string osdata_processes_xml(const std::vector<OsProcess>& processes) {
  // gdb builds the table header from the columns of a single item, so every
  // item carries all four columns, even when a value is empty.
  std::string out = "<osdata type=\"processes\">\n";
  for (const auto& process : processes) {
    std::string cores;
    for (std::size_t i = 0; i < process.cores.size(); ++i) {
      if (i != 0) cores += ',';
      cores += std::to_string(process.cores[i]);
    }
    out += "<item>";
    out += column("pid", std::to_string(process.pid));
    out += column("user", process.user);
    out += column("command", process.command);
    out += column("cores", cores);
    out += "</item>";
  }
  out += "</osdata>\n";
  return out;
}

std::string osdata_types_xml() {
  std::string out = "<osdata type=\"types\">\n";
  out += "<item>";
  out += column("Type", "processes");
  out += column("Description", "Listing of all processes");
  out += column("Title", "Processes");
  out += "</item>";
  out += "</osdata>\n";
  return out;
}

}  // namespace protocol
