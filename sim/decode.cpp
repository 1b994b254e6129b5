// decode.cpp: reading a wanlab model program from JSON (nlohmann-json) and
// checking it, before anything runs.
#include "program.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace wanlab {

using json = nlohmann::json;

std::string quote(const std::string& s)
{
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

const std::unordered_map<std::string, Do> kDo = {
    {"exec", Do::Exec},   {"sleep", Do::Sleep}, {"send", Do::Send},     {"recv", Do::Recv},
    {"call", Do::Call},   {"serve", Do::Serve}, {"read", Do::Read},     {"write", Do::Write},
    {"repeat", Do::Repeat}, {"par", Do::Par},   {"mark", Do::Mark},
};

// Reading JSON values, strictly: a missing key or null is the zero value.
const json* field(const json& o, const char* key)
{
  auto it = o.find(key);
  if (it == o.end() || it->is_null())
    return nullptr;
  return &*it;
}

double number(const json& o, const char* key, const std::string& where)
{
  const json* v = field(o, key);
  if (!v)
    return 0;
  if (!v->is_number())
    throw Bad{where + ": " + key + " is not a number"};
  double d = v->get<double>();
  if (!std::isfinite(d) || d < 0)
    throw Bad{where + ": " + key + " must be a finite number >= 0"};
  return d;
}

int64_t integer(const json& o, const char* key, const std::string& where, int64_t max)
{
  const json* v = field(o, key);
  if (!v)
    return 0;
  if (!v->is_number_integer())
    throw Bad{where + ": " + key + " is not an integer"};
  if (v->is_number_unsigned() ? v->get<uint64_t>() > uint64_t(max) : (v->get<int64_t>() < 0 || v->get<int64_t>() > max))
    throw Bad{where + ": " + key + " must be between 0 and " + std::to_string(max)};
  return v->get<int64_t>();
}

std::string text(const json& o, const char* key, const std::string& where)
{
  const json* v = field(o, key);
  if (!v)
    return "";
  if (!v->is_string())
    throw Bad{where + ": " + key + " is not a string"};
  return v->get<std::string>();
}

bool flag(const json& o, const char* key, const std::string& where)
{
  const json* v = field(o, key);
  if (!v)
    return false;
  if (!v->is_boolean())
    throw Bad{where + ": " + key + " is not a boolean"};
  return v->get<bool>();
}

void need_object(const json& o, const std::string& where)
{
  if (!o.is_object())
    throw Bad{where + " is not an object"};
}

// Decoder turns the JSON into a Program one host, link, route and actor at a
// time: nlohmann's parser callback hands each object over when it ends and
// drops it, so the whole document is never held as a tree.
struct Decoder {
  Program& p;
  std::string key1, key2;

  Ops ops(const json& arr, int depth, const std::string& where)
  {
    if (!arr.is_array())
      throw Bad{where + ": ops is not a list"};
    if (depth > kMaxDepth)
      throw Bad{where + ": ops nested deeper than " + std::to_string(kMaxDepth) + " (the bound)"};
    Ops out;
    out.reserve(arr.size());
    for (size_t i = 0; i < arr.size(); i++)
      out.push_back(op(arr[i], depth, where + " op " + std::to_string(i + 1)));
    return out;
  }

  Op op(const json& o, int depth, const std::string& where)
  {
    need_object(o, where);
    if (++p.ops > kMaxOps)
      throw Bad{"more than " + std::to_string(kMaxOps) + " ops (the bound)"};
    std::string d = text(o, "do", where);
    auto k = kDo.find(d);
    if (k == kDo.end())
      throw Bad{where + ": unknown op " + quote(d)};
    Op op;
    op.kind = k->second;
    std::string w = where + " (" + d + ")";
    op.seconds = number(o, "seconds", w);
    op.bytes = integer(o, "bytes", w, std::numeric_limits<int64_t>::max());
    op.rate_bps = number(o, "rate_bps", w);
    op.reply = integer(o, "reply", w, std::numeric_limits<int64_t>::max());
    op.server_seconds = number(o, "server_seconds", w);
    op.timeout = number(o, "timeout", w);
    op.threads = int32_t(integer(o, "threads", w, std::numeric_limits<int32_t>::max()));
    op.stock = int32_t(integer(o, "stock", w, std::numeric_limits<int32_t>::max()));
    op.sending = int32_t(integer(o, "sending", w, std::numeric_limits<int32_t>::max()));
    op.times = int32_t(integer(o, "times", w, std::numeric_limits<int32_t>::max()));
    op.until_refused = flag(o, "until_refused", w);
    if (std::string label = text(o, "label", w); !label.empty())
      op.label = p.names.id(label);
    if (op.kind == Do::Send || op.kind == Do::Call) {
      std::string to = text(o, "to", w);
      if (to.empty())
        throw Bad{w + ": no to"};
      op.to = p.names.id(to);
    }
    if (op.kind == Do::Repeat) {
      op.nest = std::make_unique<std::vector<Ops>>();
      const json* body = field(o, "body");
      op.nest->push_back(body ? ops(*body, depth + 1, w) : Ops{});
      if (op.until_refused && op.times == 0 && !calls(op.nest->front()))
        throw Bad{w + ": until_refused with times 0 and no call in its body never ends"};
    } else if (op.kind == Do::Par) {
      op.nest = std::make_unique<std::vector<Ops>>();
      if (const json* br = field(o, "branches")) {
        if (!br->is_array())
          throw Bad{w + ": branches is not a list"};
        for (size_t i = 0; i < br->size(); i++)
          op.nest->push_back(ops((*br)[i], depth + 1, w + " branch " + std::to_string(i + 1)));
      }
    }
    return op;
  }

  static bool calls(const Ops& ops)
  {
    return std::any_of(ops.begin(), ops.end(), [](const Op& op) {
      if (op.kind == Do::Call)
        return true;
      if (op.nest)
        return std::any_of(op.nest->begin(), op.nest->end(), [](const Ops& o) { return calls(o); });
      return false;
    });
  }

  // object takes an object that just ended at depth; false drops it.
  bool object(int depth, const json& o)
  {
    if (depth == 3 && key1 == "platform") {
      if (key2 == "hosts") {
        if (p.hosts.size() >= kMaxHosts)
          throw Bad{"more than " + std::to_string(kMaxHosts) + " hosts (the bound)"};
        std::string w = "host " + std::to_string(p.hosts.size() + 1);
        need_object(o, w);
        p.hosts.push_back({p.names.id(text(o, "name", w)), int(integer(o, "cores", w, kMaxCores)),
                           number(o, "speed", w), number(o, "disk_read_bps", w), number(o, "disk_write_bps", w),
                           number(o, "quota", w)});
      } else if (key2 == "links") {
        if (p.links.size() >= kMaxLinks)
          throw Bad{"more than " + std::to_string(kMaxLinks) + " links (the bound)"};
        std::string w = "link " + std::to_string(p.links.size() + 1);
        need_object(o, w);
        p.links.push_back({p.names.id(text(o, "name", w)), number(o, "bps", w), number(o, "latency", w)});
      } else if (key2 == "routes") {
        if (p.routes.size() >= kMaxRoutes)
          throw Bad{"more than " + std::to_string(kMaxRoutes) + " routes (the bound)"};
        std::string w = "route " + std::to_string(p.routes.size() + 1);
        need_object(o, w);
        RouteSpec r{p.names.id(text(o, "from", w)), p.names.id(text(o, "to", w)), {}};
        if (const json* l = field(o, "links")) {
          if (!l->is_array() || l->size() > kMaxRouteLinks)
            throw Bad{w + ": links is not a list of at most " + std::to_string(kMaxRouteLinks) + " names"};
          for (const auto& n : *l) {
            if (!n.is_string())
              throw Bad{w + ": a link name is not a string"};
            r.links.push_back(p.names.id(n.get<std::string>()));
          }
        }
        p.routes.push_back(std::move(r));
      } else {
        return true;
      }
      return false;
    }
    if (depth == 2 && key1 == "actors") {
      if (p.actors.size() >= kMaxActors)
        throw Bad{"more than " + std::to_string(kMaxActors) + " actors (the bound)"};
      std::string w = "actor " + std::to_string(p.actors.size() + 1);
      need_object(o, w);
      std::string name = text(o, "name", w);
      w = "actor " + quote(name);
      ActorSpec a{p.names.id(name), p.names.id(text(o, "host", w)), flag(o, "daemon", w), {}};
      if (const json* ops_ = field(o, "ops"))
        a.ops = ops(*ops_, 1, w);
      p.actors.push_back(std::move(a));
      return false;
    }
    if (depth == 1 && key1 == "config") {
      p.tcp_window = number(o, "tcp_window", "config");
      p.bandwidth_factor = number(o, "bandwidth_factor", "config");
      p.latency_factor = number(o, "latency_factor", "config");
      return false;
    }
    return true;
  }

  bool event(int depth, json::parse_event_t ev, json& parsed)
  {
    switch (ev) {
      case json::parse_event_t::key:
        if (depth == 1)
          key1 = parsed.get<std::string>();
        else if (depth == 2)
          key2 = parsed.get<std::string>();
        return true;
      case json::parse_event_t::object_end:
        return object(depth, parsed);
      case json::parse_event_t::value:
        if (depth == 1 && key1 == "horizon") {
          if (!parsed.is_number() || !std::isfinite(parsed.get<double>()) || parsed.get<double>() < 0)
            throw Bad{"horizon must be a finite number >= 0"};
          p.horizon = parsed.get<double>();
        }
        return true;
      default:
        return true;
    }
  }
};

} // namespace

