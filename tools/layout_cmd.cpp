// tools/layout_cmd.cpp — `tilejit layout show`: spec parsing, the algebraic
// description and the text grid. The SVG picture is in svg.cpp.
#include "tools/layout_cmd.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "tilejit/codegen/codegen.hpp"
#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/encodings/encodings.hpp"
#include "tools/output.hpp"

namespace tilejit::tools {

namespace L = tilejit::layout;

SpecError::SpecError(std::string token, std::string rule)
    : InvalidArgument(fmt::format("bad layout spec at '{}': {}", token, rule)),
      token_(std::move(token)),
      rule_(std::move(rule)) {}

namespace {

constexpr int kMaxInt = 1 << 20;       // largest INT in a spec
constexpr int kMaxElements = 1 << 20;  // largest tile layout show enumerates
constexpr int kMaxInputs = 1 << 22;    // largest (register, lane, warp) space

constexpr const char* kValueRule =
    "value ::= INT ((x|,) INT)*, INT a decimal number in 0..1048576 (e.g. shape=16x96, order=1,0)";
constexpr const char* kKindRule =
    "spec ::= kind param* | slice dim=D [regs=keep|drop] spec; kind is one of blocked, mma, "
    "mma-a, mma-b, wgmma, mfma, shared, slice";

// ---- the grammar's tables --------------------------------------------------

struct KindInfo {
  std::string_view word;
  LayoutKind kind;
  std::vector<std::string_view> required;
  std::vector<std::string_view> optional;
};

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> k = {
      {"blocked", LayoutKind::blocked, {"shape", "tpw"}, {"spt", "wpc", "order"}},
      {"mma", LayoutKind::mma, {"shape"}, {"warps"}},
      {"mma-a", LayoutKind::mma_a, {"shape"}, {"warps"}},
      {"mma-b", LayoutKind::mma_b, {"shape"}, {"warps"}},
      {"wgmma", LayoutKind::wgmma, {"n"}, {"warps", "shape"}},
      {"mfma", LayoutKind::mfma, {"m", "shape"}, {"warps"}},
      {"shared", LayoutKind::shared, {"shape", "elem"}, {"swizzle", "contig"}},
      {"slice", LayoutKind::slice, {"dim"}, {"regs"}},
  };
  return k;
}

std::string join(const std::vector<std::string_view>& words, std::string_view sep) {
  std::string s;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i != 0) s += sep;
    s += words[i];
  }
  return s;
}

std::string keys_rule(const KindInfo& k) {
  std::string s = fmt::format("keys of {}: {}", k.word, join(k.required, ", "));
  if (!k.optional.empty()) s += fmt::format(" (required); {} (optional)", join(k.optional, ", "));
  return s;
}

struct Param {
  std::string token, key, value;
};

/// The params of one kind word: tokens[pos..] until the end, or (slice) until
/// the first token without '='. Checks names and duplicates.
class Params {
 public:
  Params(const KindInfo& kind, const std::vector<std::string>& tokens, std::size_t& pos)
      : kind_(kind), kind_token_(tokens[pos++]) {
    const bool nested = kind.kind == LayoutKind::slice;
    while (pos < tokens.size()) {
      const std::string& tok = tokens[pos];
      const std::size_t eq = tok.find('=');
      if (eq == std::string::npos) {
        if (nested) break;  // the inner spec starts here
        throw SpecError(tok, fmt::format("param ::= key=value (no blanks around '='); {}",
                                         keys_rule(kind)));
      }
      Param p{tok, tok.substr(0, eq), tok.substr(eq + 1)};
      const auto known = [&](const std::vector<std::string_view>& v) {
        return std::find(v.begin(), v.end(), p.key) != v.end();
      };
      if (!known(kind.required) && !known(kind.optional)) {
        throw SpecError(tok, fmt::format("unknown key '{}'; {}", p.key, keys_rule(kind)));
      }
      if (by_key_.count(p.key) != 0) {
        throw SpecError(tok, fmt::format("each key at most once; '{}' was already given as '{}'",
                                         p.key, by_key_[p.key].token));
      }
      by_key_[p.key] = std::move(p);
      ++pos;
    }
    for (std::string_view r : kind.required) {
      if (by_key_.count(std::string(r)) == 0) {
        throw SpecError(kind_token_, fmt::format("{} needs {}= ({})", kind.word, r, keys_rule(kind)));
      }
    }
  }

