// quota.hpp: a host's CPU quota as Linux's CFS bandwidth control enforces
// it (the cgroup cpu.max of an emulated host: a quota per 100 ms period).
#ifndef WANLAB_SIM_QUOTA_HPP
#define WANLAB_SIM_QUOTA_HPP

#include <simgrid/s4u.hpp>

#include <list>
#include <memory>
#include <vector>

namespace wanlab {

struct QuotaExec;

// CpuQuota throttles the execs of one host: within each period of 100 ms
// (from time 0) they run on the host's cores at full speed until they have
// used quota x 0.1 core-seconds together, then none runs until the period
// ends. A lone thread thus runs at full speed in bursts, not at quota/cores
// of a core all the time. A host whose quota is its cores or more is never
// throttled: it needs no CpuQuota.
//
// Every exec on the host is bracketed by a Hold; a daemon actor on the
// host runs run(), which wakes only when the period's budget runs out,
// when a throttled period ends and when a start makes the host's execs use
// more cores: an idle host costs nothing. While throttled, the actors of
// the host's execs are suspended (SimGrid's kernel then suspends their
// execs exactly, and resumes them where they were).
class CpuQuota {
public:
  static constexpr double kPeriod = 0.1; // seconds, CFS's default period

  CpuQuota(double quota, int cores);
  CpuQuota(const CpuQuota&) = delete;
  CpuQuota& operator=(const CpuQuota&) = delete;

  // Hold counts an exec, just started by the calling actor on the host,
  // until it is done: construct it after start(), before wait().
  class Hold {
  public:
    Hold(CpuQuota* q, const simgrid::s4u::ExecPtr& e);
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold();

  private:
    CpuQuota* q_;
    std::list<std::shared_ptr<QuotaExec>>::iterator it_;
  };

  // run is the daemon's loop; it never returns.
  [[noreturn]] void run();

private:
  using Running = std::list<std::shared_ptr<QuotaExec>>;
  double rate() const; // core-seconds used per second while not throttled
  void account(double now);
  void new_period(double now);
  void throttle();
  void release(double now);

  double budget_; // core-seconds per period
  size_t cores_;
  long period_ = 0;      // the period that used_ counts
  double end_ = kPeriod; // when it ends
  double used_ = 0;      // core-seconds used in it up to t_
  double t_ = 0;
  bool throttled_ = false;
  Running running_;
  std::vector<simgrid::s4u::ActorPtr> held_; // suspended while throttled
  simgrid::s4u::ConditionVariablePtr wake_;
};

// QuotaExec is one exec a CpuQuota counts.
struct QuotaExec {
  simgrid::s4u::ExecPtr exec;
  simgrid::s4u::ActorPtr actor;
  bool done = false;
};

} // namespace wanlab

#endif
