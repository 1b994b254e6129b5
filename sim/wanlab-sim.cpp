// wanlab-sim runs one wanlab model program on SimGrid (s4u API, 3.32).
//
// It reads one Program as JSON on stdin, builds its platform, runs its actors
// and writes one Output as JSON on stdout. The types and their semantics are
// those of internal/sim/program.go; internal/sim/run.go starts this program.
//
// Exit status: 0 with the Output on stdout; 2 with one line on stderr when
// the program cannot be run (malformed, an unknown op, actor, host or link,
// a send with no route, past a bound below); 1 when SimGrid fails.
//
// Build: g++ -O2 -std=c++17 sim/*.cpp -o bin/wanlab-sim -lsimgrid (make build)
// (Debian: libsimgrid-dev nlohmann-json3-dev).
#include "program.hpp"
#include "quota.hpp"

#include <simgrid/Exception.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <list>
#include <malloc.h>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace {

using namespace wanlab;

[[noreturn]] void refuse(const std::string& msg)
{
  std::fprintf(stderr, "wanlab-sim: %s\n", msg.c_str());
  std::fflush(stderr);
  std::_Exit(2);
}

// The simulation's state.

struct ReplyBox; // a caller's reply mailbox

struct Msg {
  enum Kind : uint8_t { Data, Request, Reply, Refused } kind = Data;
  uint64_t seq = 0;
  std::shared_ptr<ReplyBox> box;
  double server_seconds = 0;
  int64_t reply = 0;
};

struct ReplyBox {
  sg4::Mailbox* mb = nullptr;
  int32_t host = -1;
  uint64_t seq = 0;     // of the last call made through it
  uint64_t waiting = 0; // the call its owner waits for, 0 when none
};

struct MarkRec {
  int32_t actor, label;
  double t;
  int32_t iter;
};

// Flight is an exec or a transfer under way: what of it is done by the
// horizon counts in the output.
struct Flight {
  sg4::ActivityPtr act;
  int32_t from, to; // hosts; to < 0 for an exec on from
  double amount;    // flops or bytes
};

struct Sim {
  Sim(Program& prog, Resolved& res) : p(prog), r(res) {}
  Program& p;
  Resolved& r;
  std::vector<sg4::Host*> hosts;
  std::vector<sg4::Disk*> disks;
  std::vector<std::unique_ptr<CpuQuota>> quotas; // per host, null without a quota
  std::vector<sg4::Mailbox*> mbox; // per actor
  std::vector<double> host_cpu, link_bytes;
  std::vector<MarkRec> marks;
  std::list<Flight> flights;
  std::vector<char> alive; // per actor: it has not ended
  std::vector<std::shared_ptr<ReplyBox>> free_boxes;
  uint64_t boxes = 0;
  size_t ended = 0, regular = 0;
  double last_end = 0;
  int32_t timeout_label = -1;
};

Sim* g;

// Ctx is one sequence of ops running: an actor's, or a Par branch's.
struct Ctx {
  int32_t actor, host;
  bool daemon;
  std::shared_ptr<ReplyBox> box;
  Ctx(int32_t a, int32_t h, bool d) : actor(a), host(h), daemon(d) {}
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  ~Ctx()
  {
    if (box && box.use_count() == 1) // nobody serves a call of it: reuse it
      g->free_boxes.push_back(std::move(box));
  }
  ReplyBox& reply_box()
  {
    if (!box) {
      if (!g->free_boxes.empty()) {
        box = std::move(g->free_boxes.back());
        g->free_boxes.pop_back();
      } else {
        box = std::make_shared<ReplyBox>();
        box->mb = sg4::Mailbox::by_name("\x01reply " + std::to_string(++g->boxes));
      }
      box->host = host;
      box->mb->set_receiver(sg4::Actor::self());
    }
    return *box;
  }
};

double now()
{
  return sg4::Engine::get_clock();
}