  [[nodiscard]] const std::string& kind_token() const { return kind_token_; }
  [[nodiscard]] bool has(const std::string& key) const { return by_key_.count(key) != 0; }
  /// The param whose integers carry the most prime factors (with multiplicity), or nullptr when none has any:
  /// the likeliest cause when a digit system overflows (shape=96 spt=1048576: spt's 20 twos, not shape's 6).
  [[nodiscard]] const Param* heaviest() const {
    const Param* best = nullptr;
    int most = 0;
    for (const auto& [k, p] : by_key_) {
      int digits = 0;
      for (std::size_t i = 0; i < p.value.size();) {
        if (p.value[i] < '0' || p.value[i] > '9') { ++i; continue; }
        long long n = 0;
        for (; i < p.value.size() && p.value[i] >= '0' && p.value[i] <= '9'; ++i) n = std::min(n * 10 + (p.value[i] - '0'), 1LL << 40);
        for (long long f = 2; n > 1 && f * f <= n; ++f)
          while (n % f == 0) n /= f, ++digits;
        if (n > 1) ++digits;
      }
      if (digits > most) most = digits, best = &p;
    }
    return best;
  }
  [[nodiscard]] const Param& get(const std::string& key) const { return by_key_.at(key); }
  /// The text of all params, for messages.
  [[nodiscard]] std::string text() const {
    std::string s = kind_token_;
    for (const auto& [k, p] : by_key_) s += " " + p.token;
    return s;
  }

  /// The integers of key, which must have between min_n and max_n entries,
  /// each >= lo; def when the key is absent.
  [[nodiscard]] std::vector<int> ints(const std::string& key, std::size_t min_n, std::size_t max_n,
                                      int lo, std::vector<int> def = {},
                                      std::string_view per = {}) const {
    if (!has(key)) return def;
    const Param& p = get(key);
    std::vector<int> out;
    const std::string& v = p.value;
    std::size_t i = 0;
    for (;;) {
      std::size_t j = i;
      while (j < v.size() && v[j] >= '0' && v[j] <= '9') ++j;
      std::size_t first = i;  // leading zeros do not count towards the 8-digit cap (000000096 is 96)
      while (first + 1 < j && v[first] == '0') ++first;
      if (j == i || j - first > 8) throw SpecError(p.token, kValueRule);
      const int x = std::stoi(v.substr(first, j - first));
      if (x > kMaxInt) throw SpecError(p.token, kValueRule);
      out.push_back(x);
      if (j == v.size()) break;
      if (v[j] != 'x' && v[j] != ',') throw SpecError(p.token, kValueRule);
      i = j + 1;
    }
    if (out.size() < min_n || out.size() > max_n) {
      const std::string n = min_n == max_n ? std::to_string(min_n)
                                           : fmt::format("{} to {}", min_n, max_n);
      throw SpecError(p.token, fmt::format("{} takes {} entr{}{}{} (got {}){}", key, n,
                                           max_n == 1 ? "y" : "ies", per.empty() ? "" : ", ", per,
                                           out.size(),
                                           key == "shape" ? "; layout show draws rank 1 or 2"
                                                          : ""));
    }
    for (int x : out) {
      if (x < lo) {
        throw SpecError(p.token, fmt::format("every entry of {} must be at least {}", key, lo));
      }
    }
    return out;
  }
  [[nodiscard]] int one(const std::string& key, int lo, int def = 0) const {
    return has(key) ? ints(key, 1, 1, lo)[0] : def;
  }

 private:
  const KindInfo& kind_;
  std::string kind_token_;
  std::map<std::string, Param> by_key_;
};

L::DimValues dims(const std::vector<int>& v) {
  L::DimValues d;
  for (int x : v) d.v[static_cast<std::size_t>(d.rank++)] = x;
  return d;
}

