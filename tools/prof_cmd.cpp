// tools/prof_cmd.cpp — `tilejit prof view` / `tilejit prof html` (prof_cmd.hpp).
#include "tools/prof_cmd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include "tilejit/core/utf8.hpp"
#include "tools/output.hpp"

namespace tilejit::tools {
namespace {

using json = nlohmann::json;

constexpr std::string_view kInc = " (inc)";
constexpr std::string_view kTime = "time (ns)";
constexpr int kWidths[] = {8, 16, 32, 64};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string flops_name(int width) { return "flops" + std::to_string(width); }

/// Metrics the kernel records and the launch hook add up the tree: inclusive
/// even in files that carry no "(inc)" values.
bool additive(std::string_view name) {
  if (name == kTime || name == "count" || name == "bytes") return true;
  for (int w : kWidths)
    if (name == flops_name(w)) return true;
  return false;
}

// ---- reading -------------------------------------------------------------

std::string terminal_safe(std::string_view s);  // (below, with the tree's printing)

/// Deepest tree read (the profiler writes at most 4097 levels: ROOT and 4096 scopes); reading and printing recurse.
constexpr int kMaxReadDepth = 8192;

/// `path`: the names of the node's ancestors, joined into "/a/b" only for an error message (a string per level
/// cost depth² × name length: 8000 levels of 100-character names took 4.4 GB).
ProfNode to_node(const json& j, const std::string& origin, std::vector<const std::string*>& path, int depth = 0) {
  auto bad = [&](const std::string& what) {
    // The path's last 8 names at most, each cut to 64 bytes: the message names the place, not the whole chain (a
    // file nested 8192 deep printed 16 KB).
    constexpr std::size_t kNames = 8, kNameBytes = 64;
    std::string where = path.size() > kNames ? fmt::format("/...({} levels)", path.size() - kNames) : "";
    for (std::size_t i = path.size() > kNames ? path.size() - kNames : 0; i < path.size(); ++i)
      where += "/" + (path[i]->size() > kNameBytes ? path[i]->substr(0, kNameBytes) + "..." : *path[i]);
    return InvalidArgument(origin + ": not a hatchet profile: " + (where.empty() ? std::string("ROOT") : terminal_safe(where)) + ": " +
                           what);
  };
  if (depth > kMaxReadDepth) throw bad(fmt::format("nested deeper than {} levels", kMaxReadDepth));
  if (!j.is_object()) throw bad("a node must be an object {\"frame\", \"metrics\", \"children\"}");
  ProfNode n;
  auto f = j.find("frame");
  if (f == j.end() || !f->is_object()) throw bad("no \"frame\" object");
  auto name = f->find("name");
  if (name == f->end() || !name->is_string()) throw bad("frame has no string \"name\"");
  n.name = name->get<std::string>();
  auto type = f->find("type");
  n.type = type != f->end() && type->is_string() ? type->get<std::string>() : "function";
  if (auto m = j.find("metrics"); m != j.end()) {
    if (!m->is_object()) throw bad("\"metrics\" of '" + n.name + "' is not an object");
    for (auto it = m->begin(); it != m->end(); ++it) {
      if (it->is_number() && !std::isfinite(it->get<double>())) {
        // MessagePack holds NaN and infinities as floats (the profiler writes NaN for a metric with no value):
        // missing, as the same metric's null is in JSON.
        n.nulls.insert(it.key());
      } else if (it->is_number()) {
        n.metrics[it.key()] = it->get<double>();
      } else if (it->is_string()) {
        n.strings[it.key()] = it->get<std::string>();
      } else if (it->is_null()) {
        // NaN and infinities are written as null (JSON has no such numbers): missing, as hatchet reads them.
        n.nulls.insert(it.key());
      } else {
        throw bad("metric '" + it.key() + "' of '" + n.name + "' is neither a number nor a string");
      }
    }
  }
  if (auto c = j.find("children"); c != j.end()) {
    if (!c->is_array()) throw bad("\"children\" of '" + n.name + "' is not an array");
    n.children.reserve(c->size());
    path.push_back(&n.name);
    for (const auto& child : *c) n.children.push_back(to_node(child, origin, path, depth + 1));
    path.pop_back();
  }
  return n;
}

void collect_keys(const ProfNode& n, std::set<std::string>& keys, std::set<std::string>& nulls) {
  for (const auto& [k, v] : n.metrics) keys.insert(k);
  nulls.insert(n.nulls.begin(), n.nulls.end());
  for (const auto& c : n.children) collect_keys(c, keys, nulls);
}

/// Fills ProfNode::inclusive: from "<m> (inc)" where the file has it, else by
/// summing `summed` metrics over the subtree.
void fill_inclusive(ProfNode& n, const std::set<std::string>& from_file,
                    const std::set<std::string>& summed) {
  for (auto& c : n.children) fill_inclusive(c, from_file, summed);
  for (const auto& m : from_file)
    if (auto it = n.metrics.find(m + std::string(kInc)); it != n.metrics.end())
      n.inclusive[m] = it->second;
  for (const auto& m : summed) {
    bool any = false;
    double sum = 0;
    if (auto it = n.metrics.find(m); it != n.metrics.end()) any = true, sum += it->second;
    for (const auto& c : n.children)
      if (auto it = c.inclusive.find(m); it != c.inclusive.end()) any = true, sum += it->second;
    if (any) n.inclusive[m] = sum;
  }
}

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return {};
}
double scalar_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      return std::stod(v.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return 0;
}

std::size_t count_nodes(const ProfNode& n) {
  std::size_t k = 1;
  for (const auto& c : n.children) k += count_nodes(c);
  return k;
}

// ---- metrics -------------------------------------------------------------

enum class MKind { time, avg_time, flops, bytes, util, raw };

struct MetricSpec {
  std::string label;  ///< as the user wrote it
  MKind kind = MKind::raw;
  double scale = 1;   ///< divide by this (unit factor)
  int width = 0;      ///< flops: 0 = every width
  std::string raw;    ///< raw: the file's metric name
  bool raw_inclusive = false;
};

const char* kDerivedHelp =
    "time/{s,ms,us,ns}, avg_time/{s,ms,us,ns}, [g|t]flop[8|16|32|64]/s, [g|t]byte/s, util";

std::string available(const Profile& p) {
  std::vector<std::string> names(p.inclusive_metrics.begin(), p.inclusive_metrics.end());
  names.insert(names.end(), p.plain_metrics.begin(), p.plain_metrics.end());
  std::sort(names.begin(), names.end());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

bool has_flops(const Profile& p, int width) {
  if (width != 0) return p.has(flops_name(width));
  for (int w : kWidths)
    if (p.has(flops_name(w))) return true;
  return false;
}

/// Throws InvalidArgument: unknown name, or a derived metric without its sources.
MetricSpec resolve(const Profile& p, std::string_view text) {
  MetricSpec s;
  s.label = std::string(text);
  const std::string m = lower(text);
  auto need = [&](bool ok, const std::string& what) {
    if (!ok)
      throw InvalidArgument("metric '" + s.label + "' needs " + what + ", which " + p.origin +
                            " does not have (it has: " + available(p) + ")");
  };
  auto time_scale = [](std::string_view unit) -> double {
    if (unit == "s") return 1e9;
    if (unit == "ms") return 1e6;
    if (unit == "us") return 1e3;
    if (unit == "ns") return 1;
    return 0;
  };
  auto prefix_scale = [](std::string_view& rest) -> double {
    if (!rest.empty() && rest[0] == 'g') return rest.remove_prefix(1), 1e9;
    if (!rest.empty() && rest[0] == 't') return rest.remove_prefix(1), 1e12;
    return 1;
  };
  const bool time = p.has(kTime);
  if (m == "util") {
    s.kind = MKind::util;
    need(time, "\"time (ns)\"");
    need(has_flops(p, 0) || p.has("bytes"), "flops8/16/32/64 or bytes");
    return s;
  }
  for (auto [prefix, kind] : {std::pair{std::string_view("time/"), MKind::time},
                              std::pair{std::string_view("avg_time/"), MKind::avg_time}}) {
    if (m.rfind(prefix, 0) == 0) {
      double f = time_scale(std::string_view(m).substr(prefix.size()));
      if (f == 0)
        throw InvalidArgument("unknown metric '" + s.label + "': time units are s, ms, us, ns");
      s.kind = kind;
      s.scale = f;
      need(time, "\"time (ns)\"");
      if (kind == MKind::avg_time) need(p.has("count"), "\"count\"");
      return s;
    }
  }
  if (ends_with(m, "/s")) {
    std::string_view rest(m);
    rest.remove_suffix(2);
    double f = prefix_scale(rest);
    if (rest == "byte") {
      s.kind = MKind::bytes;
      s.scale = f;
      need(time, "\"time (ns)\"");
      need(p.has("bytes"), "\"bytes\"");
      return s;
    }
    if (rest.rfind("flop", 0) == 0) {
      std::string_view w = rest.substr(4);
      int width = -1;
      if (w.empty()) width = 0;
      for (int k : kWidths)
        if (w == std::to_string(k)) width = k;
      if (width >= 0) {
        s.kind = MKind::flops;
        s.scale = f;
        s.width = width;
        need(time, "\"time (ns)\"");
        need(has_flops(p, width), width ? "\"" + flops_name(width) + "\"" : "flops8/16/32/64");
        return s;
      }
    }
  }
  // A metric of the file, by its name with or without its unit.
  auto strip_unit = [](const std::string& name) {
    std::string base = name.substr(0, name.find('('));
    while (!base.empty() && base.back() == ' ') base.pop_back();
    return lower(base);
  };
  for (int pass = 0; pass < 2; ++pass) {
    const auto& names = pass == 0 ? p.inclusive_metrics : p.plain_metrics;
    for (const auto& name : names) {
      if (lower(name) == m || strip_unit(name) == m) {
        s.kind = MKind::raw;
        s.raw = name;
        s.raw_inclusive = pass == 0;
        return s;
      }
    }
  }
  for (const auto& name : p.null_metrics)
    if (lower(name) == m || strip_unit(name) == m)
      throw InvalidArgument("metric '" + s.label + "' has no numeric value in " + p.origin +
                            ": every value of it is null (NaN or infinite when it was recorded)");
  throw InvalidArgument("unknown metric '" + s.label + "': not derivable (" + kDerivedHelp +
                        ") and not in " + p.origin + " (it has: " + available(p) + ")");
}

/// Resolve against a, else against b (a diff may have a metric on one side).
MetricSpec resolve2(const Profile& a, const Profile* b, std::string_view text) {
  try {
    return resolve(a, text);
  } catch (const InvalidArgument&) {
    if (!b) throw;
    try {
      return resolve(*b, text);
    } catch (const InvalidArgument&) {
    }
    throw;
  }
}

std::optional<double> inc(const ProfNode& n, const std::string& m) {
  auto it = n.inclusive.find(m);
  if (it == n.inclusive.end()) return std::nullopt;
  return it->second;
}

std::optional<double> evaluate(const MetricSpec& s, const ProfNode& n, const DevicePeaks* peaks) {
  if (s.kind == MKind::raw) {
    if (s.raw_inclusive) return inc(n, s.raw);
    auto it = n.metrics.find(s.raw);
    if (it == n.metrics.end()) return std::nullopt;
    return it->second;
  }
  const auto t = inc(n, std::string(kTime));
  if (s.kind == MKind::time) return t ? std::optional(*t / s.scale) : std::nullopt;
  if (!t || *t <= 0) return std::nullopt;
  const double seconds = *t * 1e-9;
  switch (s.kind) {
    case MKind::avg_time: {
      auto c = inc(n, "count");
      if (!c || *c <= 0) return std::nullopt;
      return *t / *c / s.scale;
    }
    case MKind::bytes: {
      auto b = inc(n, "bytes");
      if (!b) return std::nullopt;
      return *b / seconds / s.scale;
    }
    case MKind::flops: {
      bool any = false;
      double sum = 0;
      for (int w : kWidths) {
        if (s.width != 0 && w != s.width) continue;
        if (auto f = inc(n, flops_name(w))) any = true, sum += *f;
      }
      if (!any) return std::nullopt;
      return sum / seconds / s.scale;
    }
    case MKind::util: {
      if (!peaks) return std::nullopt;
      bool any = false;
      double flop_time = 0, byte_time = 0;
      for (int w : kWidths) {
        auto f = inc(n, flops_name(w));
        auto pk = peaks->flop_per_s.find(w);
        if (f && pk != peaks->flop_per_s.end()) any = true, flop_time += *f / pk->second;
      }
      if (auto b = inc(n, "bytes"); b && peaks->byte_per_s > 0)
        any = true, byte_time = *b / peaks->byte_per_s;
      if (!any) return std::nullopt;
      return std::max(flop_time, byte_time) / seconds;
    }
    default: return std::nullopt;
  }
}

std::string format_value(const MetricSpec& s, double v) {
  switch (s.kind) {
    case MKind::util: return fmt::format("{:.3g}%", v * 100);
    case MKind::time:
    case MKind::avg_time: return fmt::format("{:.6g}", v);
    case MKind::flops:
    case MKind::bytes: return fmt::format("{:.4g}", v);
    case MKind::raw:
      if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
      return fmt::format("{:.6g}", v);
  }
  return {};
}

// ---- the view tree -------------------------------------------------------

struct VNode {
  std::string name;
  const ProfNode* a = nullptr;
  const ProfNode* b = nullptr;
  std::vector<VNode> children;
};

VNode mirror(const ProfNode& n) {
  VNode v{n.name, &n, nullptr, {}};
  v.children.reserve(n.children.size());
  for (const auto& c : n.children) v.children.push_back(mirror(c));
  return v;
}

/// Children matched by (name, occurrence of that name among the siblings).
VNode merge(const ProfNode* a, const ProfNode* b) {
  VNode v{a ? a->name : b->name, a, b, {}};
  const std::vector<ProfNode> none;
  const auto& ac = a ? a->children : none;
  const auto& bc = b ? b->children : none;
  std::vector<bool> used(bc.size(), false);
  // b's children by name, in sibling order: the k-th a child of a name meets the k-th b child of that name
  // (one pass each way, not a scan of b's children per a child).
  std::unordered_map<std::string_view, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < bc.size(); ++i) by_name[bc[i].name].push_back(i);
  std::unordered_map<std::string_view, std::size_t> seen_a;
  for (const auto& c : ac) {
    const std::size_t k = seen_a[c.name]++;
    const ProfNode* match = nullptr;
    if (auto it = by_name.find(c.name); it != by_name.end() && k < it->second.size()) {
      match = &bc[it->second[k]];
      used[it->second[k]] = true;
    }
    v.children.push_back(merge(&c, match));
  }
  for (std::size_t i = 0; i < bc.size(); ++i)
    if (!used[i]) v.children.push_back(merge(nullptr, &bc[i]));
  return v;
}

/// A compiled --include / --exclude pattern. RE2 (Google's automaton-based engine: time linear in the name, no
/// recursion, no backtracking) rather than std::regex, which recursed once per character of a name (a segfault at
/// 30,000 characters) and backtracked exponentially on patterns such as ^(a+)+$.
class Pattern {
 public:
  /// Throws InvalidArgument naming the option and the pattern (cut to 80 bytes, terminal-safe) if it is longer than
  /// kMaxPattern or RE2 rejects it (with RE2's reason).
  Pattern(const std::string& pattern, const char* option) : re_(checked(pattern, option), options()) {
    if (!re_.ok()) throw InvalidArgument(fmt::format("bad {} regex '{}': {}", option, shown(pattern), shown(re_.error())));
  }
  /// Whether the pattern matches anywhere in `name` (a search, as grep does).
  bool found_in(const std::string& name) const { return RE2::PartialMatch(name, re_); }