void mark(int32_t actor, int32_t label, int iter)
{
  if (g->marks.size() >= kMaxMarks)
    refuse("more than " + std::to_string(kMaxMarks) + " marks (the bound)");
  g->marks.push_back({actor, label, now(), iter});
}

// account adds bytes moved from host to host to every link of their route.
void account(int32_t from, int32_t to, double bytes)
{
  auto it = g->r.route.find(pair_key(from, to));
  if (it == g->r.route.end())
    return; // the host's loopback
  for (int32_t l : g->p.routes[size_t(it->second)].links)
    g->link_bytes[size_t(l)] += bytes;
}

// Under lists an activity among the flights while it runs.
class Under {
public:
  Under(sg4::ActivityPtr act, int32_t from, int32_t to, double amount)
  {
    g->flights.push_front({std::move(act), from, to, amount});
    it_ = g->flights.begin();
  }
  Under(const Under&) = delete;
  Under& operator=(const Under&) = delete;
  ~Under() { g->flights.erase(it_); }

private:
  std::list<Flight>::iterator it_;
};

void exec(int32_t host, double seconds)
{
  if (seconds <= 0)
    return;
  sg4::ExecPtr e = sg4::this_actor::exec_init(seconds);
  e->start();
  {
    Under u(e, host, -1, seconds);
    if (CpuQuota* q = g->quotas[size_t(host)].get()) {
      CpuQuota::Hold hold(q, e);
      e->wait();
    } else {
      e->wait();
    }
  }
  g->host_cpu[size_t(host)] += seconds;
}

// transfer starts comm, a put of bytes from host from to the actor or
// caller on host to, and waits until they arrived (or throws). A put to an
// actor that ended waits for ever and moves nothing.
void transfer(sg4::CommPtr comm, int32_t from, int32_t to, int64_t bytes, bool receiver_alive)
{
  comm->start();
  if (receiver_alive) {
    Under u(comm, from, to, double(bytes));
    comm->wait();
  } else {
    comm->wait();
  }
  account(from, to, double(bytes));
}

enum class Flow { Done, Refused };
Flow run(Ctx& c, const Ops& ops, int iter, int until);

// handle serves one granted call on the server's host: its work, holding
// one of the server's threads (sem, if any), then the reply, unless the
// caller gave up waiting (it closed its connection). The thread is free
// once the work is done, as a server's write returns once the reply is in
// its socket's buffer: the reply travels on without it, holding one of the
// server's sending places (send, if any) until it arrived.
void handle(Msg* m, int32_t host, const sg4::SemaphorePtr& sem, const sg4::SemaphorePtr& send)
{
  exec(host, m->server_seconds);
  if (sem)
    sem->release();
  if (send)
    send->acquire();
  std::shared_ptr<ReplyBox> box = m->box;
  if (box->waiting != m->seq) {
    delete m;
    if (send)
      send->release();
    return;
  }
  m->kind = Msg::Reply;
  int64_t bytes = m->reply;
  try {
    transfer(box->mb->put_init(m, uint64_t(bytes)), host, box->host, bytes, true);
  } catch (const simgrid::Exception&) {
    // the caller timed out while the reply was on its way
  }
  if (send)
    send->release();
}

[[noreturn]] void serve(Ctx& c, const Op& op)
{
  sg4::Mailbox* mb = g->mbox[size_t(c.actor)];
  sg4::SemaphorePtr sem = op.threads > 0 ? sg4::Semaphore::create(unsigned(op.threads)) : nullptr;
  sg4::SemaphorePtr send = op.sending > 0 ? sg4::Semaphore::create(unsigned(op.sending)) : nullptr;
  const std::string& name = g->p.names.str(g->p.actors[size_t(c.actor)].name);
  int64_t granted = 0;
  for (;;) {
    auto* m = mb->get<Msg>();
    if (m->kind != Msg::Request) {
      delete m; // a Send: it arrived, nothing more to do
      continue;
    }
    if (op.stock > 0 && granted >= op.stock) {
      if (m->box->waiting == m->seq) {
        std::shared_ptr<ReplyBox> box = m->box;
        m->kind = Msg::Refused;
        box->mb->put_init(m, 0)->detach();
      } else {
        delete m;
      }
      continue;
    }
    granted++;
    if (sem)
      sem->acquire();
    int32_t host = c.host;
    sg4::Actor::create(name, g->hosts[size_t(host)], [m, sem, send, host] { handle(m, host, sem, send); })->daemonize();
  }
}