/// `warps` (the values of `key`, possibly defaulted) if their product is a warp count a program can have
/// (codegen::valid_num_warps: a power of two in 1..32, or 12, 20, 24, 28); else a SpecError against `key`.
std::vector<int> program_warps(const Params& ps, const std::string& key, std::vector<int> warps) {
  long long total = 1;
  for (int w : warps) total *= w;
  if (total > 32 || !tilejit::codegen::valid_num_warps(static_cast<int>(total)))
    throw SpecError(ps.has(key) ? ps.get(key).token : ps.kind_token(),
                    fmt::format("{} make {} warps: a program has a power of two in 1..32, or 12, 20, 24 or 28 warps "
                                "(num_warps)", key, total));
  return warps;
}

/// Runs a factory; a LayoutError becomes a SpecError against the kind word.
template <class F>
L::LinearLayout build(const Params& ps, F&& f) {
  try {
    return f();
  } catch (const LayoutError& e) {
    // The digit cap: blame the param with the most prime factors (the shape, or a per-thread / per-warp count).
    const std::string what = e.what();
    if (what.find("a digit system holds at most") != std::string::npos && ps.heaviest())
      throw SpecError(ps.heaviest()->token,
                      fmt::format("{}: every named dim (register, lane, warp, dim0, dim1) holds at most {} prime digits "
                                  "(2^{} elements of a power-of-two size), and this value needs more in one of them",
                                  what, L::DigitSystem::kMaxDigits, L::DigitSystem::kMaxDigits));
    throw SpecError(ps.kind_token(), what);
  }
}