 private:
  /// The longest pattern taken. RE2's time is linear in the name for a given pattern, but its fallback when the DFA
  /// outgrows its memory (the NFA) costs about pattern size x name length: a 6.5 KB alternation took 128 s on a
  /// 100,000-character name. A kilobyte is far more than a filter needs.
  static constexpr std::size_t kMaxPattern = 1024;
  static const std::string& checked(const std::string& pattern, const char* option) {
    if (pattern.size() > kMaxPattern)
      throw InvalidArgument(fmt::format("{} regex '{}' is longer than {} bytes", option, shown(pattern), kMaxPattern));
    return pattern;
  }
  /// `t` for a message: its first 80 bytes, terminal-safe.
  static std::string shown(std::string_view t) {
    constexpr std::size_t kShown = 80;
    return t.size() <= kShown ? terminal_safe(t) : fmt::format("{}... ({} bytes)", terminal_safe(t.substr(0, kShown)), t.size());
  }
  static RE2::Options options() {
    RE2::Options o;
    o.set_log_errors(false);  // the error goes into the exception, not to stderr
    return o;
  }
  RE2 re_;
};

/// Keeps the paths through matching nodes: returns whether `n` stays.
bool keep_included(VNode& n, const Pattern& re, bool inside, bool root) {
  const bool self = inside || (!root && re.found_in(n.name));
  std::vector<VNode> kept;
  for (auto& c : n.children)
    if (keep_included(c, re, self, false)) kept.push_back(std::move(c));
  n.children = std::move(kept);
  return self || !n.children.empty();
}

void drop_excluded(VNode& n, const Pattern& re) {
  std::erase_if(n.children, [&](const VNode& c) { return re.found_in(c.name); });
  for (auto& c : n.children) drop_excluded(c, re);
}

/// The value at one side of a view node; false where it is not defined.
bool side_value(const MetricSpec& s, const ProfNode* n, const DevicePeaks* peaks, double& out) {
  if (!n) return false;
  const auto v = evaluate(s, *n, peaks);
  out = v.value_or(0);
  return v.has_value();
}

/// b's value, else a's.
std::optional<double> key_value(const MetricSpec& s, const VNode& n, const DevicePeaks* peaks) {
  if (n.b)
    if (auto v = evaluate(s, *n.b, peaks)) return v;
  if (n.a) return evaluate(s, *n.a, peaks);
  return std::nullopt;
}

/// Keeps a child when, on either side, its value is at least `fraction` of
/// that side's ROOT value.
void drop_below(VNode& n, const MetricSpec& s, double fraction, double floor_a, double floor_b,
                const DevicePeaks* peaks) {
  std::erase_if(n.children, [&](const VNode& c) {
    double v = 0;
    if (side_value(s, c.a, peaks, v) && floor_a > 0 && v >= fraction * floor_a) return false;
    if (side_value(s, c.b, peaks, v) && floor_b > 0 && v >= fraction * floor_b) return false;
    return true;
  });
  for (auto& c : n.children) drop_below(c, s, fraction, floor_a, floor_b, peaks);
}

void cut_depth(VNode& n, int levels) {
  if (levels <= 0) {
    n.children.clear();
    return;
  }
  for (auto& c : n.children) cut_depth(c, levels - 1);
}

void sort_by(VNode& n, const MetricSpec& s, const DevicePeaks* peaks) {
  std::vector<std::pair<std::optional<double>, VNode>> keyed;
  for (auto& c : n.children) keyed.emplace_back(key_value(s, c, peaks), std::move(c));
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) {
    if (x.first && y.first) return *x.first > *y.first;
    return x.first.has_value() && !y.first.has_value();
  });
  n.children.clear();
  for (auto& [k, c] : keyed) n.children.push_back(std::move(c));
  for (auto& c : n.children) sort_by(c, s, peaks);
}