enum class Called { Ok, Timeout, Refused };

Called call(Ctx& c, const Op& op, int iter)
{
  ReplyBox& box = c.reply_box();
  uint64_t seq = ++box.seq;
  box.waiting = seq;
  double deadline = op.timeout > 0 ? now() + op.timeout : -1;
  auto* req = new Msg{Msg::Request, seq, c.box, op.server_seconds, op.reply};
  int32_t server_host = g->r.actor_host[size_t(op.to)];
  // The request is always delivered (its transfer is not cut by the timeout).
  transfer(g->mbox[size_t(op.to)]->put_init(req, uint64_t(op.bytes)), c.host, server_host, op.bytes,
           g->alive[size_t(op.to)] != 0);
  for (;;) {
    Msg* m = nullptr;
    try {
      if (deadline < 0) {
        m = box.mb->get<Msg>();
      } else {
        double left = deadline - now();
        if (left <= 0)
          throw simgrid::TimeoutException(XBT_THROW_POINT, "call timeout");
        m = box.mb->get<Msg>(left);
      }
    } catch (const simgrid::TimeoutException&) {
      box.waiting = 0;
      mark(c.actor, g->timeout_label, iter);
      return Called::Timeout;
    }
    if (m->seq != seq) { // a late reply to an earlier call
      delete m;
      continue;
    }
    bool refused = m->kind == Msg::Refused;
    delete m;
    box.waiting = 0;
    return refused ? Called::Refused : Called::Ok;
  }
}

Flow par(Ctx& c, const Op& op, int iter, int until)
{
  auto refused = std::make_shared<std::vector<char>>(op.nest->size(), 0);
  std::vector<sg4::ActorPtr> kids;
  const std::string& name = g->p.names.str(g->p.actors[size_t(c.actor)].name);
  for (size_t b = 0; b < op.nest->size(); b++) {
    const Ops* branch = &(*op.nest)[b];
    int32_t actor = c.actor, host = c.host;
    bool daemon = c.daemon;
    auto kid = sg4::Actor::create(name, g->hosts[size_t(host)], [=] {
      Ctx k(actor, host, daemon);
      if (run(k, *branch, iter, until) == Flow::Refused)
        (*refused)[b] = 1;
    });
    if (daemon)
      kid->daemonize();
    kids.push_back(kid);
  }
  for (auto& k : kids)
    k->join();
  bool any = std::any_of(refused->begin(), refused->end(), [](char x) { return x != 0; });
  return any && until > 0 ? Flow::Refused : Flow::Done;
}

void disk(const Ctx& c, const Op& op)
{
  sg4::Disk* d = g->disks[size_t(c.host)];
  const HostSpec& h = g->p.hosts[size_t(c.host)];
  if (!d || op.bytes <= 0)
    return;
  if (op.kind == Do::Read && h.read_bps > 0)
    d->read(sg_size_t(op.bytes));
  else if (op.kind == Do::Write && h.write_bps > 0)
    d->write(sg_size_t(op.bytes));
}

