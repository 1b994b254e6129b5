// program.hpp: the model program of wanlab-sim, as internal/sim/program.go
// defines it, decoded from JSON (decode.cpp) and run on SimGrid
// (wanlab-sim.cpp).
#ifndef WANLAB_SIM_PROGRAM_HPP
#define WANLAB_SIM_PROGRAM_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace wanlab {

// Bounds on what the input may make this program allocate. They are those of
// internal/sim/run.go (which refuses programs past them before it starts
// this program): keep the two in step.
constexpr size_t kMaxInput = size_t(1) << 30; // bytes of JSON
constexpr size_t kMaxHosts = 5000;             // a Full zone's table is hosts² pointers
constexpr size_t kMaxLinks = 100000;
constexpr size_t kMaxRoutes = 1000000;
constexpr size_t kMaxRouteLinks = 256;
constexpr size_t kMaxActors = 50000;
constexpr size_t kMaxOps = 4000000; // in total, nested ones included
constexpr int kMaxDepth = 32;       // nesting of Repeat and Par
constexpr int kMaxCores = 4096;
constexpr size_t kMaxMarks = 5000000; // marks recorded while running

// A program that cannot be run: exit 2 with this message.
struct Bad {
  std::string msg;
};

// quote is s as a JSON string.
std::string quote(const std::string& s);

enum class Do : uint8_t { Exec, Sleep, Send, Recv, Call, Serve, Read, Write, Repeat, Par, Mark };

struct Op;
using Ops = std::vector<Op>;

// Op is one operation, as in program.go. Names are ids in Names; To is an
// actor's index once resolved.
struct Op {
  Do kind = Do::Mark;
  bool until_refused = false;
  int32_t to = -1;
  int32_t label = -1;
  int32_t threads = 0;
  int32_t stock = 0;
  int32_t sending = 0;
  int32_t times = 0;
  double seconds = 0;
  double rate_bps = 0;
  double server_seconds = 0;
  double timeout = 0;
  int64_t bytes = 0;
  int64_t reply = 0;
  std::unique_ptr<std::vector<Ops>> nest; // Repeat: its body; Par: its branches
};

// Names interns every name of the program.
struct Names {
  std::unordered_map<std::string, int32_t> ids;
  std::vector<const std::string*> strs;
  int32_t id(const std::string& s)
  {
    auto [it, fresh] = ids.emplace(s, int32_t(strs.size()));
    if (fresh)
      strs.push_back(&it->first);
    return it->second;
  }
  const std::string& str(int32_t id) const { return *strs[size_t(id)]; }
};

struct HostSpec {
  int32_t name;
  int cores;
  double speed, read_bps, write_bps;
  double quota; // cores of CPU per 100 ms period (CFS bandwidth control); 0: none
};
struct LinkSpec {
  int32_t name;
  double bps, latency;
};
struct RouteSpec {
  int32_t from, to;
  std::vector<int32_t> links; // names, then link indices
};
struct ActorSpec {
  int32_t name, host;
  bool daemon;
  Ops ops;
};

struct Program {
  Names names;
  std::vector<HostSpec> hosts;
  std::vector<LinkSpec> links;
  std::vector<RouteSpec> routes;
  std::vector<ActorSpec> actors;
  double tcp_window = 0, bandwidth_factor = 0, latency_factor = 0, horizon = 0;
  size_t ops = 0;
};

// Resolved holds what validation found: indices of hosts, links, actors.
struct Resolved {
  std::vector<int32_t> host_of;  // name id -> host index, or -1
  std::vector<int32_t> link_of;  // name id -> link index, or -1
  std::vector<int32_t> actor_of; // name id -> actor index, or -1
  std::vector<int32_t> actor_host;
  std::unordered_map<uint64_t, int32_t> route; // (from<<32 | to) host indices -> route index
  std::vector<char> loopback;                  // per host: needs a loopback link
};

inline uint64_t pair_key(int32_t from, int32_t to)
{
  return (uint64_t(uint32_t(from)) << 32) | uint32_t(to);
}

// decode reads a Program from its JSON; resolve checks it and finds what its
// names name. Both throw Bad.
void decode(const std::string& in, Program& p);
Resolved resolve(Program& p);

} // namespace wanlab

#endif