/// Walk in display order with the tree prefix of each node.
void walk(const VNode& n, const std::string& indent, bool last, bool root,
          const std::function<void(const VNode&, const std::string&)>& f) {
  f(n, root ? std::string() : indent + (last ? "└─ " : "├─ "));
  const std::string next = root ? std::string() : indent + (last ? "   " : "│  ");
  for (std::size_t i = 0; i < n.children.size(); ++i)
    walk(n.children[i], next, i + 1 == n.children.size(), false, f);
}

/// A frame name as the terminal should see it: control characters (newlines, escape sequences) written as
/// \n, \t, \r or \xNN, C1 controls (U+0080..U+009F: 0x9B is an 8-bit CSI) as \u00NN, and bytes that are not
/// UTF-8 (MessagePack names may hold any) as \xNN, so a name cannot break the table or recolour the terminal.
/// Well-formed UTF-8 passes unchanged (RFC 3629's ranges: no overlongs, no surrogates, nothing past U+10FFFF).
std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char u = byte(i);
    const std::size_t n = tilejit::utf8_sequence(s, i);
    if (u < 0x80) {
      if (u == '\n') out += "\\n";
      else if (u == '\t') out += "\\t";
      else if (u == '\r') out += "\\r";
      else if (u < 0x20 || u == 0x7F) out += fmt::format("\\x{:02x}", u);
      else out += static_cast<char>(u);
      ++i;
    } else if (n == 0) {
      out += fmt::format("\\x{:02x}", u);
      ++i;
    } else if (n == 2 && u == 0xC2 && byte(i + 1) <= 0x9F) {  // a C1 control
      out += fmt::format("\\u00{:02x}", byte(i + 1));
      i += 2;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

/// s for an HTML page that declares UTF-8: bytes that are not UTF-8 (a MessagePack name may hold any) and control
/// characters other than newline and tab (tooltips break lines) as the text \xNN, the five HTML metacharacters as
/// entities.
std::string html_escape(std::string_view raw) {
  const std::string s = tilejit::utf8_escape_invalid(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7F) {
      out += fmt::format("\\x{:02x}", u);
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string read_all(const std::string& path, const char* what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InvalidArgument(fmt::format("cannot read {} '{}': it is a directory", what, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(fmt::format("cannot read {} '{}'", what, path));
  try {
    return std::string{std::istreambuf_iterator<char>(in), {}};
  } catch (const std::exception& e) {
    throw InvalidArgument(fmt::format("cannot read {} '{}': {}", what, path, e.what()));
  }
}

}  // namespace

// ---- Profile -------------------------------------------------------------

bool Profile::has(std::string_view metric) const {
  const std::string m(metric);
  return inclusive_metrics.count(m) != 0 || plain_metrics.count(m) != 0;
}

std::size_t Profile::node_count() const { return count_nodes(root); }

/// How deep the containers of the MessagePack value at the start of `b` nest, counted without recursion: stops
/// once past `limit` (returning a depth > limit); a truncated or malformed value returns what it saw (from_msgpack
/// then says what is wrong). nlohmann's MessagePack reader recurses once per level, so a hostile file 200,000
/// arrays deep would overflow the stack before to_node's depth rule could refuse it; this runs first.
int msgpack_depth(std::string_view b, int limit) {
  std::vector<std::uint64_t> left;  // values still to read in each open container
  std::size_t pos = 0;
  int deepest = 0;
  auto take = [&](std::size_t n) -> std::uint64_t {  // a big-endian length of n bytes
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n && pos < b.size(); ++i) v = v << 8 | static_cast<unsigned char>(b[pos++]);
    return v;
  };
  auto skip = [&](std::uint64_t n) { pos = n >= b.size() - pos ? b.size() : pos + static_cast<std::size_t>(n); };
  while (pos < b.size()) {
    const unsigned t = static_cast<unsigned char>(b[pos++]);
    std::uint64_t items = 0;  // > 0: a container that opens
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
    } else if (t >= 0x80 && t <= 0x8f) {
      items = 2 * std::uint64_t(t & 0xf);
    } else if (t >= 0x90 && t <= 0x9f) {
      items = t & 0xf;
    } else if (t >= 0xa0 && t <= 0xbf) {
      skip(t & 0x1f);
    } else if (t == 0xc4 || t == 0xd9) {
      skip(take(1));
    } else if (t == 0xc5 || t == 0xda) {
      skip(take(2));
    } else if (t == 0xc6 || t == 0xdb) {
      skip(take(4));
    } else if (t >= 0xc7 && t <= 0xc9) {
      skip(take(std::size_t{1} << (t - 0xc7)) + 1);  // ext 8 / 16 / 32: length, type byte, data
    } else if (t == 0xca || t == 0xcb || (t >= 0xcc && t <= 0xd3)) {
      static constexpr int kSize[] = {4, 8, 1, 2, 4, 8, 1, 2, 4, 8};
      skip(kSize[t - 0xca]);
    } else if (t >= 0xd4 && t <= 0xd8) {
      skip(1 + (std::uint64_t{1} << (t - 0xd4)));  // fixext: type byte, 1 .. 16 bytes
    } else if (t == 0xdc || t == 0xdd) {
      items = take(t == 0xdc ? 2 : 4);
    } else if (t == 0xde || t == 0xdf) {
      items = 2 * take(t == 0xde ? 2 : 4);
    } else {
      return deepest;  // 0xc1: never used
    }
    if (items > 0) {
      left.push_back(items);
      deepest = std::max(deepest, static_cast<int>(left.size()));
      if (deepest > limit) return deepest;
      continue;
    }
    // A whole value was read: close every container it completes.
    while (!left.empty() && --left.back() == 0) left.pop_back();
    if (left.empty()) return deepest;
  }
  return deepest;
}

Profile parse_profile(std::string_view bytes, std::string_view origin_view) {
  const std::string origin(origin_view);
  const auto first = bytes.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    throw InvalidArgument(origin + ": empty file; expected a hatchet profile (JSON or MessagePack)");
  Profile p;
  p.origin = origin;
  p.msgpack = bytes[first] != '[' && bytes[first] != '{';
  // A tree level is two containers (the node's map, its "children" array), plus the outer [tree, devices].
  if (const int limit = 2 * kMaxReadDepth + 2; p.msgpack && msgpack_depth(bytes, limit) > limit)
    throw InvalidArgument(fmt::format("{}: not a hatchet profile: nested deeper than {} levels", origin, kMaxReadDepth));
  json j;
  try {
    j = p.msgpack ? json::from_msgpack(bytes.begin(), bytes.end())
                  : json::parse(bytes.begin(), bytes.end());
  } catch (const json::exception& e) {
    // A JSON document that is not an array or object ("null", "42") starts with a byte MessagePack reads as a
    // value too: say what it is rather than how MessagePack failed.
    if (json other = json::parse(bytes.begin(), bytes.end(), nullptr, false); p.msgpack && !other.is_discarded()) {
      j = std::move(other);
      p.msgpack = false;
    } else {
      throw InvalidArgument(fmt::format("{}: not valid {}: {}", origin,
                                        p.msgpack ? "MessagePack (nor JSON)" : "JSON", e.what()));
    }
  }
  const json* tree = nullptr;
  const json* devices = nullptr;
  if (j.is_object() && j.contains("traceEvents"))
    throw InvalidArgument(origin + ": is a Chrome trace; prof reads hatchet profiles (formats "
                                   "\"hatchet\" and \"hatchet_msgpack\")");
  if (j.is_object()) {
    tree = &j;
  } else if (j.is_array() && !j.empty()) {
    tree = &j[0];
    if (j.size() > 1) devices = &j[1];
  } else {
    throw InvalidArgument(fmt::format("{}: not a hatchet profile: expected [tree, device_info] or a tree object, got {}", origin,
                                      j.is_array() ? "an empty array" : j.type_name()));
  }
  std::vector<const std::string*> path;
  p.root = to_node(*tree, origin, path);
  if (devices && devices->is_object()) {
    for (auto t = devices->begin(); t != devices->end(); ++t) {
      if (!t->is_object()) continue;
      for (auto d = t->begin(); d != t->end(); ++d) {
        if (!d->is_object()) continue;
        ProfDevice dev;
        dev.type = t.key();
        dev.id = d.key();
        if (auto a = d->find("arch"); a != d->end()) dev.arch = scalar_text(*a);
        auto num = [&](const char* key) {
          auto it = d->find(key);
          return it == d->end() ? 0.0 : scalar_number(*it);
        };
        dev.clock_rate = num("clock_rate");
        dev.memory_clock_rate = num("memory_clock_rate");
        dev.bus_width = num("bus_width");
        dev.num_sms = num("num_sms");
        p.devices.push_back(std::move(dev));
      }
    }
  }
  std::set<std::string> keys, nulls;
  collect_keys(p.root, keys, nulls);
  for (const auto& k : nulls)
    if (!keys.count(k)) p.null_metrics.insert(k);
  std::set<std::string> from_file, summed;
  for (const auto& k : keys)
    if (ends_with(k, kInc)) from_file.insert(k.substr(0, k.size() - kInc.size()));
  for (const auto& k : keys) {
    if (ends_with(k, kInc) || from_file.count(k)) continue;
    (additive(k) ? summed : p.plain_metrics).insert(k);
  }
  fill_inclusive(p.root, from_file, summed);
  p.inclusive_metrics = from_file;
  p.inclusive_metrics.insert(summed.begin(), summed.end());
  return p;
}

Profile load_profile(const std::string& path) {
  return parse_profile(read_all(path, "profile"), path);
}

// ---- peaks ---------------------------------------------------------------

DevicePeaks h200_peaks() {
  DevicePeaks d;
  d.name =
      "NVIDIA H200 SXM, datasheet figures (dense): FP8 1979, BF16/FP16 989.5, FP32 67, "
      "FP64 Tensor Core 67 TFLOP/s; HBM3e 4.8 TB/s";
  d.flop_per_s = {{8, 1979e12}, {16, 989.5e12}, {32, 67e12}, {64, 67e12}};
  d.byte_per_s = 4.8e12;
  return d;
}

DevicePeaks load_peaks(const std::string& spec) {
  if (lower(spec) == "h200") return h200_peaks();
  const std::string text = read_all(spec, "peaks file");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("peaks file '{}': not valid JSON: {}", spec, e.what()));
  }
  const char* rule =
      "expected {\"name\": \"...\", \"flop8/s\" | \"flop16/s\" | \"flop32/s\" | \"flop64/s\" | "
      "\"byte/s\": positive numbers}";
  if (!j.is_object()) throw InvalidArgument(fmt::format("peaks file '{}': {}", spec, rule));
  DevicePeaks d;
  d.name = spec;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (k == "name") {
      if (!it->is_string())
        throw InvalidArgument(fmt::format("peaks file '{}': \"name\" must be a string", spec));
      d.name = it->get<std::string>() + " (" + spec + ")";
      continue;
    }
    if (!it->is_number() || it->get<double>() <= 0 || !std::isfinite(it->get<double>()))
      throw InvalidArgument(fmt::format("peaks file '{}': \"{}\" must be a positive number", spec, k));
    const double v = it->get<double>();
    bool known = false;
    if (k == "byte/s") d.byte_per_s = v, known = true;
    for (int w : kWidths)
      if (k == "flop" + std::to_string(w) + "/s") d.flop_per_s[w] = v, known = true;
    if (!known)
      throw InvalidArgument(fmt::format("peaks file '{}': unknown key \"{}\"; {}", spec, k, rule));
  }
  if (d.flop_per_s.empty() && d.byte_per_s <= 0)
    throw InvalidArgument(fmt::format("peaks file '{}': no rates; {}", spec, rule));
  return d;
}

