// quota.cpp: CFS bandwidth control of a host's execs (quota.hpp).
#include "quota.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>

namespace sg4 = simgrid::s4u;

namespace wanlab {

namespace {

// Times closer than this are one (SimGrid's clock moves by sums of
// doubles): far below a period, far above rounding.
constexpr double kEps = 1e-7;

} // namespace

CpuQuota::CpuQuota(double quota, int cores)
    : budget_(quota * kPeriod), cores_(size_t(std::max(cores, 1))), wake_(sg4::ConditionVariable::create())
{
}

double CpuQuota::rate() const
{
  return throttled_ ? 0 : double(std::min(running_.size(), cores_));
}

// new_period starts the period that holds now, with nothing used yet.
void CpuQuota::new_period(double now)
{
  period_ = std::max(period_ + 1, long(std::floor(now / kPeriod + kEps / kPeriod)));
  end_ = double(period_ + 1) * kPeriod;
  used_ = 0;
  t_ = now;
}

// account adds what the running execs used since the last change: at
// rate() core-seconds a second, the same since then.
void CpuQuota::account(double now)
{
  if (now < end_ - kEps) {
    used_ += rate() * (now - t_);
    t_ = now;
    return;
  }
  if (throttled_) {
    t_ = now; // the daemon releases the host as soon as it runs
    return;
  }
  // A new period: what ran before it began counted in the last one.
  double r = rate(), from = t_;
  new_period(now);
  used_ = r * std::max(0.0, now - std::max(from, double(period_) * kPeriod));
}

void CpuQuota::throttle()
{
  throttled_ = true;
  // The list changes while this suspends (each suspension lets other
  // actors run): go through a copy.
  std::vector<std::shared_ptr<QuotaExec>> now(running_.begin(), running_.end());
  for (const auto& x : now) {
    // An exec done right now lets its actor go on: it is no longer
    // running, it only has not been told yet.
    if (x->done || x->exec->get_remaining() <= 0)
      continue;
    held_.push_back(x->actor);
    x->actor->suspend();
  }
}

void CpuQuota::release(double now)
{
  throttled_ = false;
  new_period(now);
  std::vector<sg4::ActorPtr> held;
  held.swap(held_);
  for (const auto& a : held)
    a->resume();
}

CpuQuota::Hold::Hold(CpuQuota* q, const sg4::ExecPtr& e) : q_(q)
{
  double now = sg4::Engine::get_clock();
  q->account(now);
  double before = q->rate();
  auto x = std::make_shared<QuotaExec>();
  x->exec = e;
  x->actor = sg4::Actor::self();
  q->running_.push_front(x);
  it_ = q->running_.begin();
  if (q->throttled_ && now < q->end_ - kEps) {
    // Started while the host is throttled: wait for the next period
    // (suspending the actor suspends its exec too). At the period's end
    // itself the daemon, about to release the host, might resume the
    // actor before its suspension took effect: it just runs.
    q->held_.push_back(x->actor);
    sg4::this_actor::suspend();
  } else if (q->rate() > before) {
    q->wake_->notify_one(); // the budget runs out sooner
  }
}

CpuQuota::Hold::~Hold()
{
  q_->account(sg4::Engine::get_clock());
  (*it_)->done = true;
  q_->running_.erase(it_);
  // Fewer cores used: the daemon wakes a bit early and waits again.
}

void CpuQuota::run()
{
  sg4::MutexPtr mu = sg4::Mutex::create();
  std::unique_lock<sg4::Mutex> lock(*mu);
  for (;;) {
    double now = sg4::Engine::get_clock();
    if (throttled_) {
      if (now < end_ - kEps) {
        wake_->wait_until(lock, end_);
        continue;
      }
      release(now);
      continue;
    }
    account(now);
    if (running_.empty()) {
      wake_->wait(lock); // idle: only a start changes anything
      continue;
    }
    double left = (budget_ - used_) / rate();
    if (left < kEps) {
      throttle();
      continue;
    }
    wake_->wait_until(lock, std::min(now + left, end_));
  }
}

} // namespace wanlab
