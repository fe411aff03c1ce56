// SoftwareTracer, TraceStops::Breakpoint: running transfers without a stop
// of their own. A stop at every transfer is one per taken or not-taken
// branch; instead, at a conditional branch or a direct jmp/call, the tracer
// follows each way the thread can go (its routes) through straight code and
// further direct jmp/calls (always taken, so nothing to learn there) to a
// transfer that needs the thread's registers (a jcc, ret, indirect jump...),
// and arms those ends. Where the thread next stops tells which route it took
// and how far it got.
//
// Exact because every hop [begin, end] of a plan has its own end (hops with
// distinct ends cannot overlap: the end is the first transfer at or after
// any of their addresses), none ends at the entry (so none contains it), and
// all are straight code: any stop inside a hop, whatever its cause (trace
// int3, user breakpoint, signal, all-stop hold), says the entry and every
// earlier hop's end ran, and nothing after.
//
// Branches are stored with rsp/rbp as they were at the branch, which the
// stop no longer shows: hops the thread ran past a stored branch may only
// push, pop or add to rsp and must leave rbp alone (BlockEnd::rsp_delta), so
// the values follow backwards from the stop's registers.
#include <algorithm>

#include "stub/software_tracer.h"
#include "stub/software_tracer_internal.h"

namespace stub {

using namespace tracer_detail;

namespace {

// Hops per route; bounds the plan's size and the branches one stop stores.
constexpr std::size_t kMaxHops = 4;

bool int3_site(const BlockEnd& end) { return end.kind == BlockEnd::Kind::Transfer && emulable(end.insn); }

bool direct_taken(const decoder::Instruction& insn) {
  return (insn.kind == decoder::ControlKind::Jump || insn.kind == decoder::ControlKind::Call) && insn.target &&
         !insn.operand_size_override;
}

bool contains(const std::vector<uint64_t>& addrs, uint64_t addr) {
  return std::find(addrs.begin(), addrs.end(), addr) != addrs.end();
}

}  // namespace

// The hops from `start` to an end worth a stop; `used` holds the ends (and
// the entry) the plan has so far. nullopt: not even one hop fits.
std::optional<SoftwareTracer::Route> SoftwareTracer::route_from(uint64_t start, bool entered,
                                                                std::vector<uint64_t>& used,
                                                                decoder::CodeReader& code) {
  Route route{entered, {}};
  uint64_t at = start;
  while (route.hops.size() < kMaxHops) {
    const BlockEnd end = blocks_.block_end(at, code);  // a copy: block_end may rehash
    // rsp matters in this hop only when a stored branch lies before it.
    const bool needs_rsp = entered || !route.hops.empty();
    const bool fits = end.kind == BlockEnd::Kind::Transfer && !contains(used, end.address) &&
                      (!needs_rsp || end.rsp_delta);
    if (!fits) break;
    const bool pass_on = direct_taken(end.insn) && must_stop_.count(end.address) == 0 &&
                         route.hops.size() + 1 < kMaxHops;
    // An end to arm must take an int3, and not one some plan passes.
    if (!pass_on && (!int3_site(end) || passed_.count(end.address) != 0)) break;
    route.hops.push_back(Hop{at, end.address, end.insn.kind == decoder::ControlKind::Call});
    used.push_back(end.address);
    if (!pass_on) return route;
    at = *end.insn.target;
  }
  // Cut short: the last hop that fits ends in a direct jmp/call, an int3 site.
  if (route.hops.empty()) return std::nullopt;
  return route;
}

std::shared_ptr<const SoftwareTracer::Lookahead> SoftwareTracer::plan_past(const decoder::Instruction& entry,
                                                                         decoder::CodeReader& code) {
  if (auto known = plans_.find(entry.address); known != plans_.end()) return known->second;
  std::optional<Lookahead> plan;
  const bool jcc = entry.kind == decoder::ControlKind::ConditionalJump && entry.target && emulable(entry);
  if ((jcc || direct_taken(entry)) && must_stop_.count(entry.address) == 0) {
    plan = Lookahead{entry.address, entry.kind == decoder::ControlKind::Call, {}};
    std::vector<uint64_t> used{entry.address};
    if (auto taken = route_from(*entry.target, true, used, code)) plan->routes.push_back(std::move(*taken));
    if (jcc) {
      if (auto fall = route_from(entry.next_address(), false, used, code)) plan->routes.push_back(std::move(*fall));
    }
    if (plan->routes.size() != (jcc ? 2u : 1u)) plan.reset();
  }
  if (plan) {
    passed_.insert(entry.address);
    for (const Route& route : plan->routes) {
      for (std::size_t i = 0; i + 1 < route.hops.size(); ++i) passed_.insert(route.hops[i].end);
      must_stop_.insert(route.hops.back().end);
    }
  }
  std::shared_ptr<const Lookahead> shared;
  if (plan) shared = std::make_shared<const Lookahead>(std::move(*plan));
  return plans_[entry.address] = std::move(shared);
}

bool SoftwareTracer::arm_past(TracedThreadControl& control, ThreadState& t, pid_t tid,
                              const decoder::Instruction& entry) {
  if (stops_ != TraceStops::Breakpoint || !t.trace) return false;
  // Under the stop policy the branches must fit before they run: they are
  // stored only at the next stop, with no chance to stop the thread before.
  if (t.trace->policy() == decoder::OverflowPolicy::Stop && t.trace->size() + kMaxHops + 1 >= t.trace->capacity()) {
    return false;
  }
  ControlMemory code(control);
  std::shared_ptr<const Lookahead> plan = plan_past(entry, code);
  if (!plan) return false;
  std::vector<uint64_t> ends;
  for (const Route& route : plan->routes) ends.push_back(route.hops.back().end);
  if (!arm_all(control, t, tid, ends)) return false;
  t.lookahead = std::move(plan);
  return true;
}

void SoftwareTracer::settle_lookahead(TracedThreadControl& control, ThreadState& t, pid_t tid, uint64_t pc) {
  if (!t.lookahead) return;
  const std::shared_ptr<const Lookahead> shared = std::move(t.lookahead);
  t.lookahead.reset();
  const Lookahead& plan = *shared;
  const Route* route = nullptr;
  std::size_t at = 0;  // the hop the thread is in
  for (const Route& r : plan.routes) {
    for (std::size_t i = 0; i < r.hops.size(); ++i) {
      if (pc >= r.hops[i].begin && pc <= r.hops[i].end) route = &r, at = i;
    }
  }
  if (route == nullptr) return;  // still before the entry
  stats_.looked_past += 1 + at;
  if (!route->entered && at == 0) return;  // fell through the jcc: nothing taken
  auto regs = control.read_general_registers(tid);
  if (!regs) return;  // the thread is gone with its registers
  ControlMemory code(control);
  const decoder::StackSnapshot now = stack_of(*regs);
  // rsp at the start of the current hop: only what ran before the pc counts.
  uint64_t rsp = now.rsp;
  for (uint64_t addr = route->hops[at].begin; addr < pc;) {
    auto insn = blocks_.instruction_at(addr, code);
    if (!insn) break;
    rsp -= static_cast<uint64_t>(plain_rsp_delta(*insn).value_or(0));
    addr = insn->next_address();
  }
  // Backwards over the hops before it: (from, to, rsp before the transfer).
  struct Taken {
    uint64_t from, to, rsp;
  };
  std::vector<Taken> taken;
  for (std::size_t j = at; j-- > 0;) {
    const Hop& hop = route->hops[j];
    rsp += hop.end_is_call ? 8 : 0;  // the call's push undone
    taken.push_back(Taken{hop.end, route->hops[j + 1].begin, rsp});
    rsp -= static_cast<uint64_t>(blocks_.block_end(hop.begin, code).rsp_delta.value_or(0));
  }
  if (route->entered) taken.push_back(Taken{plan.entry, route->hops[0].begin, rsp + (plan.entry_is_call ? 8 : 0)});
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

}  // namespace stub