std::optional<double> metric_value(const Profile& p, const ProfNode& n, std::string_view metric,
                                   const DevicePeaks& peaks) {
  return evaluate(resolve(p, metric), n, &peaks);
}

// ---- view ----------------------------------------------------------------

std::string render_view(const Profile& a, const ViewOptions& o, const Profile* b) {
  if (!(o.threshold >= 0 && o.threshold <= 1))
    throw InvalidArgument(fmt::format("--threshold {} is not a fraction of ROOT's time in [0, 1]",
                                      o.threshold));
  std::vector<std::string> names = o.metrics;
  std::erase_if(names, [](const std::string& s) { return s.empty(); });
  if (names.empty()) {
    const bool time = a.has(kTime) || (b && b->has(kTime));
    if (time) {
      names.push_back("time/ms");
    } else {
      const Profile& src = a.inclusive_metrics.empty() && a.plain_metrics.empty() && b ? *b : a;
      if (!src.inclusive_metrics.empty()) names.push_back(*src.inclusive_metrics.begin());
      else if (!src.plain_metrics.empty()) names.push_back(*src.plain_metrics.begin());
    }
  }
  std::vector<MetricSpec> cols;
  for (const auto& n : names) cols.push_back(resolve2(a, b, n));
  std::optional<MetricSpec> sort;
  if (!o.sort.empty()) sort = resolve2(a, b, o.sort);

  bool want_peaks = sort && sort->kind == MKind::util;
  for (const auto& c : cols) want_peaks = want_peaks || c.kind == MKind::util;
  std::optional<DevicePeaks> peaks;
  if (want_peaks) peaks = load_peaks(o.peaks);
  const DevicePeaks* pk = peaks ? &*peaks : nullptr;

  VNode tree = b ? merge(&a.root, &b->root) : mirror(a.root);
  if (!o.include.empty()) keep_included(tree, Pattern(o.include, "--include"), false, true);
  if (!o.exclude.empty()) drop_excluded(tree, Pattern(o.exclude, "--exclude"));
  if (o.threshold > 0) {
    std::optional<MetricSpec> by;
    if (a.has(kTime) || (b && b->has(kTime))) {
      by = MetricSpec{"time", MKind::raw, 1, 0, std::string(kTime), true};
    } else if (!cols.empty()) {
      by = cols.front();
    }
    double base_a = 0, base_b = 0;
    if (by) {
      side_value(*by, tree.a, pk, base_a);
      side_value(*by, tree.b, pk, base_b);
      if (base_a > 0 || base_b > 0) drop_below(tree, *by, o.threshold, base_a, base_b, pk);
    }
  }
  if (o.depth >= 0) cut_depth(tree, o.depth);
  if (sort) sort_by(tree, *sort, pk);

  // Rows of cells, then the name column.
  std::vector<std::string> header;
  for (const auto& c : cols) {
    if (b) {
      header.push_back(c.label + ":a");
      header.push_back(c.label + ":b");
      header.push_back(c.label + ":b-a");
      header.push_back(c.label + ":b/a");
    } else {
      header.push_back(c.label);
    }
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> labels;
  walk(tree, "", true, true, [&](const VNode& n, const std::string& prefix) {
    std::vector<std::string> row;
    for (const auto& c : cols) {
      // Plain doubles and flags rather than optionals: GCC 12 warns
      // (-Wmaybe-uninitialized) about optionals read under a checked flag.
      double x = 0, y = 0;
      const bool ha = side_value(c, n.a, pk, x);
      row.push_back(ha ? format_value(c, x) : "-");
      if (!b) continue;
      const bool hb = side_value(c, n.b, pk, y);
      row.push_back(hb ? format_value(c, y) : "-");
      if (ha && hb) {
        std::string d = format_value(c, y - x);
        row.push_back(y - x >= 0 && d[0] != '-' ? "+" + d : d);
        row.push_back(x != 0 ? fmt::format("{:.3g}x", y / x) : "-");
      } else {
        row.push_back("-");
        row.push_back("-");
      }
    }
    rows.push_back(std::move(row));
    labels.push_back(prefix + terminal_safe(n.name));
  });
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& r : rows) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  if (b) out += fmt::format("a: {}\nb: {}\n", terminal_safe(a.origin), terminal_safe(b->origin));  // file names too
  if (pk) out += fmt::format("util: against {}\n", pk->name);
  auto line = [&](const std::vector<std::string>& cells, const std::string& name) {
    for (std::size_t i = 0; i < cells.size(); ++i)
      out += fmt::format("{:>{}}  ", cells[i], width[i]);
    out += name;
    out += '\n';
  };
  line(header, "name");
  for (std::size_t r = 0; r < rows.size(); ++r) line(rows[r], labels[r]);
  return out;
}