// run runs ops; iter is the innermost Repeat's iteration (-1: none), until
// how many enclosing Repeats end on a refused call. Refused: a call was
// refused and an enclosing Repeat with UntilRefused is to end.
Flow run(Ctx& c, const Ops& ops, int iter, int until)
{
  for (const Op& op : ops) {
    switch (op.kind) {
      case Do::Exec:
        exec(c.host, op.seconds);
        break;
      case Do::Sleep:
        if (op.seconds > 0)
          sg4::this_actor::sleep_for(op.seconds);
        break;
      case Do::Send: {
        auto comm = g->mbox[size_t(op.to)]->put_init(new Msg{}, uint64_t(op.bytes));
        if (op.rate_bps > 0)
          comm->set_rate(op.rate_bps / 8);
        transfer(comm, c.host, g->r.actor_host[size_t(op.to)], op.bytes, g->alive[size_t(op.to)] != 0);
        break;
      }
      case Do::Recv:
        delete g->mbox[size_t(c.actor)]->get<Msg>();
        break;
      case Do::Call:
        if (call(c, op, iter) == Called::Refused && until > 0)
          return Flow::Refused;
        break;
      case Do::Serve:
        serve(c, op);
      case Do::Read:
      case Do::Write:
        disk(c, op);
        break;
      case Do::Repeat: {
        const Ops& body = op.nest->front();
        for (int i = 0; (op.times == 0 && op.until_refused) || i < op.times; i++) {
          if (run(c, body, i, until + (op.until_refused ? 1 : 0)) == Flow::Refused) {
            if (op.until_refused)
              break;
            return Flow::Refused;
          }
        }
        break;
      }
      case Do::Par:
        if (par(c, op, iter, until) == Flow::Refused)
          return Flow::Refused;
        break;
      case Do::Mark:
        mark(c.actor, op.label, iter);
        break;
    }
  }
  return Flow::Done;
}

void run_actor(int32_t i)
{
  const ActorSpec& a = g->p.actors[size_t(i)];
  Ctx c(i, g->r.actor_host[size_t(i)], a.daemon);
  run(c, a.ops, -1, 0);
  g->alive[size_t(i)] = 0;
  if (!a.daemon) {
    g->ended++;
    g->last_end = std::max(g->last_end, now());
  }
}

// transfers counts the Sends and Calls ops would make and the bytes they
// would move (a Call's request and reply), each Repeat's body as many
// times as it runs (once when it runs until refused).
void transfers(const Ops& ops, double times, double& n, double& bytes)
{
  for (const Op& op : ops) {
    if (op.kind == Do::Call || op.kind == Do::Send) {
      n += times;
      bytes += times * (double(op.bytes) + (op.kind == Do::Call ? double(op.reply) : 0));
    } else if (op.kind == Do::Repeat) {
      transfers(op.nest->front(), times * std::max(1, op.times), n, bytes);
    } else if (op.kind == Do::Par) {
      for (const Ops& b : *op.nest)
        transfers(b, times, n, bytes);
    }
  }
}

// short_transfers says whether the program's transfers move less than a
// megabyte each on average: requests and replies, not streams.
bool short_transfers(const Program& p)
{
  double n = 0, bytes = 0;
  for (const ActorSpec& a : p.actors)
    transfers(a.ops, 1, n, bytes);
  return n > 0 && bytes < n * 1e6;
}

std::vector<std::string> engine_args(const Program& p)
{
  auto num = [](double d) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return std::string(buf);
  };
  std::vector<std::string> args = {"wanlab-sim", "--log=root.thres:critical", "--cfg=contexts/stack-size:256",
                                   // One memory map per actor, not two: a 1,000-host mesh of 16
                                   // streams runs 32,000 actors, past the kernel's 65,530 maps.
                                   "--cfg=contexts/guard-size:0"};
  // SimGrid's update of flows: Lazy (its default) recomputes, at each
  // event, the flows whose rates changed and keeps their ends in a heap;
  // Full goes through every flow. Short transfers (requests and pages
  // through a server's link, each of whose many events changes every
  // flow's rate) run 1.5-2 times faster with Full, with the same results
  // within SimGrid's precision; long ones (meshes, streams) 6 times faster
  // with Lazy.
  if (short_transfers(p))
    args.push_back("--cfg=network/optim:Full");
  if (p.tcp_window > 0)
    args.push_back("--cfg=network/TCP-gamma:" + num(p.tcp_window));
  if (p.bandwidth_factor > 0)
    args.push_back("--cfg=network/bandwidth-factor:" + num(p.bandwidth_factor));
  if (p.latency_factor > 0)
    args.push_back("--cfg=network/latency-factor:" + num(p.latency_factor));
  return args;
}

