// SoftwareTracer, TraceStops::Breakpoint: running transfers without a stop
// of their own. A stop at every transfer is one per taken or not-taken
// branch; instead, at a conditional branch or a direct jmp/call, the tracer
// follows every way the thread can go through straight code, direct
// jmp/calls (always taken: nothing to learn there) and further conditional
// branches (both ways), a tree of hops, down to transfers it leaves for a
// stop (ret, indirect jump, or where the tree's bounds are reached), and
// arms those leaf ends. Where the thread next stops says which hop it is in,
// hence its path and every branch on it.
//
// Exact because the hops of a plan have distinct ends (hops with distinct
// ends cannot overlap: the end is the first transfer at or after any of
// their addresses), none ends at the entry (so none contains it), and all
// are straight code: any stop inside a hop, whatever its cause (trace int3,
// user breakpoint, signal, all-stop hold), says the entry and every hop end
// above it ran, and nothing after.
//
// Branches are stored with rsp/rbp as they were at the branch, which the
// stop no longer shows: hops below a stored branch may only push, pop or add
// to rsp and must leave rbp alone (BlockEnd::rsp_delta), so the values
// follow backwards from the stop's registers.
#include <algorithm>

#include "stub/tracing/software_tracer.h"
#include "stub/tracing/software_tracer_internal.h"

