// qXfer:OBJECT:read: each object is a function that builds the whole
// document; the reply carries the slice gdb asked for.
#include <map>

#include "protocol/amd64_registers.h"
#include "stub/handlers.h"
#include "stub/libraries_svr4.h"

namespace stub {

namespace {

using XferSource = Expected<std::string> (*)(Session&, const std::string& annex);

Expected<std::string> target_features(Session&, const std::string& annex) {
  if (annex != "target.xml") {
    return btstub::make_error(btstub::ErrorCode::InvalidArgument, "Unknown target description " + annex);
  }
  return amd64_target_xml();
}

Expected<std::string> auxv(Session& s, const std::string&) {
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  return s.process()->read_auxv();
}

Expected<std::string> exec_file(Session& s, const std::string&) {
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  return s.process()->exec_file();
}

Expected<std::string> libraries(Session& s, const std::string&) {
  if (!s.has_process()) return btstub::make_error(btstub::ErrorCode::NoProcess, "No process");
  return libraries_svr4_xml(*s.process());
}

const std::map<std::string, XferSource, std::less<>>& xfer_sources() {
  static const std::map<std::string, XferSource, std::less<>> sources = {
      {"features", target_features},
      {"auxv", auxv},
      {"exec-file", exec_file},
      {"libraries-svr4", libraries},
  };
  return sources;
}

}  // namespace

Reply handle(Session& s, const XferRead& req) {
  auto it = xfer_sources().find(req.object);
  if (it == xfer_sources().end()) return Reply::now(reply_empty());
  auto document = it->second(s, req.annex);
  if (!document) return Reply::now(reply_error(document.error()));
  return Reply::now(reply_xfer_chunk(*document, req.offset, req.length));
}

}  // namespace stub