ParsedLayout parse_at(const std::vector<std::string>& tokens, std::size_t& pos) {
  if (pos >= tokens.size()) throw SpecError("", std::string("the spec is empty; ") + kKindRule);
  const std::string& word = tokens[pos];
  const auto it = std::find_if(kinds().begin(), kinds().end(),
                               [&](const KindInfo& k) { return k.word == word; });
  if (it == kinds().end()) {
    throw SpecError(word, fmt::format("unknown layout kind '{}'; {}", word, kKindRule));
  }
  const Params ps(*it, tokens, pos);
  ParsedLayout r;
  r.kind = it->kind;
  switch (it->kind) {
    case LayoutKind::blocked: {
      const std::vector<int> shape = ps.ints("shape", 1, 2, 1);
      const std::size_t rank = shape.size();
      std::vector<int> ones(rank, 1), order;
      for (std::size_t d = rank; d-- > 0;) order.push_back(static_cast<int>(d));
      const auto same_rank = [&](const char* key, std::vector<int> def) {
        return ps.ints(key, rank, rank, 1, std::move(def), "one per dim of shape");
      };
      const std::vector<int> spt = same_rank("spt", ones);
      const std::vector<int> tpw = same_rank("tpw", ones);
      const std::vector<int> wpc = program_warps(ps, "wpc", same_rank("wpc", ones));
      if (ps.has("order")) {
        order = ps.ints("order", rank, rank, 0);
        std::vector<int> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t d = 0; d < rank; ++d) {
          if (sorted[d] != static_cast<int>(d)) {
            throw SpecError(ps.get("order").token,
                            fmt::format("order is a permutation of the dims 0..{}, minor first "
                                        "(1,0: dim1 contiguous)",
                                        rank - 1));
          }
        }
      }
      r.layout = build(ps, [&] {
        return L::blocked(dims(shape), dims(spt), dims(tpw), dims(wpc), dims(order));
      });
      break;
    }
    case LayoutKind::mma:
    case LayoutKind::mma_a:
    case LayoutKind::mma_b: {
      const std::vector<int> shape = ps.ints("shape", 2, 2, 1);
      const std::vector<int> warps = program_warps(ps, "warps", ps.ints("warps", 2, 2, 1, {1, 1}));
      r.layout = build(ps, [&] {
        if (it->kind == LayoutKind::mma) return L::mma_sync_accumulator(dims(shape), dims(warps));
        if (it->kind == LayoutKind::mma_a) return L::mma_sync_operand_a(dims(shape), dims(warps));
        return L::mma_sync_operand_b(dims(shape), dims(warps));
      });
      break;
    }
    case LayoutKind::wgmma: {
      const int n = ps.one("n", 1);
      if (!L::wgmma_legal_n(n)) {
        throw SpecError(ps.get("n").token, "n is a multiple of 8 in 8..256 (wgmma m64nNk16)");
      }
      std::vector<int> warps = program_warps(ps, "warps", ps.ints("warps", 1, 2, 1, {4}));
      if (warps.size() == 1) warps.push_back(1);
      const std::vector<int> shape =
          ps.ints("shape", 2, 2, 1, {16 * warps[0], n * warps[1]});
      r.layout = build(ps, [&] {
        auto res = L::try_wgmma_accumulator(dims(shape), n, dims(warps));
        if (!res.ok()) throw SpecError(ps.get("n").token, std::string(res.reason()));
        return res.value();
      });
      break;
    }
    case LayoutKind::mfma: {
      const int m = ps.one("m", 1);
      if (m != 16 && m != 32) throw SpecError(ps.get("m").token, "m is 16 or 32 (MFMA 16x16 or 32x32)");
      const std::vector<int> shape = ps.ints("shape", 2, 2, 1);
      const std::vector<int> warps = program_warps(ps, "warps", ps.ints("warps", 2, 2, 1, {1, 1}));
      r.layout = build(ps, [&] { return L::mfma_accumulator(dims(shape), m, dims(warps)); });
      break;
    }
    case LayoutKind::shared: {
      const std::vector<int> shape = ps.ints("shape", 2, 2, 1);
      r.elem_bytes = ps.one("elem", 1);
      const int swizzle = ps.one("swizzle", 0, 0);
      const int contig = ps.one("contig", 0, 1);
      r.layout = build(ps, [&] {
        return L::nvmma_shared(dims(shape), r.elem_bytes, swizzle, contig);
      });
      r.memory = true;
      break;
    }
    case LayoutKind::slice: {
      const int dim = ps.one("dim", 0);
      L::SliceRegisters regs = L::SliceRegisters::keep;
      if (ps.has("regs")) {
        const Param& p = ps.get("regs");
        if (p.value == "drop") {
          regs = L::SliceRegisters::drop_copies;
        } else if (p.value != "keep") {
          throw SpecError(p.token, "regs ::= keep | drop (drop: remove register digits that "
                                   "became copies)");
        }
      }
      if (pos >= tokens.size()) {
        throw SpecError(ps.kind_token(),
                        "slice needs an inner spec after its params: slice dim=D "
                        "[regs=keep|drop] spec");
      }
      // A slice has 1 dim, so a slice's inner spec cannot be one: refused before recursing (a spec of a thousand
      // nested slices would otherwise recurse a thousand times before any rank is checked).
      if (tokens[pos] == "slice")
        throw SpecError(tokens[pos], "slice's inner spec must have 2 dims and a slice has 1: slice dim=D "
                                     "[regs=keep|drop] spec, where spec is not itself a slice");
      ParsedLayout inner = parse_at(tokens, pos);
      const int rank = inner.layout.num_out_dims();
      if (rank < 2) {
        throw SpecError(ps.get("dim").token,
                        fmt::format("slice removes one dim and layout show draws rank 1 or 2: "
                                    "the inner layout must have 2 dims (it has {})",
                                    rank));
      }
      if (dim >= rank) {
        throw SpecError(ps.get("dim").token,
                        fmt::format("dim is 0..{} (the dims of the inner layout)", rank - 1));
      }
      r.layout = build(ps, [&] { return L::slice(inner.layout, dim, regs); });
      r.memory = inner.memory;
      r.elem_bytes = inner.elem_bytes;
      break;
    }
  }
  if (r.layout.total_out_size() > kMaxElements || r.layout.total_in_size() > kMaxInputs) {
    throw SpecError(ps.kind_token(),
                    fmt::format("layout show draws tiles of at most {} elements held by at most "
                                "{} inputs (this one: {} and {})",
                                kMaxElements, kMaxInputs, r.layout.total_out_size(),
                                r.layout.total_in_size()));
  }
  return r;
}