void decode(const std::string& in, Program& p)
{
  Decoder d{p, "", ""};
  try {
    json rest = json::parse(in, [&d](int depth, json::parse_event_t ev, json& parsed) { return d.event(depth, ev, parsed); });
    if (!rest.is_object())
      throw Bad{"the program is not a JSON object"};
  } catch (const json::exception& e) {
    throw Bad{std::string("bad JSON: ") + e.what()};
  }
}

namespace {

void check_ops(const Program& p, Resolved& r, Ops& ops, int32_t actor, const std::string& where)
{
  for (auto& op : ops) {
    if (op.kind == Do::Send || op.kind == Do::Call) {
      int32_t to = r.actor_of[size_t(op.to)];
      if (to < 0)
        throw Bad{where + ": " + (op.kind == Do::Send ? "send" : "call") + " to unknown actor " +
                  quote(p.names.str(op.to))};
      op.to = to;
      int32_t a = r.actor_host[size_t(actor)], b = r.actor_host[size_t(to)];
      auto hop = [&](int32_t x, int32_t y) {
        if (x == y) {
          if (!r.route.count(pair_key(x, y)))
            r.loopback[size_t(x)] = 1;
        } else if (!r.route.count(pair_key(x, y))) {
          throw Bad{where + ": " + (op.kind == Do::Send ? "send" : "call") + " to " + quote(p.names.str(p.actors[size_t(to)].name)) +
                    ": no route from host " + quote(p.names.str(p.hosts[size_t(x)].name)) + " to host " +
                    quote(p.names.str(p.hosts[size_t(y)].name))};
        }
      };
      hop(a, b);
      if (op.kind == Do::Call)
        hop(b, a);
    }
    if (op.nest)
      for (auto& o : *op.nest)
        check_ops(p, r, o, actor, where);
  }
}

} // namespace

