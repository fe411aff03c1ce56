// Non-stop mode on the wire: QNonStop, vStopped, vCtrlC, vCont;t, the
// `%Stop:` notification framing and the queue of stop replies.
#include <catch2/catch.hpp>

#include "parse_helpers.h"
#include "protocol/requests.h"
#include "protocol/rsp_link.h"
#include "protocol/stop_notifications.h"

namespace test_non_stop {  // this file's own names, apart in a unity build

using namespace protocol;

using test::parse_as;
using test::require_bad;

TEST_CASE("QNonStop parses mode 0 and 1 only", "[requests][nonstop]") {
  CHECK(parse_as<SetNonStop>("QNonStop:1").enable);
  CHECK_FALSE(parse_as<SetNonStop>("QNonStop:0").enable);
  for (const char* bad : {"QNonStop", "QNonStop:", "QNonStop:2", "QNonStop:10", "QNonStop;1"}) require_bad(bad);
}

TEST_CASE("vStopped and vCtrlC take no arguments", "[requests][nonstop]") {
  parse_as<StopNotificationAck>("vStopped");
  parse_as<InterruptRequest>("vCtrlC");
  require_bad("vStopped;1");
  require_bad("vCtrlC:1");
}

TEST_CASE("vCont;t stops one thread, other actions go to the rest", "[requests][nonstop]") {
  auto req = parse_as<Resume>("vCont;t:p1477.1535");
  REQUIRE(req.actions.size() == 1);
  CHECK(req.actions[0].action == ResumeAction::Stop);
  REQUIRE(req.actions[0].thread);
  CHECK(req.actions[0].thread->tid == 0x1535);
  auto mixed = parse_as<Resume>("vCont;s:p1477.1477;c");
  REQUIRE(mixed.actions.size() == 2);
  CHECK(mixed.actions[0].action == ResumeAction::Step);
  CHECK(mixed.actions[1].action == ResumeAction::Continue);
  CHECK_FALSE(mixed.actions[1].thread);
}

TEST_CASE("a notification is framed with '%' and never retransmitted", "[rsp][nonstop]") {
  RspLink link;
  link.send("OK");
  link.send_notification("Stop:T05thread:p1.1;");
  CHECK(link.take_output() == "$OK#9a" + std::string("%Stop:T05thread:p1.1;#") +
                                  frame("Stop:T05thread:p1.1;").substr(frame("Stop:T05thread:p1.1;").size() - 2));
  link.receive("-");
  (void)link.next();
  CHECK(link.take_output() == "$OK#9a");  // the last reply, not the notification
}

TEST_CASE("stop replies queue: the first notifies, vStopped drains the rest", "[nonstop]") {
  StopNotifications queue;
  CHECK(queue.acknowledge() == "OK");  // nothing queued: OK, as gdbserver
  auto sent = queue.push("T05thread:p1.1;");
  REQUIRE(sent);
  CHECK(*sent == "Stop:T05thread:p1.1;");
  CHECK_FALSE(queue.push("T00thread:p1.2;"));  // the client still has the first to ack
  CHECK_FALSE(queue.push("W00;process:1"));
  CHECK(queue.acknowledge() == "T00thread:p1.2;");
  CHECK(queue.acknowledge() == "W00;process:1");
  CHECK(queue.acknowledge() == "OK");
  CHECK(queue.empty());
  // Empty again: the next stop notifies again.
  CHECK(queue.push("T05thread:p1.1;"));
}

TEST_CASE("`?` queues without notifying; a kill keeps only the stop already sent", "[nonstop]") {
  StopNotifications queue;
  CHECK(queue.head_or_ok() == "OK");
  queue.enqueue("T05thread:p1.1;");
  queue.enqueue("T00thread:p1.2;");
  CHECK(queue.head_or_ok() == "T05thread:p1.1;");
  queue.discard_unsent();
  CHECK(queue.size() == 1);
  CHECK(queue.acknowledge() == "OK");
}

// gdbserver's discard_queued_stop_replies (ptid_t (pid)): a vKill or D of
// one process drops its own unsent stops only.
TEST_CASE("a kill of one process drops that process's unsent stops, not the others'", "[nonstop]") {
  StopNotifications queue;
  CHECK(queue.push("T05thread:p1.1;", 1, 1).has_value());  // sent: stays for its vStopped
  (void)queue.push("T00thread:p1.2;", 2, 1);
  (void)queue.push("T05thread:p7.7;", 7, 7);
  (void)queue.push("W00;process:1", 0, 1);
  (void)queue.push("N");
  queue.discard_unsent(1);
  CHECK(queue.head_or_ok() == "T05thread:p1.1;");
  CHECK(queue.acknowledge() == "T05thread:p7.7;");
  CHECK(queue.acknowledge() == "N");
  CHECK(queue.acknowledge() == "OK");
}

TEST_CASE("the queue knows which threads have a stop the client has not acknowledged", "[nonstop]") {
  StopNotifications queue;
  (void)queue.push("T05thread:p1.1;", 1);
  queue.enqueue("T00thread:p1.2;", 2);
  CHECK(queue.holds(1));
  CHECK(queue.holds(2));
  CHECK_FALSE(queue.holds(3));
  CHECK_FALSE(queue.holds(0));
  (void)queue.acknowledge();
  CHECK_FALSE(queue.holds(1));
  CHECK(queue.holds(2));
}

}  // namespace test_non_stop
