// ProcessGroup against FakeProcesses: which process's event is reported,
// all-stop across processes, and what the group owns.
#include <catch2/catch.hpp>
#include <csignal>
#include <memory>

#include "fake_process.h"
#include "stub/process/process_group.h"

namespace test_process_group {  // this file's own names, apart in a unity build

namespace {

// A FakeProcess that logs stop_all and can claim a kept event.
class GroupMember : public test::FakeProcess {
 public:
  explicit GroupMember(pid_t pid, std::vector<std::string>* shared = nullptr) : shared_log(shared) {
    pid_ = pid;
    threads_ = {pid};
  }
  ~GroupMember() override {
    if (shared_log != nullptr) shared_log->push_back("destroyed " + std::to_string(pid_));
  }
  void stop_all() override { log.push_back("stop_all"); }
  bool has_pending_event() const override { return kept; }
  bool kept = false;
  std::vector<std::string>* shared_log;
};

stub::process::ProcessEvent stop_of(pid_t tid) {
  stub::process::ProcessEvent event;
  event.tid = tid;
  event.signal = SIGTRAP;
  return event;
}

// The program (pid 100) and a fork child (200) the group owns.
struct ParentAndChild {
  GroupMember parent{100};
  stub::process::ProcessGroup group;
  GroupMember& child = start();  // after group: members start in this order

  GroupMember& start() {
    auto owned = std::make_unique<GroupMember>(200);
    GroupMember& made = *owned;
    group.reset(&parent);
    group.add(std::move(owned));
    return made;
  }
};

}  // namespace

TEST_CASE("an event of one process names it and stops every other one", "[group]") {
  ParentAndChild f;
  auto& [parent, group, child] = f;
  child.events.push_back(stop_of(200));

  auto event = group.poll_event();
  REQUIRE(event.has_value());
  CHECK(event->pid == 200);
  CHECK(parent.log == std::vector<std::string>{"stop_all"});
  CHECK(child.log.empty());
  CHECK_FALSE(group.poll_event().has_value());
  CHECK(group.owner_of(200) == &child);
  CHECK(group.find(100) == &parent);
}

TEST_CASE("an event kept while stopping all is reported before newer ones", "[group]") {
  ParentAndChild f;
  auto& [parent, group, child] = f;
  parent.events.push_back(stop_of(100));  // e.g. the parent's exit after resuming
  stub::process::ProcessEvent exited;
  exited.kind = stub::process::ProcessEvent::Kind::Exited;
  exited.tid = 200;
  child.events.push_back(exited);
  child.kept = true;  // the child's exit was met while it was being stopped

  auto first = group.poll_event();
  REQUIRE(first.has_value());
  CHECK(first->pid == 200);
  CHECK(first->kind == stub::process::ProcessEvent::Kind::Exited);
  child.kept = false;
  auto second = group.poll_event();
  REQUIRE(second.has_value());
  CHECK(second->pid == 100);
}

TEST_CASE("removing or resetting drops the fork children the group owns, never the program", "[group]") {
  std::vector<std::string> log;
  GroupMember parent(100, &log);
  stub::process::ProcessGroup group;
  group.reset(&parent);
  auto child = std::make_unique<GroupMember>(200, &log);
  stub::process::Process* child_ptr = child.get();
  group.add(std::move(child));
  group.add(std::make_unique<GroupMember>(300, &log));
  group.remove(child_ptr);
  CHECK(log == std::vector<std::string>{"destroyed 200"});
  group.remove(&parent);
  CHECK(group.live().size() == 1);
  group.reset(nullptr);
  CHECK(log == std::vector<std::string>{"destroyed 200", "destroyed 300"});
  CHECK(group.empty());
}

}  // namespace test_process_group