Resolved resolve(Program& p)
{
  Resolved r;
  size_t n = p.names.strs.size();
  r.host_of.assign(n, -1);
  r.link_of.assign(n, -1);
  r.actor_of.assign(n, -1);
  for (size_t i = 0; i < p.hosts.size(); i++) {
    auto& h = p.hosts[i];
    const std::string& name = p.names.str(h.name);
    if (name.empty())
      throw Bad{"host " + std::to_string(i + 1) + " has no name"};
    if (r.host_of[size_t(h.name)] >= 0)
      throw Bad{"two hosts named " + quote(name)};
    if (h.cores < 1)
      throw Bad{"host " + quote(name) + ": cores must be at least 1"};
    if (h.speed <= 0)
      throw Bad{"host " + quote(name) + ": speed must be > 0"};
    r.host_of[size_t(h.name)] = int32_t(i);
  }
  for (size_t i = 0; i < p.links.size(); i++) {
    auto& l = p.links[i];
    const std::string& name = p.names.str(l.name);
    if (name.empty())
      throw Bad{"link " + std::to_string(i + 1) + " has no name"};
    if (r.link_of[size_t(l.name)] >= 0)
      throw Bad{"two links named " + quote(name)};
    if (l.bps <= 0)
      throw Bad{"link " + quote(name) + ": bps must be > 0"};
    r.link_of[size_t(l.name)] = int32_t(i);
  }
  for (auto& rt : p.routes) {
    int32_t a = r.host_of[size_t(rt.from)], b = r.host_of[size_t(rt.to)];
    std::string w = "route from " + quote(p.names.str(rt.from)) + " to " + quote(p.names.str(rt.to));
    if (a < 0 || b < 0)
      throw Bad{w + ": unknown host " + quote(p.names.str(a < 0 ? rt.from : rt.to))};
    if (rt.links.empty())
      throw Bad{w + ": no links"};
    for (auto& l : rt.links) {
      if (r.link_of[size_t(l)] < 0)
        throw Bad{w + ": unknown link " + quote(p.names.str(l))};
      l = r.link_of[size_t(l)];
    }
    if (!r.route.emplace(pair_key(a, b), int32_t(&rt - p.routes.data())).second)
      throw Bad{w + ": listed twice"};
    rt.from = a;
    rt.to = b;
  }
  r.actor_host.resize(p.actors.size());
  for (size_t i = 0; i < p.actors.size(); i++) {
    auto& a = p.actors[i];
    const std::string& name = p.names.str(a.name);
    if (name.empty())
      throw Bad{"actor " + std::to_string(i + 1) + " has no name"};
    if (std::any_of(name.begin(), name.end(), [](char c) { return (unsigned char)c < 0x20; }))
      throw Bad{"actor " + quote(name) + ": a control character in its name"};
    if (r.actor_of[size_t(a.name)] >= 0)
      throw Bad{"two actors named " + quote(name)};
    r.actor_of[size_t(a.name)] = int32_t(i);
    int32_t h = r.host_of[size_t(a.host)];
    if (h < 0)
      throw Bad{"actor " + quote(name) + ": unknown host " + quote(p.names.str(a.host))};
    r.actor_host[i] = h;
  }
  r.loopback.assign(p.hosts.size(), 0);
  for (size_t i = 0; i < p.actors.size(); i++)
    check_ops(p, r, p.actors[i].ops, int32_t(i), "actor " + quote(p.names.str(p.actors[i].name)));
  return r;
}

} // namespace wanlab