std::string digits_text(const L::DigitSystem& ds) {
  std::string s = "[";
  for (int k = 0; k < ds.num_digits(); ++k) {
    if (k != 0) s += ',';
    s += std::to_string(ds.radix(k));
  }
  return s + "]";
}

/// Display order of the input dims: block, warp, lane, register, then others.
std::vector<int> label_order(const L::LinearLayout& l) {
  std::vector<int> order;
  for (const char* n : {"block", "warp", "lane", "register"}) {
    const int i = detail::in_dim(l, n);
    if (i >= 0) order.push_back(i);
  }
  for (int i = 0; i < l.num_in_dims(); ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  return order;
}

std::string prefix_of(std::string_view name) {
  if (name == "block") return "b";
  if (name == "warp") return "w";
  if (name == "lane") return "t";
  if (name == "register") return "r";
  return std::string(name);
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

std::string kind_title(const ParsedLayout& p) {
  std::string ins;
  for (int i = 0; i < p.layout.num_in_dims(); ++i) {
    if (!ins.empty()) ins += ", ";
    ins += p.layout.in_name(i).view();
  }
  std::string outs;
  for (int j = 0; j < p.layout.num_out_dims(); ++j) {
    if (j != 0) outs += ", ";
    outs += p.layout.out_name(j).view();
  }
  return fmt::format("L : ({}) -> ({})", ins, outs);
}

}  // namespace

ParsedLayout parse_layout_spec(std::string_view spec) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < spec.size()) {
    while (i < spec.size() && (spec[i] == ' ' || spec[i] == '\t' || spec[i] == '\n')) ++i;
    std::size_t j = i;
    while (j < spec.size() && spec[j] != ' ' && spec[j] != '\t' && spec[j] != '\n') ++j;
    if (j > i) tokens.emplace_back(spec.substr(i, j - i));
    i = j;
  }
  std::size_t pos = 0;
  ParsedLayout r = parse_at(tokens, pos);
  // parse_at consumes every token (only slice stops early, and then parses the rest).
  std::string joined;
  for (const std::string& t : tokens) joined += (joined.empty() ? "" : " ") + t;
  r.spec = joined;
  return r;
}

// ---- owners -------------------------------------------------------------------

const std::vector<L::Image>& OwnerTable::at(int row, int col) const {
  return owners.at(static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
                   static_cast<std::size_t>(col));
}
int OwnerTable::min_owners() const {
  std::size_t m = owners.empty() ? 0 : owners[0].size();
  for (const auto& o : owners) m = std::min(m, o.size());
  return static_cast<int>(m);
}
int OwnerTable::max_owners() const {
  std::size_t m = 0;
  for (const auto& o : owners) m = std::max(m, o.size());
  return static_cast<int>(m);
}

OwnerTable compute_owners(const L::LinearLayout& l) {
  if (l.num_out_dims() < 1 || l.num_out_dims() > 2) {
    throw InvalidArgument(fmt::format("layout show draws layouts with 1 or 2 output dims, not {}",
                                      l.num_out_dims()));
  }
  OwnerTable t;
  if (l.num_out_dims() == 1) {
    t.cols = l.out_size(0);
  } else {
    t.rows = l.out_size(0);
    t.cols = l.out_size(1);
  }
  t.owners.resize(static_cast<std::size_t>(t.rows) * static_cast<std::size_t>(t.cols));
  // Flattening order: the first input dim is minor.
  const int n = l.total_in_size();
  L::Image in{};
  for (int f = 0; f < n; ++f) {
    int rest = f;
    for (int i = 0; i < l.num_in_dims(); ++i) {
      in[static_cast<std::size_t>(i)] = rest % l.in_size(i);
      rest /= l.in_size(i);
    }
    const L::Image out = l.apply(in);
    const std::size_t e = l.num_out_dims() == 1
                              ? static_cast<std::size_t>(out[0])
                              : static_cast<std::size_t>(out[0]) * static_cast<std::size_t>(t.cols) +
                                    static_cast<std::size_t>(out[1]);
    t.owners[e].push_back(in);
  }
  return t;
}

