// Extended-remote requests (!, vRun, vAttach, R) and QThreadEvents.
// Until --multi lands (issue 3) btstub serves one program per connection, so
// these answer as gdbserver does outside extended mode: gdb keeps using the
// program it is connected to.
#include "stub/handlers.h"

namespace stub {

namespace {
Reply needs_extended_mode(const char* what) {
  return Reply::now(reply_error(btstub::make_error(
      btstub::ErrorCode::NotSupported, std::string(what) + " needs extended-remote mode (btstub --multi)")));
}
}  // namespace

Reply handle(Session&, const ExtendedMode&) { return Reply::now(reply_empty()); }
Reply handle(Session&, const RunProgram&) { return needs_extended_mode("vRun"); }
Reply handle(Session&, const AttachProcess&) { return needs_extended_mode("vAttach"); }
Reply handle(Session&, const Restart&) { return needs_extended_mode("R (restart)"); }
Reply handle(Session&, const SetThreadEvents&) { return Reply::now(reply_empty()); }

}  // namespace stub