namespace stub::tracing {

using namespace tracer_detail;

namespace {

// Bounds on a plan: its hops, and how many transfers deep it runs.
constexpr std::size_t kMaxHops = 12;
constexpr int kMaxDepth = 6;

bool int3_site(const BlockEnd& end) { return end.kind == BlockEnd::Kind::Transfer && emulable(end.insn); }

bool conditional(const decoder::Instruction& insn) {
  return insn.kind == decoder::ControlKind::ConditionalJump && insn.target && emulable(insn);
}

bool direct_taken(const decoder::Instruction& insn) {
  return (insn.kind == decoder::ControlKind::Jump || insn.kind == decoder::ControlKind::Call) && insn.target &&
         !insn.operand_size_override;
}

bool contains(const std::vector<uint64_t>& addrs, uint64_t addr) {
  return std::find(addrs.begin(), addrs.end(), addr) != addrs.end();
}

}  // namespace

// Adds the hop starting at `start` and, where its end can be run past, the
// hops below it; returns its index, or -1 (nothing added) when not even a
// leaf fits there. `used` holds the plan's hop ends (and the entry): hops
// with distinct ends never overlap. A hop needs a known rsp_delta when a
// stored branch lies above it (or leads into it).
int SoftwareTracer::add_hops(Lookahead& plan, uint64_t start, int parent, bool taken_edge, bool needs_rsp,
                             int depth, std::vector<uint64_t>& used, decoder::CodeReader& code) {
  if (plan.hops.size() >= kMaxHops) return -1;
  const BlockEnd end = blocks_.block_end(start, code);  // a copy: block_end may rehash
  if (end.kind != BlockEnd::Kind::Transfer || contains(used, end.address) || (needs_rsp && !end.rsp_delta)) {
    return -1;
  }
  // Code a store changes is stepped (ensure_code_map), never run past.
  if (meets(writable_code_, start, end.address + decoder::kMaxInstructionSize)) return -1;
  const int index = static_cast<int>(plan.hops.size());
  plan.hops.push_back(Hop{start, end.address, parent, taken_edge, end.insn.kind == decoder::ControlKind::Call, true,
                          end.rsp_delta.value_or(0)});
  used.push_back(end.address);
  const std::size_t hops_mark = plan.hops.size(), used_mark = used.size();
  const bool deeper = depth + 1 < kMaxDepth && must_stop_.count(end.address) == 0;
  bool below = false;
  if (deeper && direct_taken(end.insn)) {
    below = add_hops(plan, *end.insn.target, index, true, true, depth + 1, used, code) >= 0;
  } else if (deeper && conditional(end.insn)) {
    below = add_hops(plan, *end.insn.target, index, true, true, depth + 1, used, code) >= 0 &&
            add_hops(plan, end.insn.next_address(), index, false, needs_rsp, depth + 1, used, code) >= 0;
  }
  if (below) {
    plan.hops[index].leaf = false;
    return index;
  }
  plan.hops.resize(hops_mark);
  used.resize(used_mark);
  // A leaf: its end is armed, so it must take an int3 no plan runs past.
  if (int3_site(end) && passed_.count(end.address) == 0) return index;
  plan.hops.pop_back();
  used.pop_back();
  return -1;
}

std::shared_ptr<const SoftwareTracer::Lookahead> SoftwareTracer::plan_past(const decoder::Instruction& entry,
                                                                         decoder::CodeReader& code) {
  if (auto known = plans_.find(entry.address); known != plans_.end()) return known->second;
  std::shared_ptr<Lookahead> plan;
  const bool jcc = conditional(entry);
  if ((jcc || direct_taken(entry)) && must_stop_.count(entry.address) == 0) {
    plan = std::make_shared<Lookahead>();
    plan->entry = entry.address;
    plan->entry_is_call = entry.kind == decoder::ControlKind::Call;
    std::vector<uint64_t> used{entry.address};
    bool ok = add_hops(*plan, *entry.target, -1, true, true, 0, used, code) >= 0;
    if (ok && jcc) ok = add_hops(*plan, entry.next_address(), -1, false, false, 0, used, code) >= 0;
    if (!ok) plan.reset();
  }
  if (plan) {
    passed_.insert(plan->entry);
    for (const Hop& hop : plan->hops) {
      if (hop.leaf) {
        must_stop_.insert(hop.end);
        plan->leaves.push_back(hop.end);
      } else {
        passed_.insert(hop.end);
      }
    }
  }
  return plans_[entry.address] = std::move(plan);
}

bool SoftwareTracer::arm_past(TracedThreadControl& control, ThreadState& t, pid_t tid,
                              const decoder::Instruction& entry) {
  if (stops_ != TraceStops::Breakpoint || !t.trace) return false;
  if (meets(writable_code_, entry.address, entry.next_address())) return false;
  // Under the stop policy the branches must fit before they run: they are
  // stored only at the next stop, with no chance to stop the thread before.
  if (t.trace->policy() == decoder::OverflowPolicy::Stop && !t.trace->has_room(kMaxHops + 2)) {
    return false;
  }
  ControlMemory code(control);
  std::shared_ptr<const Lookahead> plan = plan_past(entry, code);
  if (!plan) return false;
  if (!arm_all(control, t, tid, plan->leaves)) return false;
  t.lookahead = std::move(plan);
  return true;
}

void SoftwareTracer::settle_lookahead(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc) {
  if (!t.lookahead) return;
  const std::shared_ptr<const Lookahead> shared = std::move(t.lookahead);
  t.lookahead.reset();
  const Lookahead& plan = *shared;
  int at = -1;  // the hop the thread is in
  for (std::size_t i = 0; i < plan.hops.size(); ++i) {
    if (pc >= plan.hops[i].begin && pc <= plan.hops[i].end) at = static_cast<int>(i);
  }
  if (at < 0) return;  // still before the entry
  int depth = 0;
  for (int h = at; h >= 0; h = plan.hops[h].parent) ++depth;
  stats_.looked_past += depth;  // the entry and each hop end above
  auto regs = control.read_general_registers(tid);
  if (!regs) return;  // the thread is gone with its registers
  ControlMemory code(control);
  const decoder::StackSnapshot now = stack_of(*regs);
  // rsp at the start of the current hop: only what ran before the pc counts.
  uint64_t rsp = now.rsp;
  for (uint64_t addr = plan.hops[at].begin; addr < pc;) {
    auto insn = blocks_.instruction_at(addr, code);
    if (!insn) break;
    rsp -= static_cast<uint64_t>(plain_rsp_delta(*insn).value_or(0));
    addr = insn->next_address();
  }
  // Up the tree: each hop entered by a taken branch stores it, with rsp as
  // before that transfer (+8 undoes a call's push).
  struct Taken {
    uint64_t from, to, rsp;
  };
  std::vector<Taken> taken;
  for (int h = at; h >= 0;) {
    const Hop& hop = plan.hops[h];
    const bool from_entry = hop.parent < 0;
    const uint64_t from = from_entry ? plan.entry : plan.hops[hop.parent].end;
    const bool by_call = from_entry ? plan.entry_is_call : plan.hops[hop.parent].end_is_call;
    if (hop.taken_edge) {
      rsp += by_call ? 8 : 0;
      taken.push_back(Taken{from, hop.begin, rsp});
    }
    if (from_entry) break;
    h = hop.parent;
    rsp -= static_cast<uint64_t>(plan.hops[h].rsp_delta);
  }
  for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
    store(t, it->from, it->to, decoder::StackSnapshot{it->rsp, now.rbp});
  }
}

void SoftwareTracer::on_held(TracedThreadControl& control, pid_t tid) {
  ThreadState* t = state(tid);
  if (t == nullptr || !t->lookahead) return;
  auto regs = control.read_general_registers(tid);
  if (regs) settle_lookahead(control, *t, tid, pc_of(*regs));
}

}  // namespace stub::tracing