// ---- html ----------------------------------------------------------------

std::string render_html(const Profile& p, const HtmlOptions& o) {
  const bool timed = p.has(kTime);
  const MetricSpec time_spec{"time", MKind::raw, 1, 0, std::string(kTime), true};
  // Tooltip metrics: the derived ones the profile supports, then its raw ones.
  std::vector<std::pair<std::string, MetricSpec>> tips;
  auto maybe = [&](const char* label, const char* metric) {
    try {
      tips.emplace_back(label, resolve(p, metric));
    } catch (const InvalidArgument&) {
    }
  };
  maybe("time (ms)", "time/ms");
  maybe("avg time (us)", "avg_time/us");
  maybe("FLOP/s", "flop/s");
  maybe("byte/s", "byte/s");
  std::optional<DevicePeaks> peaks;
  if (timed && (has_flops(p, 0) || p.has("bytes"))) {
    peaks = load_peaks(o.peaks);
    maybe("util", "util");
  }
  for (const auto& m : p.inclusive_metrics)
    tips.emplace_back(m, MetricSpec{m, MKind::raw, 1, 0, m, true});
  for (const auto& m : p.plain_metrics)
    tips.emplace_back(m, MetricSpec{m, MKind::raw, 1, 0, m, false});
  const DevicePeaks* pk = peaks ? &*peaks : nullptr;

  std::function<double(const ProfNode&)> weight = [&](const ProfNode& n) -> double {
    if (timed) return std::max(0.0, evaluate(time_spec, n, nullptr).value_or(0));
    if (n.children.empty()) return 1;
    double s = 0;
    for (const auto& c : n.children) s += weight(c);
    return s;
  };
  std::function<int(const ProfNode&)> height = [&](const ProfNode& n) {
    int h = 0;
    for (const auto& c : n.children) h = std::max(h, height(c));
    return h + 1;
  };
  const int levels = height(p.root);
  const double W = std::max(o.width, 100);
  const int row = 18, top = 4;
  const int H = levels * row + 2 * top;
  const double total = weight(p.root);

  std::string svg;
  // The tooltip names the node's path, its last kTipNames names at most: a whole path per node grew as depth² ×
  // name length (8000 levels of 100-character names: gigabytes).
  constexpr std::size_t kTipNames = 16;
  std::vector<const std::string*> path;
  std::function<void(const ProfNode&, int, double, double)> draw = [&](const ProfNode& n, int depth, double x, double w) {
        path.push_back(&n.name);
        const double y = top + (levels - 1 - depth) * row;
        std::string tip = path.size() > kTipNames ? "…" : "";
        for (std::size_t i = path.size() > kTipNames ? path.size() - kTipNames : 0; i < path.size(); ++i)
          tip += (tip.empty() ? "" : "/") + *path[i];
        if (timed && total > 0)
          tip += fmt::format("\n{:.2f}% of ROOT's time", 100 * weight(n) / total);
        for (const auto& [label, spec] : tips)
          if (auto v = evaluate(spec, n, pk)) tip += "\n" + label + ": " + format_value(spec, *v);
        for (const auto& [k, v] : n.strings) tip += "\n" + k + ": " + v;
        std::uint32_t h = 2166136261u;
        for (unsigned char c : n.name) h = (h ^ c) * 16777619u;
        const std::string fill =
            fmt::format("hsl({},{}%,{}%)", h % 55, 70 + (h >> 8) % 25, 55 + (h >> 16) % 15);
        svg += fmt::format(
            "<g><title>{}</title><rect class=\"node\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" "
            "height=\"{}\" fill=\"{}\"></rect>",
            html_escape(tip), x, y, w, row - 1, fill);
        const std::size_t fits = w > 8 ? static_cast<std::size_t>((w - 6) / 6.6) : 0;
        if (fits >= 3) {
          std::string label = n.name;
          if (label.size() > fits) {
            std::size_t cut = fits - 2;
            while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
            label = label.substr(0, cut) + "..";
          }
          svg += fmt::format("<text x=\"{:.2f}\" y=\"{}\">{}</text>", x + 3, y + row - 5,
                             html_escape(label));
        }
        svg += "</g>\n";
        const double own = weight(n);
        double sum = 0;
        for (const auto& c : n.children) sum += weight(c);
        const double scale = own > 0 && sum > 0 ? w / std::max(sum, own) : 0;
        double cx = x;
        for (const auto& c : n.children) {
          const double cw = weight(c) * scale;
          draw(c, depth + 1, cx, cw);
          cx += cw;
        }
        path.pop_back();
      };
  draw(p.root, 0, 0, total > 0 ? W : 0);

  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<title>tilejit profile: " + html_escape(p.origin) + "</title>\n";
  out +=
      "<style>\nbody { font-family: monospace; margin: 12px; }\n"
      "svg text { font-size: 11px; pointer-events: none; }\n"
      "rect.node { stroke: #fff; stroke-width: 0.5; }\n"
      "rect.node:hover { stroke: #000; stroke-width: 1; }\n</style>\n</head>\n<body>\n";
  out += "<h1>tilejit profile</h1>\n<p>" + html_escape(p.origin) + ": " +
         std::to_string(p.node_count()) + " nodes; width: " +
         (timed ? fmt::format("inclusive time (ROOT {:.6g} ms)", total / 1e6)
                : std::string("leaf count (the profile has no time)")) +
         "; hover a frame for its metrics.</p>\n";
  out += fmt::format(
      "<svg width=\"{0:.0f}\" height=\"{1}\" viewBox=\"0 0 {0:.0f} {1}\" role=\"img\">\n", W, H);
  out += svg;
  out += "</svg>\n</body>\n</html>\n";
  return out;
}

