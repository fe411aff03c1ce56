#pragma once
// Per-family request parsers behind parse_request() (internal to protocol/).
// Each takes the whole payload and is only called for its own family.
#include <string_view>

#include "protocol/requests.h"

namespace protocol::detail {

btstub::Expected<Request> parse_query(std::string_view payload);      // q..., Q...
btstub::Expected<Request> parse_v_packet(std::string_view payload);   // v...
btstub::Expected<Request> parse_vcont(std::string_view payload);      // vCont;...
btstub::Expected<Request> parse_vfile(std::string_view payload);      // vFile:...
btstub::Expected<Request> parse_legacy_resume(std::string_view payload);  // c C s S
btstub::Expected<Request> parse_reverse(std::string_view payload);    // bc bs
btstub::Expected<Request> parse_breakpoint(std::string_view payload); // Z z
btstub::Expected<Request> parse_kill_detach(std::string_view payload);  // k D
btstub::Expected<Request> parse_registers(std::string_view payload);  // g G p P
btstub::Expected<Request> parse_memory(std::string_view payload);     // m M X
btstub::Expected<Request> parse_thread_packet(std::string_view payload);  // H T
btstub::Expected<Request> parse_vrun(std::string_view payload);       // vRun;...
btstub::Expected<Request> parse_vattach(std::string_view payload);    // vAttach;pid
btstub::Expected<Request> parse_restart(std::string_view payload);    // R
btstub::Expected<Request> parse_extended_mode(std::string_view payload);  // !
btstub::Expected<Request> parse_thread_events(std::string_view payload);  // QThreadEvents:
btstub::Expected<Request> parse_non_stop(std::string_view payload);     // QNonStop:
btstub::Expected<Request> parse_run_setting(std::string_view name, std::string_view payload);  // QEnvironment*, QSetWorkingDir, QDisableRandomization
btstub::Expected<Request> parse_btrace(std::string_view payload);       // Qbtrace:
btstub::Expected<Request> parse_btrace_conf(std::string_view payload);  // Qbtrace-conf:
btstub::Expected<Request> parse_symbol(std::string_view payload);       // qSymbol:
btstub::Expected<Request> parse_tls_address(std::string_view payload);  // qGetTLSAddr:

// LLDB's q/Q/j packets (qHostInfo, jThreadsInfo, ...); UnknownPacket for any other name.
btstub::Expected<Request> parse_lldb_query(std::string_view payload);
btstub::Expected<Request> parse_binary_read(std::string_view payload);  // x<addr>,<length>
btstub::Expected<Request> parse_allocation(std::string_view payload);   // _M, _m

}  // namespace protocol::detail