void build_platform(Sim& s)
{
  const Program& p = s.p;
  auto* zone = sg4::create_full_zone("wanlab");
  for (const auto& h : p.hosts) {
    sg4::Host* host = zone->create_host(p.names.str(h.name), h.speed);
    host->set_core_count(h.cores);
    sg4::Disk* d = nullptr;
    if (h.read_bps > 0 || h.write_bps > 0)
      d = host->create_disk("disk", h.read_bps > 0 ? h.read_bps : 1, h.write_bps > 0 ? h.write_bps : 1)->seal();
    s.hosts.push_back(host);
    s.disks.push_back(d);
    // A quota below the host's cores throttles it (CFS bandwidth control),
    // kept by a daemon of its own; other hosts cost nothing.
    s.quotas.emplace_back(h.quota > 0 && h.quota < h.cores ? new CpuQuota(h.quota, h.cores) : nullptr);
  }
  std::vector<sg4::Link*> links;
  for (const auto& l : p.links)
    links.push_back(zone->create_link(p.names.str(l.name), l.bps / 8)->set_latency(l.latency)->seal());
  for (const auto& rt : p.routes) {
    std::vector<sg4::LinkInRoute> in;
    for (int32_t l : rt.links)
      in.emplace_back(links[size_t(l)]);
    zone->add_route(s.hosts[size_t(rt.from)]->get_netpoint(), s.hosts[size_t(rt.to)]->get_netpoint(), nullptr,
                    nullptr, in, false);
  }
  // A loopback of 10 Gbit/s per host that sends to itself (unless the
  // program gave that route), named apart from the program's links.
  std::string prefix = "loopback ";
  while (std::any_of(p.links.begin(), p.links.end(), [&](const LinkSpec& l) {
    return p.names.str(l.name).compare(0, prefix.size(), prefix) == 0;
  }))
    prefix = "~" + prefix;
  for (size_t h = 0; h < p.hosts.size(); h++) {
    if (!s.r.loopback[h])
      continue;
    auto* lo = zone->create_link(prefix + p.names.str(p.hosts[h].name), 10e9 / 8)->set_latency(0)->seal();
    zone->add_route(s.hosts[h]->get_netpoint(), s.hosts[h]->get_netpoint(), nullptr, nullptr,
                    {sg4::LinkInRoute(lo)}, false);
  }
  zone->seal();
  for (size_t h = 0; h < s.quotas.size(); h++)
    if (CpuQuota* q = s.quotas[h].get())
      sg4::Actor::create("\x01quota", s.hosts[h], [q] { q->run(); })->daemonize();
}

void put_number(std::string& out, double d)
{
  char buf[64];
  if (!std::isfinite(d))
    d = 0;
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, res.ptr);
}

// count_flights adds what the execs and transfers under way at the
// horizon had done.
void count_flights(Sim& s)
{
  for (const Flight& f : s.flights) {
    double done = f.amount - f.act->get_remaining();
    if (done <= 0)
      continue;
    if (f.to < 0)
      s.host_cpu[size_t(f.from)] += done;
    else
      account(f.from, f.to, done);
  }
}

