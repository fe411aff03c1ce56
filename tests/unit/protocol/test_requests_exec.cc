// parse_request(): registers, memory, breakpoints, execution control, kill,
// detach and vFile.
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/requests.h"

namespace test_requests_exec {  // this file's own names, apart in a unity build

using namespace protocol;

namespace {

using test::parse_as;
using test::require_bad;

using Bytes = std::vector<uint8_t>;

}  // namespace

TEST_CASE("register packets", "[requests]") {
  parse_as<ReadAllRegisters>("g");
  CHECK(parse_as<WriteAllRegisters>("G0102ff").bytes == Bytes{1, 2, 0xff});
  CHECK(parse_as<ReadRegister>("p10").regnum == 0x10);
  CHECK(parse_as<ReadRegister>("p3B").regnum == 0x3b);
  auto w = parse_as<WriteRegister>("P10=efbeadde00000000");
  CHECK(w.regnum == 0x10);
  CHECK(w.bytes == Bytes{0xef, 0xbe, 0xad, 0xde, 0, 0, 0, 0});
  for (const char* bad : {"g0", "G", "G0", "G0g", "p", "px", "p-1", "p100000000", "P", "P10",
                          "P10=", "P=00", "P10=0", "P10:00", "Pzz=00"})
    require_bad(bad);
}

TEST_CASE("memory reads", "[requests]") {
  auto m = parse_as<ReadMemory>("m7ffff7dd1000,40");
  CHECK(m.addr == 0x7ffff7dd1000);
  CHECK(m.length == 0x40);
  auto top = parse_as<ReadMemory>("mffffffffffffffff,1");
  CHECK(top.addr == UINT64_MAX);
  for (const char* bad : {"m", "m1000", "m1000,", "m,4", "m1000;4", "mxyz,4", "m1000,4x",
                          "m10000000000000000,1", "m1000,4,5"})
    require_bad(bad);
}

TEST_CASE("M writes hex data whose length must match", "[requests]") {
  auto w = parse_as<WriteMemory>("M401000,3:cc90C3");
  CHECK(w.addr == 0x401000);
  CHECK(w.bytes == Bytes{0xcc, 0x90, 0xc3});
  CHECK(parse_as<WriteMemory>("M401000,0:").bytes.empty());
  for (const char* bad : {"M401000,3", "M401000,2:cc90c3", "M401000,3:cc90", "M401000,1:c",
                          "M401000,1:zz", "M,1:cc", "M401000:cc"})
    require_bad(bad);
}

TEST_CASE("X writes escaped binary data", "[requests]") {
  // "}\x03" is '#' escaped, "}\x04" is '$', "}]" is '}', "}\x0a" is '*'.
  std::string payload = std::string("X1000,6:a}\x03}\x04}]}\x0a") + '\0';
  auto w = parse_as<WriteMemory>(payload);
  CHECK(w.addr == 0x1000);
  CHECK(w.bytes == Bytes{'a', '#', '$', '}', '*', 0});
  auto probe = parse_as<WriteMemory>("X401000,0:");
  CHECK(probe.addr == 0x401000);
  CHECK(probe.bytes.empty());
  // ':' inside binary data is data, not a separator.
  CHECK(parse_as<WriteMemory>("X10,2:::").bytes == Bytes{':', ':'});
  for (const char* bad : {"X1000,1:}", "X1000,2:a", "X1000,0:a", "X1000,1", "X,1:a", "Xg,1:a"})
    require_bad(bad);
}

TEST_CASE("Z and z breakpoints", "[requests]") {
  auto sw = parse_as<InsertBreakpoint>("Z0,401136,1");
  CHECK(sw.type == BreakpointType::Software);
  CHECK(sw.addr == 0x401136);
  CHECK(sw.kind == 1);
  auto hw = parse_as<RemoveBreakpoint>("z1,401136,1");
  CHECK(hw.type == BreakpointType::Hardware);
  CHECK(parse_as<InsertBreakpoint>("Z2,7ffe0010,8").type == BreakpointType::WriteWatch);
  CHECK(parse_as<InsertBreakpoint>("Z3,7ffe0010,4").type == BreakpointType::ReadWatch);
  auto access = parse_as<RemoveBreakpoint>("z4,7ffe0010,2");
  CHECK(access.type == BreakpointType::AccessWatch);
  CHECK(access.kind == 2);
  // Conditions and commands are not advertised: refused, not ignored (the
  // breakpoint would stop unconditionally).
  for (const char* bad : {"Z", "Z0", "Z0,", "Z0,401136", "Z0,401136,", "Z0,,1", "Zx,1,1",
                          "Z0,zz,1", "Z0,1,zz", "z0,10000000000000000,1", "Z0,1,1x",
                          "Z0,401136,1;X3,220027", "Z0,401136,1;cmds:0,X3,220027", "Z1,401136,1;"})
    require_bad(bad);
}

TEST_CASE("legacy continue and step", "[requests]") {
  auto c = parse_as<Resume>("c");
  REQUIRE(c.actions.size() == 1);
  CHECK(c.actions[0].action == ResumeAction::Continue);
  CHECK(c.actions[0].signal == 0);
  CHECK_FALSE(c.actions[0].thread.has_value());
  CHECK(c.direction == Direction::Forward);
  CHECK_FALSE(c.resume_addr.has_value());

  CHECK(parse_as<Resume>("c401000").resume_addr == 0x401000);
  auto s = parse_as<Resume>("s");
  CHECK(s.actions.at(0).action == ResumeAction::Step);

  auto sig = parse_as<Resume>("C0b");
  CHECK(sig.actions.at(0).action == ResumeAction::Continue);
  CHECK(sig.actions.at(0).signal == 0xb);
  CHECK_FALSE(sig.resume_addr.has_value());
  auto sig_addr = parse_as<Resume>("S05;401000");
  CHECK(sig_addr.actions.at(0).action == ResumeAction::Step);
  CHECK(sig_addr.actions.at(0).signal == 5);
  CHECK(sig_addr.resume_addr == 0x401000);
  for (const char* bad : {"cx", "c;1", "C", "Cxx", "C05;", "C05;zz", "S100", "s10000000000000000"})
    require_bad(bad);
}

TEST_CASE("vCont actions", "[requests]") {
  auto r = parse_as<Resume>("vCont;s:p1f.20;C0b:p1f.21;t:22;c");
  CHECK(r.direction == Direction::Forward);
  REQUIRE(r.actions.size() == 4);
  CHECK(r.actions[0].action == ResumeAction::Step);
  CHECK(r.actions[0].thread == ThreadId{0x1f, 0x20});
  CHECK(r.actions[1].action == ResumeAction::Continue);
  CHECK(r.actions[1].signal == 0xb);
  CHECK(r.actions[1].thread == ThreadId{0x1f, 0x21});
  CHECK(r.actions[2].action == ResumeAction::Stop);
  CHECK(r.actions[2].thread == ThreadId{0, 0x22});
  CHECK(r.actions[3].action == ResumeAction::Continue);
  CHECK_FALSE(r.actions[3].thread.has_value());

  auto stepsig = parse_as<Resume>("vCont;S05");
  CHECK(stepsig.actions.at(0).action == ResumeAction::Step);
  CHECK(stepsig.actions.at(0).signal == 5);
  CHECK_FALSE(stepsig.actions.at(0).thread.has_value());
  CHECK(parse_as<Resume>("vCont;c:-1").actions.at(0).thread->is_all());

  for (const char* bad : {"vCont", "vCont;", "vCont;c;", "vCont;x", "vCont;cc", "vCont;C",
                          "vCont;Czz", "vCont;c:", "vCont;c:zz", "vCont;r1000,2000", "vCont:c",
                          "vCont;s:p1.2;;c"})
    require_bad(bad);
  // A signal with no host number is refused, as gdbserver does; C00 and
  // gdb's POLL (SIGIO here) are not.
  for (const char* no_host : {"vCont;C07", "vCont;S8f", "vCont;c:p1.2;C07:p1.3"}) require_bad(no_host);
  CHECK(parse_as<Resume>("vCont;C00").actions.at(0).signal == 0);
  CHECK(parse_as<Resume>("vCont;C21").actions.at(0).signal == 0x21);
  // Legacy C and S keep gdbserver's way there: the signal is dropped, not
  // refused (so their canonical vCont form parses too; fuzz_requests).
  CHECK(parse_as<Resume>("C07").actions.at(0).signal == 0);
  CHECK(parse_as<Resume>("Sbc").actions.at(0).signal == 0);
  CHECK(parse_as<Resume>("C0a").actions.at(0).signal == 0xa);
}

TEST_CASE("bc and bs resume in reverse", "[requests]") {
  auto bc = parse_as<Resume>("bc");
  CHECK(bc.direction == Direction::Reverse);
  REQUIRE(bc.actions.size() == 1);
  CHECK(bc.actions[0].action == ResumeAction::Continue);
  CHECK_FALSE(bc.actions[0].thread.has_value());
  auto bs = parse_as<Resume>("bs");
  CHECK(bs.direction == Direction::Reverse);
  CHECK(bs.actions.at(0).action == ResumeAction::Step);
  require_bad("bcx");
  require_bad("bs1");
}

TEST_CASE("kill and detach", "[requests]") {
  CHECK_FALSE(parse_as<Kill>("k").pid.has_value());
  CHECK(parse_as<Kill>("vKill;1f").pid == 0x1f);
  CHECK_FALSE(parse_as<Detach>("D").pid.has_value());
  CHECK(parse_as<Detach>("D;7b").pid == 0x7b);
  for (const char* bad : {"k1", "vKill", "vKill;", "vKill;zz", "D1", "D;", "D;zz", "D;1,2"})
    require_bad(bad);
}

TEST_CASE("vFile operations", "[requests]") {
  // "/etc/passwd" hex-encoded
  auto open = parse_as<FileOpen>("vFile:open:2f6574632f706173737764,0,1a4");
  CHECK(open.path == "/etc/passwd");
  CHECK(open.flags == 0);
  CHECK(open.mode == 0x1a4);
  CHECK(parse_as<FileOpen>("vFile:open:2f,601,0").flags == 0x601);
  CHECK(parse_as<FileClose>("vFile:close:5").fd == 5);
  auto pread = parse_as<FilePread>("vFile:pread:5,3fff,1a000");
  CHECK(pread.fd == 5);
  CHECK(pread.count == 0x3fff);
  CHECK(pread.offset == 0x1a000);
  CHECK(parse_as<FileFstat>("vFile:fstat:a").fd == 10);
  CHECK(parse_as<FileSetFs>("vFile:setfs:0").pid == 0);
  CHECK(parse_as<FileSetFs>("vFile:setfs:1f").pid == 0x1f);
  CHECK(parse_as<FileReadlink>("vFile:readlink:2f70726f632f312f657865").path == "/proc/1/exe");
  CHECK(parse_as<FileUnlink>("vFile:unlink:2f746d702f78").path == "/tmp/x");

  for (const char* bad : {"vFile", "vFile:", "vFile:open", "vFile:open:", "vFile:open:2f,0",
                          "vFile:open:2f,0,0,0", "vFile:open:2,0,0", "vFile:open:zz,0,0",
                          "vFile:open:2f00,0,0", "vFile:open:,0,0", "vFile:open:2f,x,0",
                          "vFile:open:2f,0,100000000", "vFile:open:2f,0,-1c0", "vFile:open:2f,-1,0",
                          "vFile:close:", "vFile:close:-1",
                          "vFile:close:1,2", "vFile:pread:5,10", "vFile:pread:5,10,x",
                          "vFile:pread:5,10000000000000000,0", "vFile:fstat:q", "vFile:setfs:",
                          "vFile:setfs:-1", "vFile:readlink:", "vFile:unlink:2g"})
    require_bad(bad);
}

TEST_CASE("vFile:pwrite carries escaped binary data", "[requests]") {
  auto w = parse_as<FilePwrite>("vFile:pwrite:6,0,new contents\n");
  CHECK(w.fd == 6);
  CHECK(w.offset == 0);
  CHECK(w.data == "new contents\n");
  // '}' escapes (the bytes '#', '$', '}', '*' come as '}' + byte ^ 0x20);
  // ',' and ':' and NUL in the data are data.
  auto escaped = parse_as<FilePwrite>(std::string("vFile:pwrite:a,4000,}\x03}\x04}]}\x0a,:") + '\0' + "z");
  CHECK(escaped.fd == 10);
  CHECK(escaped.offset == 0x4000);
  CHECK(escaped.data == std::string("#$}*,:\0z", 8));
  // gdb never sends an empty write, gdbserver writes 0 bytes; so do we.
  CHECK(parse_as<FilePwrite>("vFile:pwrite:1,ff,").data.empty());
  CHECK(parse_as<FilePwrite>("vFile:pwrite:1,ffffffffffffffff,x").offset == 0xffffffffffffffffu);

  for (const char* bad : {"vFile:pwrite", "vFile:pwrite:", "vFile:pwrite:1", "vFile:pwrite:1,0",
                          "vFile:pwrite:,0,x", "vFile:pwrite:1,,x", "vFile:pwrite:-1,0,x", "vFile:pwrite:q,0,x",
                          "vFile:pwrite:1,10000000000000000,x", "vFile:pwrite:1,-1,x", "vFile:pwrite:1,0,abc}",
                          "vFile:pwrite:100000000,0,x"})
    require_bad(bad);
}

TEST_CASE("vFile:unlink takes one hex path", "[requests]") {
  CHECK(parse_as<FileUnlink>("vFile:unlink:2f746d702f76662f6578697374696e672e747874").path == "/tmp/vf/existing.txt");
  CHECK(parse_as<FileUnlink>("vFile:unlink:2E").path == ".");
  // No path, odd digits, an embedded NUL (the OS would cut the path there),
  // anything after the path.
  for (const char* bad : {"vFile:unlink", "vFile:unlink:", "vFile:unlink:2", "vFile:unlink:2f00",
                          "vFile:unlink:2f,0", "vFile:unlink:2f2g", "vFile:unlink:2f:"})
    require_bad(bad);
}

}  // namespace test_requests_exec