std::string owner_label(const ParsedLayout& p, const L::Image& in) {
  const L::LinearLayout& l = p.layout;
  if (p.memory) {
    const int o = detail::in_dim(l, "offset");
    if (o >= 0) return std::to_string(in[static_cast<std::size_t>(o)]);
  }
  std::string s;
  for (int i : label_order(l)) {
    if (!s.empty()) s += ':';
    s += prefix_of(l.in_name(i).view());
    s += std::to_string(in[static_cast<std::size_t>(i)]);
  }
  return s;
}

std::string cell_text(const ParsedLayout& p, const OwnerTable& t, int row, int col,
                      bool all_owners) {
  const std::vector<L::Image>& o = t.at(row, col);
  if (o.empty()) return "-";
  if (all_owners) {
    // At most kMaxOwnersListed per cell: a value broadcast over every thread of a program has one owner per
    // thread, which made cells of thousands of characters.
    constexpr std::size_t kMaxOwnersListed = 8;
    std::string s;
    for (std::size_t i = 0; i < o.size() && i < kMaxOwnersListed; ++i) s += (s.empty() ? "" : "|") + owner_label(p, o[i]);
    if (o.size() > kMaxOwnersListed) s += fmt::format("|+{}", o.size() - kMaxOwnersListed);
    return s;
  }
  std::string s = owner_label(p, o[0]);
  if (o.size() > 1) s += fmt::format("+{}", o.size() - 1);
  return s;
}

// ---- views ---------------------------------------------------------------------

namespace detail {

int in_dim(const L::LinearLayout& l, std::string_view name) {
  for (int i = 0; i < l.num_in_dims(); ++i) {
    if (l.in_name(i).view() == name) return i;
  }
  return -1;
}

GridView grid_view(const OwnerTable& t, int wrap, int max_cells) {
  GridView v;
  v.one_d = t.rows == 1;
  if (v.one_d) {
    v.cols = std::max(1, std::min(std::max(wrap, 1), t.cols));
    v.rows = (t.cols + v.cols - 1) / v.cols;
  } else {
    v.rows = t.rows;
    v.cols = t.cols;
  }
  v.shown_rows = v.rows;
  v.shown_cols = v.cols;
  max_cells = std::max(max_cells, 1);
  if (static_cast<long long>(v.rows) * v.cols > max_cells) {
    int side = 1;
    while ((side + 1) * (side + 1) <= max_cells) ++side;
    int c = std::max(side, max_cells / v.rows);
    if (c >= 8) c -= c % 8;
    v.shown_cols = std::clamp(c, 1, v.cols);
    v.shown_rows = std::clamp(max_cells / v.shown_cols, 1, v.rows);
  }
  return v;
}

std::pair<int, int> view_element(const OwnerTable& t, const GridView& v, int row, int col) {
  if (!v.one_d) return {row, col};
  const int e = row * v.cols + col;
  if (e >= t.cols) return {-1, -1};
  return {0, e};
}

}  // namespace detail

// ---- text ----------------------------------------------------------------------