void write_output(Sim& s, bool ended, double end)
{
  const Program& p = s.p;
  std::stable_sort(s.marks.begin(), s.marks.end(), [](const MarkRec& a, const MarkRec& b) { return a.t < b.t; });
  std::vector<std::string> quoted(p.names.strs.size());
  auto q = [&](int32_t id) -> const std::string& {
    if (id < 0) {
      static const std::string empty = "\"\"";
      return empty;
    }
    std::string& v = quoted[size_t(id)];
    if (v.empty())
      v = quote(p.names.str(id));
    return v;
  };
  std::string out = "{\"end\":";
  put_number(out, end);
  out += ",\"marks\":[";
  for (size_t i = 0; i < s.marks.size(); i++) {
    const MarkRec& m = s.marks[i];
    out += i ? ",{\"actor\":" : "{\"actor\":";
    out += q(p.actors[size_t(m.actor)].name);
    out += ",\"label\":";
    out += q(m.label);
    out += ",\"t\":";
    put_number(out, m.t);
    out += ",\"iter\":" + std::to_string(m.iter) + "}";
    if (out.size() > (size_t(1) << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  out += "],\"host_cpu\":{";
  for (size_t h = 0; h < p.hosts.size(); h++) {
    out += h ? "," : "";
    out += q(p.hosts[h].name) + ":";
    put_number(out, s.host_cpu[h]);
  }
  out += "},\"link_bytes\":{";
  for (size_t l = 0; l < p.links.size(); l++) {
    out += l ? "," : "";
    out += q(p.links[l].name) + ":";
    put_number(out, s.link_bytes[l]);
  }
  out += std::string("},\"ended\":") + (ended ? "true" : "false") + "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

} // namespace

int main()
{
  // Actor stacks (256 KiB, calloc'ed by SimGrid without guard pages) from
  // fresh maps, always: glibc would otherwise serve them from freed heap
  // memory and zero all of it, which costs a tenth of the run and makes
  // every stack resident (6,000 jobs and their handlers: 3 GB).
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  // SimGrid fails by abort() after saying why on stderr: exit 1 as documented.
  std::signal(SIGABRT, [](int) { std::_Exit(1); });
  std::string in;
  {
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) {
      if (in.size() + n > kMaxInput)
        refuse("input larger than " + std::to_string(kMaxInput) + " bytes (the bound)");
      in.append(buf, n);
    }
  }
  static Program p;
  static Resolved r;
  try {
    decode(in, p);
    std::string().swap(in);
    r = resolve(p);
  } catch (const Bad& b) {
    refuse(b.msg);
  }

  try {
    std::vector<std::string> args = engine_args(p);
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    int argc = int(args.size());
    sg4::Engine e(&argc, argv.data());

    static Sim s(p, r);
    g = &s;
    s.timeout_label = p.names.id("timeout");
    s.host_cpu.assign(p.hosts.size(), 0);
    s.alive.assign(p.actors.size(), 1);
    s.link_bytes.assign(p.links.size(), 0);
    build_platform(s);
    for (size_t i = 0; i < p.actors.size(); i++) {
      const ActorSpec& a = p.actors[i];
      s.mbox.push_back(sg4::Mailbox::by_name(p.names.str(a.name)));
      if (!a.daemon)
        s.regular++;
    }
    for (size_t i = 0; i < p.actors.size(); i++) {
      const ActorSpec& a = p.actors[i];
      auto actor = sg4::Actor::create(p.names.str(a.name), s.hosts[size_t(r.actor_host[i])],
                                      [i] { run_actor(int32_t(i)); });
      if (a.daemon)
        actor->daemonize();
      s.mbox[i]->set_receiver(actor);
    }
    if (p.horizon > 0)
      e.run_until(p.horizon);
    else
      e.run();
    bool ended = s.ended == s.regular;
    double end = ended ? s.last_end : (p.horizon > 0 ? p.horizon : sg4::Engine::get_clock());
    count_flights(s);
    write_output(s, ended, end);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "wanlab-sim: simgrid: %s\n", ex.what());
    std::fflush(stderr);
    std::_Exit(1);
  }
  std::fflush(stdout);
  // Skip the engine's teardown: actors may still be alive at the horizon.
  std::_Exit(0);
}
