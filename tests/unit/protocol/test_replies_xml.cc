// XML qXfer documents (threads) and the stop replies of the
// multi-threading / fork / exec events.
#include <catch2/catch.hpp>

#include "protocol/replies.h"

namespace test_replies_xml {  // this file's own names, apart in a unity build

using namespace protocol;

TEST_CASE("xml_escape", "[replies][xml]") {
  CHECK(xml_escape("plain text 123") == "plain text 123");
  CHECK(xml_escape("") == "");
  CHECK(xml_escape("a&b<c>d\"e'f") == "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  CHECK(xml_escape("&amp;") == "&amp;amp;");
  // Non-ASCII bytes pass through: gdb reads the document as UTF-8.
  CHECK(xml_escape("caf\xc3\xa9") == "caf\xc3\xa9");
}

TEST_CASE("threads document", "[replies][xml]") {
  std::vector<ThreadInfo> threads = {
      {ThreadId{0x1f, 0x1f}, "prog", 0},
      {ThreadId{0x1f, 0x20}, "worker", 1},
  };
  CHECK(threads_xml(threads, true) ==
        "<?xml version=\"1.0\"?>\n"
        "<threads>\n"
        "<thread id=\"p1f.1f\" core=\"0\" name=\"prog\"/>\n"
        "<thread id=\"p1f.20\" core=\"1\" name=\"worker\"/>\n"
        "</threads>\n");
  CHECK(threads_xml(threads, false) ==
        "<?xml version=\"1.0\"?>\n"
        "<threads>\n"
        "<thread id=\"1f\" core=\"0\" name=\"prog\"/>\n"
        "<thread id=\"20\" core=\"1\" name=\"worker\"/>\n"
        "</threads>\n");
}

TEST_CASE("threads document omits unknown core and name and escapes names", "[replies][xml]") {
  CHECK(threads_xml({{ThreadId{0x10, 0x11}, "", -1}}, true) ==
        "<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"p10.11\"/>\n</threads>\n");
  CHECK(threads_xml({{ThreadId{0x10, 0x11}, "", 12}}, true) ==
        "<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"p10.11\" core=\"12\"/>\n</threads>\n");
  CHECK(threads_xml({{ThreadId{0x10, 0x11}, "a<b>&\"c'", -1}}, true) ==
        "<?xml version=\"1.0\"?>\n<threads>\n"
        "<thread id=\"p10.11\" name=\"a&lt;b&gt;&amp;&quot;c&apos;\"/>\n"
        "</threads>\n");
  CHECK(threads_xml({}, true) == "<?xml version=\"1.0\"?>\n<threads>\n</threads>\n");
}

TEST_CASE("fork and vfork stop replies name the child as a thread id", "[replies][events]") {
  StopReply stop;
  stop.signal = 5;
  stop.thread = ThreadId{0x1f, 0x1f};
  stop.reason = StopReason::Fork;
  stop.child = ThreadId{0x20, 0x20};
  CHECK(reply_stop(stop, true) == "T05thread:p1f.1f;fork:p20.20;");
  stop.reason = StopReason::Vfork;
  CHECK(reply_stop(stop, true) == "T05thread:p1f.1f;vfork:p20.20;");
  // The child follows the same multiprocess choice as the rest of the reply.
  CHECK(reply_stop(stop, false) == "T05thread:1f;vfork:20;");
  // The structured child wins over the older free-text field.
  stop.reason_text = "ignored";
  CHECK(reply_stop(stop, true) == "T05thread:p1f.1f;vfork:p20.20;");
  stop.reason = StopReason::VforkDone;
  stop.child.reset();
  stop.reason_text.clear();
  CHECK(reply_stop(stop, true) == "T05thread:p1f.1f;vforkdone:;");
}

TEST_CASE("exec, create and thread-exit stop replies", "[replies][events]") {
  StopReply stop;
  stop.signal = 5;
  stop.thread = ThreadId{0x1f, 0x1f};
  stop.reason = StopReason::Exec;
  stop.exec_path = "/bin/ls";
  CHECK(reply_stop(stop, true) == "T05thread:p1f.1f;exec:2f62696e2f6c73;");
  // A path with protocol characters is still plain hex on the wire.
  stop.exec_path = "/tmp/a#b";
  CHECK(reply_stop(stop, true) == "T05thread:p1f.1f;exec:2f746d702f612362;");

  StopReply create;
  create.signal = 5;
  create.thread = ThreadId{0x1f, 0x21};
  create.reason = StopReason::Create;
  CHECK(reply_stop(create, true) == "T05thread:p1f.21;create:;");

  StopReply exited;
  exited.kind = StopReply::Kind::ThreadExited;
  exited.exit_code = 0x2a;
  exited.thread = ThreadId{0x1f, 0x21};
  CHECK(reply_stop(exited, true) == "w2a;p1f.21");
  CHECK(reply_stop(exited, false) == "w2a;21");
}

}  // namespace test_replies_xml