// ---- the subcommands ----------------------------------------------------

int run_prof_view(const ProfViewArgs& args) {
  try {
    const Profile a = load_profile(args.file);
    std::optional<Profile> b;
    if (args.diff_given && args.diff.empty())
      throw InvalidArgument("--diff '': the profile to compare with has an empty name");
    if (!args.diff.empty()) b = load_profile(args.diff);
    const std::string text = render_view(a, args.options, b ? &*b : nullptr);
    if (!write_stream(stdout, text)) {
      std::fprintf(stderr, "tilejit: cannot write to standard output\n");
      return 1;
    }
    return 0;
  } catch (const InvalidArgument& e) {
    std::fprintf(stderr, "tilejit: %s\n", e.what());
    return 2;
  }
}

int run_prof_html(const ProfHtmlArgs& args) {
  std::string html;
  try {
    html = render_html(load_profile(args.file), args.options);
  } catch (const InvalidArgument& e) {
    std::fprintf(stderr, "tilejit: %s\n", e.what());
    return 2;
  }
  if (const std::string err = write_output_file(args.out, html); !err.empty()) {
    std::fprintf(stderr, "tilejit: cannot write '%s': %s\n", args.out.c_str(), err.c_str());
    return 1;
  }
  if (!write_stream(stdout, fmt::format("wrote {} ({} bytes)\n", args.out, html.size()))) {
    std::fprintf(stderr, "tilejit: cannot write to standard output\n");
    return 1;
  }
  return 0;
}

}  // namespace tilejit::tools