std::string describe_layout(const ParsedLayout& p) {
  const L::LinearLayout& l = p.layout;
  std::string s = fmt::format("{}\n  {}; L(x) = sum of digit * image, digit-wise, no carries\n\n",
                              p.spec, kind_title(p));
  s += "digit systems (minor digit first)\n";
  std::size_t wn = 0, wd = 0;
  for (int i = 0; i < l.num_in_dims(); ++i) {
    wn = std::max(wn, l.in_name(i).view().size());
    wd = std::max(wd, digits_text(l.in_digits(i)).size());
  }
  for (int j = 0; j < l.num_out_dims(); ++j) {
    wn = std::max(wn, l.out_name(j).view().size());
    wd = std::max(wd, digits_text(l.out_digits(j)).size());
  }
  for (int i = 0; i < l.num_in_dims(); ++i) {
    s += fmt::format("  in   {}  {}  size {}\n", pad(std::string(l.in_name(i).view()), wn),
                     pad(digits_text(l.in_digits(i)), wd), l.in_size(i));
  }
  for (int j = 0; j < l.num_out_dims(); ++j) {
    s += fmt::format("  out  {}  {}  size {}\n", pad(std::string(l.out_name(j).view()), wn),
                     pad(digits_text(l.out_digits(j)), wd), l.out_size(j));
  }

  s += "\nimages (input digit (radix) -> ";
  s += l.num_out_dims() == 1 ? fmt::format("{} index", l.out_name(0).view())
                             : fmt::format("({}, {})", l.out_name(0).view(), l.out_name(1).view());
  s += " = the output digits it sets, out.d<k>(radix))\n";
  struct Row {
    std::string in, img, terms;
  };
  std::vector<Row> rows;
  std::vector<std::string> zero;
  for (int i = 0; i < l.num_in_dims(); ++i) {
    const L::DigitSystem& ds = l.in_digits(i);
    if (ds.num_digits() == 0) {
      rows.push_back({fmt::format("{}", l.in_name(i).view()), "", "(size 1: no digits)"});
      continue;
    }
    for (int k = 0; k < ds.num_digits(); ++k) {
      const L::Image img = l.image(i, k);
      Row r;
      r.in = fmt::format("{}.d{} ({})", l.in_name(i).view(), k, ds.radix(k));
      if (l.num_out_dims() == 1) {
        r.img = std::to_string(img[0]);
      } else {
        r.img = fmt::format("({}, {})", img[0], img[1]);
      }
      for (int j = 0; j < l.num_out_dims(); ++j) {
        const L::DigitSystem& os = l.out_digits(j);
        const L::DigitSystem::Digits d = os.decompose(img[static_cast<std::size_t>(j)]);
        for (int m = 0; m < os.num_digits(); ++m) {
          const int c = d[static_cast<std::size_t>(m)];
          if (c == 0) continue;
          if (!r.terms.empty()) r.terms += " + ";
          if (c != 1) r.terms += fmt::format("{}*", c);
          r.terms += fmt::format("{}.d{}({})", l.out_name(j).view(), m, os.radix(m));
        }
      }
      if (r.terms.empty()) {
        r.terms = "0: a copy (broadcast)";
        zero.push_back(fmt::format("{}.d{}", l.in_name(i).view(), k));
      }
      rows.push_back(std::move(r));
    }
  }
  std::size_t w0 = 0, w1 = 0;
  for (const Row& r : rows) {
    w0 = std::max(w0, r.in.size());
    w1 = std::max(w1, r.img.size());
  }
  for (const Row& r : rows) {
    if (r.img.empty()) {
      s += fmt::format("  {}  {}\n", pad(r.in, w0), r.terms);
    } else {
      s += fmt::format("  {}  ->  {}  = {}\n", pad(r.in, w0), pad(r.img, w1), r.terms);
    }
  }
  s += fmt::format("\n  injective: {}   surjective: {}\n", l.is_injective() ? "yes" : "no",
                   l.is_surjective() ? "yes" : "no");
  if (!zero.empty()) {
    std::string z;
    for (const std::string& d : zero) z += (z.empty() ? "" : ", ") + d;
    s += fmt::format("  digits with image 0 (their values are copies of one another): {}\n", z);
  }
  return s;
}

