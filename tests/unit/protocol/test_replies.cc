#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <fcntl.h>

#include "protocol/replies.h"
#include "protocol/rsp_link.h"

namespace test_replies {  // this file's own names, apart in a unity build

using namespace protocol;

namespace {
std::vector<uint8_t> le64(uint64_t v) {
  std::vector<uint8_t> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}
}  // namespace

TEST_CASE("hex encode and decode", "[replies]") {
  const uint8_t bytes[] = {0x00, 0x0f, 0xa0, 0xff};
  CHECK(hex_encode(bytes, 4) == "000fa0ff");
  CHECK(hex_encode("OK") == "4f4b");
  CHECK(hex_encode("").empty());
  CHECK(hex_decode("000FA0ff") == std::vector<uint8_t>{0x00, 0x0f, 0xa0, 0xff});
  CHECK(hex_decode("")->empty());
  CHECK_FALSE(hex_decode("0").has_value());
  CHECK_FALSE(hex_decode("0g").has_value());
  CHECK_FALSE(hex_decode(" 0").has_value());
  CHECK_FALSE(hex_decode("-1").has_value());
}

TEST_CASE("binary escaping round trip", "[replies]") {
  CHECK(escape_binary("a#b$c}d*e") == "a}\x03" "b}\x04" "c}]d}\x0a" "e");
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  std::string escaped = escape_binary(all);
  CHECK(escaped.size() == 256 + 4);
  CHECK(escaped.find_first_of("#$*") == std::string::npos);
  CHECK(unescape_binary(escaped) == all);
  CHECK(unescape_binary("}") == std::nullopt);
  CHECK(unescape_binary("ab}") == std::nullopt);
  CHECK(unescape_binary("")->empty());
}

TEST_CASE("generic replies", "[replies]") {
  CHECK(reply_ok() == "OK");
  CHECK(reply_empty().empty());
  CHECK(reply_error(btstub::make_error(btstub::ErrorCode::NoProcess, "no such thread")) ==
        "E.no such thread");
  CHECK(reply_error(btstub::Error{}) == "E.error");
  // Characters that would break framing or be read as run-length encoding.
  CHECK(reply_error(btstub::make_error(btstub::ErrorCode::BadPacket, "a#b$c*d}e\n")) == "E.a?b?c?d?e?");
  // A message quoting a whole request is cut to fit PacketSize.
  std::string long_reply = reply_error(btstub::make_error(btstub::ErrorCode::BadPacket, std::string(20000, 'x')));
  CHECK(long_reply.size() == RspLink::kMaxPayload);
  CHECK(long_reply.substr(long_reply.size() - 4) == "x...");
  CHECK(reply_error_code(1) == "E01");
  CHECK(reply_error_code(0x2a) == "E2a");
}

TEST_CASE("query replies", "[replies]") {
  CHECK(reply_supported({"PacketSize=4000", "QStartNoAckMode+", "swbreak+"}) ==
        "PacketSize=4000;QStartNoAckMode+;swbreak+");
  CHECK(reply_supported({}).empty());
  CHECK(reply_current_thread(ThreadId{0x1f, 0x20}, true) == "QCp1f.20");
  CHECK(reply_current_thread(ThreadId{0x1f, 0x20}, false) == "QC20");
  CHECK(reply_thread_list({ThreadId{0x1f, 0x1f}, ThreadId{0x1f, 0x20}}, true) == "mp1f.1f,p1f.20");
  CHECK(reply_thread_list({ThreadId{1, 0xa}}, false) == "ma");
  CHECK(reply_thread_list({}, true) == "l");
  CHECK(reply_attached(true) == "1");
  CHECK(reply_attached(false) == "0");
  CHECK(reply_console_output("hi\n") == std::vector<std::string>{"O68690a"});
  CHECK(reply_console_output("").empty());
  CHECK(reply_vcont_supported(";c;C;s;S;t") == "vCont;c;C;s;S;t");
  CHECK(reply_vcont_supported("c;C;s;S") == "vCont;c;C;s;S");
  CHECK(reply_vcont_supported("vCont;c;s") == "vCont;c;s");
}

TEST_CASE("console output for qRcmd fits PacketSize, whole lines together", "[replies]") {
  constexpr std::size_t kText = (RspLink::kMaxPayload - 1) / 2;  // text bytes a packet holds
  auto decode = [](const std::vector<std::string>& packets) {
    std::string text;
    for (const auto& p : packets) {
      REQUIRE(p.size() <= RspLink::kMaxPayload);
      REQUIRE(p.size() > 1);
      REQUIRE(p.front() == 'O');
      auto bytes = hex_decode(std::string_view(p).substr(1));
      REQUIRE(bytes);
      text.append(bytes->begin(), bytes->end());
    }
    return text;
  };
  // 300 lines of 60 bytes: 18,000 bytes in three packets, each ending a line.
  std::string lines;
  for (int i = 0; i < 300; ++i) lines += std::string(59, static_cast<char>('a' + i % 26)) + "\n";
  auto packets = reply_console_output(lines);
  CHECK(packets.size() == 3);
  CHECK(decode(packets) == lines);
  for (std::size_t i = 0; i + 1 < packets.size(); ++i) CHECK(packets[i].substr(packets[i].size() - 2) == "0a");
  // One line longer than a packet is cut at the packet's end.
  std::string long_line(kText * 2 + 10, 'x');
  auto cut = reply_console_output(long_line);
  CHECK(cut.size() == 3);
  CHECK(cut[0].size() == 1 + 2 * kText);
  CHECK(decode(cut) == long_line);
  // Exactly one packet's worth stays one packet.
  CHECK(reply_console_output(std::string(kText, 'y')).size() == 1);
  CHECK(reply_console_output(std::string(kText + 1, 'y')).size() == 2);
}

TEST_CASE("qXfer chunks", "[replies]") {
  const std::string doc = "0123456789";
  CHECK(reply_xfer_chunk(doc, 0, 4) == "m0123");
  CHECK(reply_xfer_chunk(doc, 4, 4) == "m4567");
  CHECK(reply_xfer_chunk(doc, 8, 4) == "l89");
  CHECK(reply_xfer_chunk(doc, 6, 4) == "l6789");
  CHECK(reply_xfer_chunk(doc, 0, 100) == "l0123456789");
  CHECK(reply_xfer_chunk(doc, 10, 4) == "l");
  CHECK(reply_xfer_chunk(doc, 1000, 4) == "l");
  CHECK(reply_xfer_chunk(doc, UINT64_MAX, UINT64_MAX) == "l");
  CHECK(reply_xfer_chunk("", 0, 10) == "l");
  CHECK(reply_xfer_chunk("a#b", 0, 2) == "ma}\x03");
  CHECK(reply_xfer_chunk("a#b", 1, 10) == "l}\x03" "b");
}

TEST_CASE("qXfer chunks stay within the packet size when escaped", "[replies]") {
  // Every byte needs escaping, so gdb's requested length would double.
  std::string doc(RspLink::kMaxPayload, '#');
  std::string reply = reply_xfer_chunk(doc, 0, RspLink::kMaxPayload);
  CHECK(reply.size() <= RspLink::kMaxPayload);
  CHECK(reply.front() == 'm');
  auto data = unescape_binary(reply.substr(1));
  REQUIRE(data.has_value());
  CHECK(data->size() == (RspLink::kMaxPayload - 1) / 2);
  CHECK(*data == doc.substr(0, data->size()));
  // The final chunk of an unescaped document fits whole.
  std::string plain(RspLink::kMaxPayload - 1, 'x');
  CHECK(reply_xfer_chunk(plain, 0, plain.size()) == "l" + plain);
}

TEST_CASE("register replies", "[replies]") {
  RegisterFile regs;
  CHECK(reply_register(regs, 0) == "xxxxxxxxxxxxxxxx");
  regs.set_u64(Amd64Reg::rip, 0x401136);
  CHECK(reply_register(regs, 16) == "3611400000000000");
  regs.set_u64(Amd64Reg::eflags, 0x246);
  CHECK(reply_register(regs, 17) == "46020000");
  CHECK(reply_register(regs, 24) == std::string(20, 'x'));
  CHECK(reply_register(regs, kAmd64RegisterCount).rfind("E.", 0) == 0);

  const RegisterLayout base(Amd64Features{});
  std::string all = reply_registers(regs, base);
  CHECK(all.size() == 560 * 2);
  CHECK(all.substr(0, 16) == std::string(16, 'x'));
  CHECK(all.substr(amd64_register_offset(16) * 2, 16) == "3611400000000000");
  CHECK(all.substr(amd64_register_offset(17) * 2, 8) == "46020000");
  regs.set_all_available(true);
  CHECK(reply_registers(regs, base).find('x') == std::string::npos);
  // With AVX the ymm upper halves follow gs_base; unavailable ones as xx.
  const RegisterLayout avx(Amd64Features{.avx = true});
  regs.set_available(static_cast<unsigned>(Amd64Reg::ymm0h) + 1, false);
  all = reply_registers(regs, avx);
  CHECK(all.size() == (560 + 16 * 16) * 2);
  CHECK(all.substr((560 + 16) * 2, 32) == std::string(32, 'x'));
  CHECK(all.substr(0, 560 * 2).find('x') == std::string::npos);
  CHECK(reply_memory({0xde, 0xad, 0x00}) == "dead00");
  CHECK(reply_memory({}).empty());
}

TEST_CASE("stop reply for a breakpoint", "[replies]") {
  StopReply stop;
  stop.signal = 5;
  stop.thread = ThreadId{0x1f, 0x1f};
  stop.reason = StopReason::SoftwareBreakpoint;
  stop.expedited = {{6, le64(0x7ffe0010)}, {7, le64(0x7ffe0000)}, {16, le64(0x401136)}};
  CHECK(reply_stop(stop, true) ==
        "T05"
        "06:1000fe7f00000000;07:0000fe7f00000000;10:3611400000000000;"
        "thread:p1f.1f;swbreak:;");
  stop.expedited.clear();
  CHECK(reply_stop(stop, false) == "T05thread:1f;swbreak:;");
}

TEST_CASE("stop reply reasons", "[replies]") {
  StopReply stop;
  stop.signal = 5;
  auto with = [&](StopReason reason) {
    stop.reason = reason;
    return reply_stop(stop, true);
  };
  CHECK(with(StopReason::None) == "T05");
  CHECK(with(StopReason::HardwareBreakpoint) == "T05hwbreak:;");
  stop.reason_addr = 0x7ffe0010;
  CHECK(with(StopReason::Watch) == "T05watch:7ffe0010;");
  CHECK(with(StopReason::ReadWatch) == "T05rwatch:7ffe0010;");
  CHECK(with(StopReason::AccessWatch) == "T05awatch:7ffe0010;");
  CHECK(with(StopReason::ReplayBegin) == "T05replaylog:begin;");
  CHECK(with(StopReason::ReplayEnd) == "T05replaylog:end;");
  stop.reason_text = "p20.20";
  CHECK(with(StopReason::Fork) == "T05fork:p20.20;");
  CHECK(with(StopReason::Vfork) == "T05vfork:p20.20;");
  CHECK(with(StopReason::VforkDone) == "T05vforkdone:;");
  stop.reason_text = "2f62696e2f6c73";
  CHECK(with(StopReason::Exec) == "T05exec:2f62696e2f6c73;");
  CHECK(with(StopReason::Create) == "T05create:;");
  stop.reason_addr = 0xe7;
  CHECK(with(StopReason::SyscallEntry) == "T05syscall_entry:e7;");
  CHECK(with(StopReason::SyscallReturn) == "T05syscall_return:e7;");
  stop.reason = StopReason::None;
  stop.signal = 0x0b;
  CHECK(reply_stop(stop, true) == "T0b");
}

TEST_CASE("exit, termination and other stop kinds", "[replies]") {
  StopReply exited;
  exited.kind = StopReply::Kind::Exited;
  exited.exit_code = 3;
  CHECK(reply_stop(exited, true) == "W03");
  exited.process = 0x1f;
  CHECK(reply_stop(exited, true) == "W03;process:1f");
  CHECK(reply_stop(exited, false) == "W03");

  StopReply killed;
  killed.kind = StopReply::Kind::Terminated;
  killed.signal = 9;
  killed.process = 0x1f;
  CHECK(reply_stop(killed, true) == "X09;process:1f");
  CHECK(reply_stop(killed, false) == "X09");

  StopReply thread_exit;
  thread_exit.kind = StopReply::Kind::ThreadExited;
  thread_exit.exit_code = 0;
  thread_exit.thread = ThreadId{0x1f, 0x21};
  CHECK(reply_stop(thread_exit, true) == "w00;p1f.21");
  CHECK(reply_stop(thread_exit, false) == "w00;21");

  StopReply none;
  none.kind = StopReply::Kind::NoResumed;
  CHECK(reply_stop(none, true) == "N");
}

TEST_CASE("vFile replies", "[replies]") {
  CHECK(reply_file_result(0) == "F0");
  CHECK(reply_file_result(0x1a) == "F1a");
  CHECK(reply_file_result(-1, 2) == "F-1,2");
  CHECK(reply_file_result(-1, 9999) == "F-1,270f");
  CHECK(reply_file_data(3, "a#b") == "F3;a}\x03" "b");
  CHECK(reply_file_data(0, "") == "F0;");
  // Escaped, no more than a packet holds (PacketSize): a short read.
  const std::string escapes(16384, '}');
  const std::string short_read = reply_file_data(16384, escapes);
  CHECK(short_read.size() <= RspLink::kMaxPayload);
  CHECK(short_read.substr(0, 6) == "F1ffd;");
  CHECK(unescape_binary(short_read.substr(6)) == std::string(0x1ffd, '}'));
  const std::string plain(16384, 'a');
  CHECK(reply_file_data(16384, plain) == "F3ffa;" + std::string(0x3ffa, 'a'));
  CHECK(reply_file_data(0x3ffa, plain.substr(0, 0x3ffa)) == "F3ffa;" + std::string(0x3ffa, 'a'));
}

TEST_CASE("File-I/O stat encoding is big-endian and 64 bytes", "[replies]") {
  FileioStat st;
  st.dev = 0x01020304;
  st.mode = 0100644;
  st.size = 0x1122334455667788ull;
  st.ctime = 0xaabbccdd;
  std::string raw = encode_fileio_stat(st);
  REQUIRE(raw.size() == 64);
  CHECK(hex_encode(raw.substr(0, 4)) == "01020304");
  CHECK(hex_encode(raw.substr(8, 4)) == "000081a4");
  CHECK(hex_encode(raw.substr(28, 8)) == "1122334455667788");
  CHECK(hex_encode(raw.substr(60, 4)) == "aabbccdd");
  CHECK(hex_encode(raw.substr(36, 24)) == std::string(48, '0'));
}

TEST_CASE("errno and open flag translation", "[replies]") {
  CHECK(host_errno_to_fileio(ENOENT) == 2);
  CHECK(host_errno_to_fileio(EACCES) == 13);
  CHECK(host_errno_to_fileio(ENAMETOOLONG) == 91);
  CHECK(host_errno_to_fileio(ENOSYS) == 9999);
  CHECK(fileio_open_flags_to_host(0) == O_RDONLY);
  CHECK(fileio_open_flags_to_host(1) == O_WRONLY);
  CHECK(fileio_open_flags_to_host(2) == O_RDWR);
  CHECK(fileio_open_flags_to_host(0x1 | 0x200 | 0x400) == (O_WRONLY | O_CREAT | O_TRUNC));
  CHECK(fileio_open_flags_to_host(0x2 | 0x8 | 0x800) == (O_RDWR | O_APPEND | O_EXCL));
  CHECK(fileio_open_flags_to_host(0x3) == -1);
  CHECK(fileio_open_flags_to_host(0x10000) == -1);
}

TEST_CASE("signal translation follows gdb's numbering", "[replies]") {
  const std::pair<int, int> pairs[] = {
      {SIGHUP, 1},   {SIGINT, 2},   {SIGTRAP, 5},  {SIGABRT, 6},  {SIGKILL, 9},  {SIGBUS, 10},
      {SIGSEGV, 11}, {SIGSYS, 12},  {SIGURG, 16},  {SIGSTOP, 17}, {SIGTSTP, 18}, {SIGCONT, 19},
      {SIGCHLD, 20}, {SIGIO, 23},   {SIGXCPU, 24}, {SIGWINCH, 28}, {SIGUSR1, 30}, {SIGUSR2, 31},
      {SIGPWR, 32},  {32, 77},      {33, 45},      {34, 46},      {63, 75},      {64, 78},
  };
  for (auto [host, gdb] : pairs) {
    INFO("host " << host << " gdb " << gdb);
    CHECK(host_signal_to_gdb(host) == gdb);
    CHECK(gdb_signal_to_host(gdb) == host);
  }
  CHECK(host_signal_to_gdb(0) == 0);
  CHECK(gdb_signal_to_host(0) == 0);
  CHECK(host_signal_to_gdb(SIGSTKFLT) == 143);
  CHECK(host_signal_to_gdb(200) == 143);
  CHECK(gdb_signal_to_host(7) == 0);    // SIGEMT: none on Linux
  CHECK(gdb_signal_to_host(33) == SIGPOLL);  // gdb's POLL: SIGIO here, as gdbserver maps it
  CHECK(host_signal_to_gdb(SIGPOLL) == 23);  // reported as gdb's IO
  CHECK(gdb_signal_to_host(143) == 0);
  for (int host = 1; host <= 64; ++host) {
    int gdb = host_signal_to_gdb(host);
    if (gdb != 143) CHECK(gdb_signal_to_host(gdb) == host);
  }
}

}  // namespace test_replies