std::string render_grid(const ParsedLayout& p, const OwnerTable& t, const ShowOptions& o) {
  const L::LinearLayout& l = p.layout;
  const detail::GridView v = detail::grid_view(t, o.wrap, o.max_cells);
  std::string cell_rule;
  if (p.memory) {
    cell_rule = "cell = the element's offset in shared memory (elements, not bytes)";
  } else {
    std::string parts;
    for (int i : label_order(l)) {
      if (!parts.empty()) parts += ':';
      parts += prefix_of(l.in_name(i).view()) + "<" + std::string(l.in_name(i).view()) + ">";
    }
    cell_rule = fmt::format("cell = {}{}", parts,
                            o.all_owners ? ", every owner joined by | (the first 8, then |+k more)"
                                         : ", +k = k more owners hold copies");
  }
  std::string s;
  if (v.one_d) {
    s += fmt::format("grid: {} ({} elements), {} per row, row label = first element; {}\n",
                     l.out_name(0).view(), t.cols, v.cols, cell_rule);
  } else {
    s += fmt::format("grid: {} ({} rows) x {} ({} columns); {}\n", l.out_name(0).view(), t.rows,
                     l.out_name(1).view(), t.cols, cell_rule);
  }
  // Cell texts and column width.
  std::vector<std::string> cells(static_cast<std::size_t>(v.shown_rows) *
                                 static_cast<std::size_t>(v.shown_cols));
  std::size_t w = 1;
  for (int r = 0; r < v.shown_rows; ++r) {
    for (int c = 0; c < v.shown_cols; ++c) {
      const auto [tr, tc] = detail::view_element(t, v, r, c);
      std::string& cell = cells[static_cast<std::size_t>(r * v.shown_cols + c)];
      if (tr >= 0) cell = cell_text(p, t, tr, tc, o.all_owners);
      w = std::max(w, cell.size());
    }
  }
  for (int c = 0; c < v.shown_cols; ++c) {
    w = std::max(w, (v.one_d ? fmt::format("+{}", c) : std::to_string(c)).size());
  }
  const std::size_t wl = std::to_string(v.one_d ? (v.rows - 1) * v.cols : v.rows - 1).size();
  std::string line = std::string(wl, ' ');
  for (int c = 0; c < v.shown_cols; ++c) {
    line += "  " + pad(v.one_d ? fmt::format("+{}", c) : std::to_string(c), w);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  s += line + "\n";
  for (int r = 0; r < v.shown_rows; ++r) {
    const std::string label = std::to_string(v.one_d ? r * v.cols : r);
    line = std::string(wl - label.size(), ' ') + label;
    for (int c = 0; c < v.shown_cols; ++c) {
      line += "  " + pad(cells[static_cast<std::size_t>(r * v.shown_cols + c)], w);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    s += line + "\n";
  }
  if (v.truncated()) {
    s += fmt::format("(truncated: rows 0..{} of {} and columns 0..{} of {} shown; "
                     "--max-cells {} shows all)\n",
                     v.shown_rows - 1, v.rows, v.shown_cols - 1, v.cols,
                     static_cast<long long>(v.rows) * v.cols);
  }
  const int lo = t.min_owners(), hi = t.max_owners();
  const char* holder = p.memory ? "offset" : "owner";
  if (lo == 1 && hi == 1) {
    s += fmt::format("every element has exactly one {}: no replication\n", holder);
  } else if (lo == hi) {
    s += fmt::format("replication: every element has {} {}s (the first one shown is the minimum "
                     "in flattening order)\n",
                     lo, holder);
  } else {
    std::size_t none = 0;
    for (const auto& ow : t.owners) none += ow.empty() ? 1 : 0;
    s += fmt::format("replication: {} to {} {}s per element; {} element(s) have none\n", lo, hi,
                     holder, none);
  }
  return s;
}

std::string layout_show(std::string_view spec, const ShowOptions& o, std::string* svg) {
  const ParsedLayout p = parse_layout_spec(spec);
  const OwnerTable t = compute_owners(p.layout);
  if (svg != nullptr) *svg = render_svg(p, t, o);
  return describe_layout(p) + "\n" + render_grid(p, t, o);
}

int run_layout_show(const LayoutShowArgs& args) {
  std::string spec;
  for (const std::string& s : args.spec) spec += (spec.empty() ? "" : " ") + s;
  std::string svg, text;
  try {
    text = layout_show(spec, args.options, args.svg_path.empty() ? nullptr : &svg);
  } catch (const SpecError& e) {
    std::fprintf(stderr, "tilejit layout show: %s\n", e.what());
    return 2;
  }
  if (!args.svg_path.empty()) {  // written first: a failure prints the error alone, not the layout before it
    if (const std::string err = write_output_file(args.svg_path, svg); !err.empty()) {
      std::fprintf(stderr, "tilejit layout show: cannot write %s: %s\n", args.svg_path.c_str(), err.c_str());
      return 1;
    }
  }
  if (!write_stream(stdout, args.svg_path.empty() ? text : text + "wrote " + args.svg_path + "\n")) {
    std::fprintf(stderr, "tilejit layout show: cannot write to standard output\n");
    return 1;
  }
  return 0;
}

}  // namespace tilejit::tools
