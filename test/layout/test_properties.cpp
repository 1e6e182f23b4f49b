// Property tests: thousands of random layouts (powers of two and mixed
// radix) checked against a brute-force oracle.
//
// Reproducible: every property draws from a generator seeded with the suite
// seed (printed once; default kDefaultSeed, override with the environment
// variable TILEJIT_LAYOUT_SEED) mixed with the property's name, and a failure
// reports the seed, the iteration and the layouts involved.
//
// The oracle never calls the library's apply(): it tabulates each layout
// from its images alone, using linearity one digit at a time —
// T(0) = 0 and T(x) = T(x - stride(q)) ⊕ image(q) for q the lowest nonzero
// digit of x in flattening order (first input dim minor) — with its own
// digit-wise addition. Every other fact (image sizes, inverses, minimum
// preimages, ...) is read off these tables.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tilejit/layout/linear_layout.hpp"

namespace {
using namespace tilejit::layout;
using LL = LinearLayout;

constexpr std::uint64_t kDefaultSeed = 0x5eed'1a70u;

std::uint64_t suite_seed() {
  static const std::uint64_t seed = [] {
    std::uint64_t s = kDefaultSeed;
    if (const char* env = std::getenv("TILEJIT_LAYOUT_SEED"); env != nullptr && *env != '\0') {
      s = std::strtoull(env, nullptr, 0);
    }
    std::printf("[layout properties] seed %llu (set TILEJIT_LAYOUT_SEED to change)\n",
                static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

/// Per-property generator: the suite seed mixed with the property's name.
struct Rng {
  explicit Rng(const char* property) {
    std::uint64_t h = suite_seed();
    for (const char* c = property; *c != '\0'; ++c)
      h = (h ^ static_cast<unsigned char>(*c)) * 0x100000001b3ull;
    g.seed(h);
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0.0, 1.0)(g) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(uniform(0, static_cast<int>(v.size()) - 1))];
  }
  std::mt19937_64 g;
};

/// Prints one summary line per property (for the report) at the end.
void summary(const char* property, int layouts, int mixed, double seconds) {
  std::printf("[layout properties] %-28s %5d cases (%d mixed radix) %.2fs\n", property, layouts,
              mixed, seconds);
}
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- random layouts ----------------------------------------------------------------------

const std::vector<int> kMixedRadices{2, 2, 2, 2, 3, 3, 3, 5, 7};
const char* const kInNames[] = {"register", "lane", "warp", "block"};
const char* const kOutNames[] = {"dim0", "dim1", "dim2", "dim3"};

/// Up to max_digits digits, total size at most max_size.
DigitSystem random_digits(Rng& rng, bool mixed, int max_digits, int max_size) {
  DigitSystem ds;
  const int n = rng.uniform(0, max_digits);
  for (int k = 0; k < n; ++k) {
    const int r = mixed ? rng.pick(kMixedRadices) : 2;
    if (ds.size() * r > max_size) break;
    ds.push_back(r);
  }
  return ds;
}

struct Dims {
  std::vector<DimSpec> dims;
  int total() const {
    int t = 1;
    for (const DimSpec& d : dims) t *= d.digits.size();
    return t;
  }
};

Dims random_dims(Rng& rng, bool mixed, const char* const* names, int max_dims, int max_total) {
  Dims d;
  const int n = rng.uniform(1, max_dims);
  std::vector<int> which{0, 1, 2, 3};  // names drawn from a pool of four
  std::shuffle(which.begin(), which.end(), rng.g);
  for (int i = 0; i < n; ++i) {
    const int room = max_total / d.total();
    d.dims.push_back({names[which[static_cast<std::size_t>(i)]],
                      random_digits(rng, mixed, 4, room < 1 ? 1 : room)});
  }
  // shuffle the declaration order so that "first dim" varies
  std::shuffle(d.dims.begin(), d.dims.end(), rng.g);
  return d;
}

/// A random value of out dim `ds` using only its digits of radix p.
int random_value_of_radix(Rng& rng, const DigitSystem& ds, int p) {
  int v = 0;
  for (int q = 0; q < ds.num_digits(); ++q) {
    if (ds.radix(q) == p) v += rng.uniform(0, p - 1) * ds.stride(q);
  }
  return v;
}

/// Random valid images: per input digit of radix p, a random radix-p value
/// in every output dim; sometimes 0 (a broadcast) or a copy of an earlier
/// digit's image of the same radix (an alias).
LL random_layout(Rng& rng, const Dims& ins, const Dims& outs, double zero = 0.12,
                 double alias = 0.12) {
  LayoutBuilder b;
  for (const DimSpec& o : outs.dims) b.add_out_dim(o.name, o.digits);
  std::vector<std::pair<int, Image>> seen;  // (radix, image)
  for (const DimSpec& in : ins.dims) {
    const int i = b.add_in_dim(in.name, in.digits);
    for (int k = 0; k < in.digits.num_digits(); ++k) {
      const int p = in.digits.radix(k);
      Image img{};
      if (rng.chance(zero)) {
        // broadcast: stays 0
      } else if (rng.chance(alias) && !seen.empty()) {
        const auto& s =
            seen[static_cast<std::size_t>(rng.uniform(0, static_cast<int>(seen.size()) - 1))];
        if (s.first == p) img = s.second;
      } else {
        for (std::size_t j = 0; j < outs.dims.size(); ++j) {
          img[j] = random_value_of_radix(rng, outs.dims[j].digits, p);
        }
      }
      seen.emplace_back(p, img);
      b.set_image(i, k, img);
    }
  }
  return b.build();
}

LL random_layout(Rng& rng, bool mixed, int max_in = 512, int max_out = 256) {
  const Dims outs = random_dims(rng, mixed, kOutNames, 3, max_out);
  const Dims ins = random_dims(rng, mixed, kInNames, 3, max_in);
  return random_layout(rng, ins, outs);
}

/// A random bijection: out dims random, in dims a shuffled split of the same
/// radices; each input digit starts on its own output digit of its radix
/// (times a nonzero scalar), then random column operations mix them.
LL random_bijection(Rng& rng, bool mixed, int max_total = 256) {
  const Dims outs = random_dims(rng, mixed, kOutNames, 3, max_total);
  struct Slot {
    int dim, digit, radix;
  };
  std::vector<Slot> slots;
  for (int j = 0; j < static_cast<int>(outs.dims.size()); ++j) {
    for (int q = 0; q < outs.dims[j].digits.num_digits(); ++q) {
      slots.push_back({j, q, outs.dims[j].digits.radix(q)});
    }
  }
  std::shuffle(slots.begin(), slots.end(), rng.g);
  // cut the shuffled slots into 1..3 input dims
  const int n_in = rng.uniform(1, 3);
  std::vector<int> cut{0};
  for (int i = 1; i < n_in; ++i) cut.push_back(rng.uniform(0, static_cast<int>(slots.size())));
  cut.push_back(static_cast<int>(slots.size()));
  std::sort(cut.begin(), cut.end());
  LayoutBuilder b;
  for (const DimSpec& o : outs.dims) b.add_out_dim(o.name, o.digits);
  std::vector<std::pair<int, int>> where;  // slot index → (in dim, digit)
  std::vector<Image> images(slots.size());
  for (int i = 0; i < n_in; ++i) {
    DigitSystem ds;
    for (int s = cut[static_cast<std::size_t>(i)]; s < cut[static_cast<std::size_t>(i) + 1]; ++s) {
      ds.push_back(slots[static_cast<std::size_t>(s)].radix);
    }
    b.add_in_dim(kInNames[i], ds);
  }
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const Slot& sl = slots[s];
    images[s][static_cast<std::size_t>(sl.dim)] =
        rng.uniform(1, sl.radix - 1) *
        outs.dims[static_cast<std::size_t>(sl.dim)].digits.stride(sl.digit);
  }
  // column operations within one radix keep the map bijective
  const int ops = rng.uniform(0, 2 * static_cast<int>(slots.size()));
  for (int t = 0; t < ops && slots.size() > 1; ++t) {
    const auto a = static_cast<std::size_t>(rng.uniform(0, static_cast<int>(slots.size()) - 1));
    const auto c = static_cast<std::size_t>(rng.uniform(0, static_cast<int>(slots.size()) - 1));
    if (a == c || slots[a].radix != slots[c].radix) continue;
    const int p = slots[a].radix;
    const int f = rng.uniform(1, p - 1);
    for (std::size_t j = 0; j < outs.dims.size(); ++j) {
      const DigitSystem& ds = outs.dims[j].digits;
      images[a][j] = ds.add(images[a][j], ds.scale(images[c][j], f));
    }
  }
  std::size_t s = 0;
  for (int i = 0; i < n_in; ++i) {
    for (int k = 0; k < cut[static_cast<std::size_t>(i) + 1] - cut[static_cast<std::size_t>(i)];
         ++k) {
      b.set_image(i, k, images[s++]);
    }
  }
  return b.build();
}

bool has_mixed_radix(const LL& l) {
  for (int i = 0; i < l.num_in_dims(); ++i) {
    if (l.in_digits(i).count(2) != l.in_digits(i).num_digits()) return true;
  }
  for (int j = 0; j < l.num_out_dims(); ++j) {
    if (l.out_digits(j).count(2) != l.out_digits(j).num_digits()) return true;
  }
  return false;
}

Dims in_dims_of(const LL& l) {
  Dims d;
  for (int i = 0; i < l.num_in_dims(); ++i) d.dims.push_back({l.in_name(i), l.in_digits(i)});
  return d;
}
Dims out_dims_of(const LL& l) {
  Dims d;
  for (int j = 0; j < l.num_out_dims(); ++j) d.dims.push_back({l.out_name(j), l.out_digits(j)});
  return d;
}

// ---- the oracle ---------------------------------------------------------------------------

/// Digit-wise sum without carries, written independently of DigitSystem::add.
int oracle_add(const std::vector<int>& radices, int a, int b) {
  int v = 0, stride = 1;
  for (int r : radices) {
    v += ((a % r + b % r) % r) * stride;
    a /= r;
    b /= r;
    stride *= r;
  }
  return v;
}

/// A layout's full table, indexed by flat input (first input dim minor); each
/// entry is the flat output (first output dim minor).
struct Table {
  std::vector<int> out;  // flat output per flat input
  int total_in = 1, total_out = 1;
  std::vector<int> in_sizes, out_sizes;
};

Table tabulate(const LL& l) {
  Table t;
  std::vector<std::vector<int>> out_radix(static_cast<std::size_t>(l.num_out_dims()));
  for (int j = 0; j < l.num_out_dims(); ++j) {
    for (int q = 0; q < l.out_digits(j).num_digits(); ++q) {
      out_radix[static_cast<std::size_t>(j)].push_back(l.out_digits(j).radix(q));
    }
    t.out_sizes.push_back(l.out_size(j));
    t.total_out *= l.out_size(j);
  }
  struct FlatDigit {
    int radix, stride;
    Image image;
  };
  std::vector<FlatDigit> flat;
  for (int i = 0; i < l.num_in_dims(); ++i) {
    for (int k = 0; k < l.in_digits(i).num_digits(); ++k) {
      flat.push_back(
          {l.in_digits(i).radix(k), t.total_in * l.in_digits(i).stride(k), l.image(i, k)});
    }
    t.in_sizes.push_back(l.in_size(i));
    t.total_in *= l.in_size(i);
  }
  std::vector<Image> full(static_cast<std::size_t>(t.total_in));
  t.out.assign(static_cast<std::size_t>(t.total_in), 0);
  for (int x = 1; x < t.total_in; ++x) {
    std::size_t q = 0;
    while ((x / flat[q].stride) % flat[q].radix == 0) ++q;
    Image v = full[static_cast<std::size_t>(x - flat[q].stride)];
    for (int j = 0; j < l.num_out_dims(); ++j) {
      v[static_cast<std::size_t>(j)] =
          oracle_add(out_radix[static_cast<std::size_t>(j)], v[static_cast<std::size_t>(j)],
                     flat[q].image[static_cast<std::size_t>(j)]);
    }
    full[static_cast<std::size_t>(x)] = v;
  }
  for (int x = 0; x < t.total_in; ++x) {
    int f = 0, stride = 1;
    for (int j = 0; j < l.num_out_dims(); ++j) {
      f += full[static_cast<std::size_t>(x)][static_cast<std::size_t>(j)] * stride;
      stride *= l.out_size(j);
    }
    t.out[static_cast<std::size_t>(x)] = f;
  }
  return t;
}

/// Flat index ↔ per-dim indices (first dim minor).
Image split_flat(int f, const std::vector<int>& sizes) {
  Image v{};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    v[i] = f % sizes[i];
    f /= sizes[i];
  }
  return v;
}
int join_flat(const Image& v, const std::vector<int>& sizes) {
  int f = 0, stride = 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    f += v[i] * stride;
    stride *= sizes[i];
  }
  return f;
}

/// Number of distinct outputs.
int image_size(const Table& t) {
  std::vector<char> hit(static_cast<std::size_t>(t.total_out), 0);
  int n = 0;
  for (int y : t.out) {
    if (!hit[static_cast<std::size_t>(y)]) ++n;
    hit[static_cast<std::size_t>(y)] = 1;
  }
  return n;
}

/// For every flat output, its smallest flat preimage, or -1.
std::vector<int> min_preimage(const Table& t) {
  std::vector<int> m(static_cast<std::size_t>(t.total_out), -1);
  for (int x = t.total_in - 1; x >= 0; --x)
    m[static_cast<std::size_t>(t.out[static_cast<std::size_t>(x)])] = x;
  return m;
}

/// The layout without size-1 dims, dims reordered like `like` (for results
/// that are equal up to the size-1 dims Triton's division keeps).
bool same_map_up_to_unit_dims(const LL& x, const LL& y) {
  auto squeeze = [](const LL& l) {
    NameList ins, outs;
    for (int i = 0; i < l.num_in_dims(); ++i) {
      if (l.in_size(i) > 1) ins.push_back(l.in_name(i));
    }
    for (int j = 0; j < l.num_out_dims(); ++j) {
      if (l.out_size(j) > 1) outs.push_back(l.out_name(j));
    }
    return l.sublayout(ins, outs);
  };
  const LL a = squeeze(x), b = squeeze(y);
  if (a.num_in_dims() != b.num_in_dims() || a.num_out_dims() != b.num_out_dims()) return false;
  NameList ins, outs;
  for (int i = 0; i < b.num_in_dims(); ++i) {
    if (a.in_dim_index(b.in_name(i)) < 0) return false;
    ins.push_back(b.in_name(i));
  }
  for (int j = 0; j < b.num_out_dims(); ++j) {
    if (a.out_dim_index(b.out_name(j)) < 0) return false;
    outs.push_back(b.out_name(j));
  }
  return a.transpose_ins(ins).transpose_outs(outs) == b;
}

/// Validity re-checked through the public builder.
bool rebuilds(const LL& l) {
  LayoutBuilder b;
  for (int j = 0; j < l.num_out_dims(); ++j) b.add_out_dim(l.out_name(j), l.out_digits(j));
  for (int i = 0; i < l.num_in_dims(); ++i) {
    b.add_in_dim(l.in_name(i), l.in_digits(i));
    for (int k = 0; k < l.in_digits(i).num_digits(); ++k) b.set_image(i, k, l.image(i, k));
  }
  return b.try_build().ok();
}

#define LAYOUT_INFO(it, ...)                              \
  INFO("seed " << suite_seed() << " iteration " << (it)); \
  INFO(__VA_ARGS__)

}  // namespace

// ---- apply, rank, surjectivity ------------------------------------------------------------

TEST_CASE("property_apply_matches_table") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("apply");
  int mixed = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    const LL l = random_layout(rng, it % 2 == 1);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    bool same = true;
    for (int x = 0; x < t.total_in && same; ++x) {
      same = join_flat(l.apply(split_flat(x, t.in_sizes)), t.out_sizes) ==
             t.out[static_cast<std::size_t>(x)];
    }
    CHECK(same);
  }
  summary("apply == table", kCases, mixed, since(t0));
}

TEST_CASE("property_rank_and_surjectivity_per_prime") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("rank");
  int mixed = 0;
  constexpr int kCases = 3000;
  for (int it = 0; it < kCases; ++it) {
    const LL l = random_layout(rng, it % 3 != 0);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    long long predicted = 1;
    for (int p : {2, 3, 5, 7}) {
      for (int r = 0; r < l.rank(p); ++r) predicted *= p;
    }
    const int n = image_size(t);
    CHECK(predicted == n);
    CHECK(l.is_surjective() == (n == t.total_out));
    CHECK(l.is_injective() == (n == t.total_in));
    CHECK(l.is_invertible() == (n == t.total_in && n == t.total_out));
  }
  summary("rank / surjective / injective", kCases, mixed, since(t0));
}

// ---- inverses ----------------------------------------------------------------------------------

TEST_CASE("property_invert_round_trip") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("invert");
  int mixed = 0, refused = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    // mostly bijections; some random layouts to check refusals
    const bool bij = it % 4 != 3;
    const LL l = bij ? random_bijection(rng, it % 2 == 1) : random_layout(rng, it % 2 == 1, 64, 64);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    const bool bijective = image_size(t) == t.total_in && t.total_in == t.total_out;
    const auto inv = l.invert();
    CHECK(inv.ok() == bijective);
    if (!inv.ok()) {
      ++refused;
      continue;
    }
    const LL& li = inv.value();
    CHECK(rebuilds(li));
    // invert ∘ L = id and L ∘ invert = id, as layouts and element by element
    const auto left = l.compose(li);
    const auto right = li.compose(l);
    REQUIRE(left.ok());
    REQUIRE(right.ok());
    LL id_in, id_out;
    for (int i = 0; i < l.num_in_dims(); ++i)
      id_in *= LL::identity1D(l.in_digits(i), l.in_name(i), l.in_name(i));
    for (int j = 0; j < l.num_out_dims(); ++j)
      id_out *= LL::identity1D(l.out_digits(j), l.out_name(j), l.out_name(j));
    CHECK(left.value() == id_in);
    CHECK(right.value() == id_out);
    const Table ti = tabulate(li);
    bool ok = true;
    for (int x = 0; x < t.total_in && ok; ++x)
      ok = ti.out[static_cast<std::size_t>(t.out[static_cast<std::size_t>(x)])] == x;
    CHECK(ok);
  }
  summary("invert round trip", kCases, mixed, since(t0));
  CHECK(refused > 0);  // the random quarter includes non-bijections
}

TEST_CASE("property_pseudoinvert_minimum_right_inverse") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("pseudoinvert");
  int mixed = 0;
  constexpr int kCases = 1500;
  for (int it = 0; it < kCases; ++it) {
    // more inputs than outputs, so that surjective layouts are common
    const Dims outs = random_dims(rng, it % 2 == 1, kOutNames, 2, 24);
    const Dims ins = random_dims(rng, it % 2 == 1, kInNames, 3, 256);
    const LL l = random_layout(rng, ins, outs, 0.2, 0.2);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    const auto p = l.pseudoinvert();
    CHECK(p.ok() == (image_size(t) == t.total_out));
    if (!p.ok()) continue;
    const Table tp = tabulate(p.value());
    const std::vector<int> lowest = min_preimage(t);
    bool ok = true;
    for (int y = 0; y < t.total_out && ok; ++y) {
      const int x = tp.out[static_cast<std::size_t>(y)];
      ok = x < t.total_in && t.out[static_cast<std::size_t>(x)] == y &&
           x == lowest[static_cast<std::size_t>(y)];
    }
    CHECK(ok);
  }
  summary("pseudoinvert (minimum)", kCases, mixed, since(t0));
}

TEST_CASE("property_invert_and_compose_minimum_offsets") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("invert_and_compose");
  int mixed = 0, solved = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    const bool mix = it % 2 == 1;
    // B: often not injective (broadcasts and aliases)
    const Dims youts = random_dims(rng, mix, kOutNames, 2, 64);
    const LL b = random_layout(rng, random_dims(rng, mix, kInNames, 3, 256), youts, 0.2, 0.2);
    // A's outputs: B's dims in a shuffled order, sometimes only a prefix of a dim's digits
    Dims aouts = youts;
    std::shuffle(aouts.dims.begin(), aouts.dims.end(), rng.g);
    const bool prefix = rng.chance(0.25);
    if (prefix) {
      auto& d = aouts.dims[0].digits;
      d = d.prefix(rng.uniform(0, d.num_digits()));
    }
    const Dims ains = random_dims(rng, mix, kInNames, 2, 64);
    LayoutBuilder ab;
    for (const DimSpec& o : aouts.dims) ab.add_out_dim(o.name, o.digits);
    const bool reachable = rng.chance(0.8);
    for (const DimSpec& in : ains.dims) {
      const int i = ab.add_in_dim(in.name, in.digits);
      for (int k = 0; k < in.digits.num_digits(); ++k) {
        const int p = in.digits.radix(k);
        Image img{};
        if (reachable) {
          // a value of B: B applied to an input using only B's radix-p digits
          Image x{};
          for (int bi = 0; bi < b.num_in_dims(); ++bi) {
            for (int q = 0; q < b.in_digits(bi).num_digits(); ++q) {
              if (b.in_digits(bi).radix(q) == p)
                x[bi] += rng.uniform(0, p - 1) * b.in_digits(bi).stride(q);
            }
          }
          const Image y = b.apply(x);
          for (std::size_t j = 0; j < aouts.dims.size(); ++j) {
            const int v = y[static_cast<std::size_t>(b.out_dim_index(aouts.dims[j].name))];
            img[j] = v < aouts.dims[j].digits.size() ? v : 0;
          }
        } else {
          for (std::size_t j = 0; j < aouts.dims.size(); ++j)
            img[j] = random_value_of_radix(rng, aouts.dims[j].digits, p);
        }
        ab.set_image(i, k, img);
      }
    }
    const LL a = ab.build();
    mixed += has_mixed_radix(a) || has_mixed_radix(b) ? 1 : 0;
    LAYOUT_INFO(it, "A = " << a.to_string() << "\nB = " << b.to_string());
    const Table ta = tabulate(a), tb = tabulate(b);
    const std::vector<int> lowest = min_preimage(tb);
    // A(x) as a flat output of B (A's dims may be in another order, or smaller)
    auto a_in_b = [&](int x) {
      const Image ya = split_flat(ta.out[static_cast<std::size_t>(x)], ta.out_sizes);
      Image yb{};
      for (int j = 0; j < a.num_out_dims(); ++j)
        yb[static_cast<std::size_t>(b.out_dim_index(a.out_name(j)))] =
            ya[static_cast<std::size_t>(j)];
      return join_flat(yb, tb.out_sizes);
    };
    bool solvable = true;
    for (int x = 0; x < ta.total_in && solvable; ++x)
      solvable = lowest[static_cast<std::size_t>(a_in_b(x))] >= 0;
    const auto c = a.invert_and_compose(b);
    CHECK(c.ok() == solvable);
    if (!c.ok()) {
      CHECK(c.kind() == FailureKind::kUnsatisfied);
      continue;
    }
    ++solved;
    CHECK(rebuilds(c.value()));
    const Table tc = tabulate(c.value());
    bool ok = true;
    for (int x = 0; x < ta.total_in && ok; ++x) {
      const int y = tc.out[static_cast<std::size_t>(x)];
      // B(C(x)) == A(x), and C(x) is the smallest such input of B
      ok = tb.out[static_cast<std::size_t>(y)] == a_in_b(x) &&
           y == lowest[static_cast<std::size_t>(a_in_b(x))];
    }
    CHECK(ok);
  }
  summary("invert_and_compose (minimum)", kCases, mixed, since(t0));
  CHECK(solved > kCases / 2);
}

// ---- composition and products ---------------------------------------------------------------

TEST_CASE("property_compose_associative") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("compose");
  int mixed = 0;
  constexpr int kCases = 1500;
  for (int it = 0; it < kCases; ++it) {
    const bool mix = it % 2 == 1;
    const Dims i = random_dims(rng, mix, kInNames, 2, 64);
    const Dims x = random_dims(rng, mix, kOutNames, 2, 64);
    const Dims y = random_dims(rng, mix, kInNames, 2, 64);
    const Dims z = random_dims(rng, mix, kOutNames, 2, 64);
    // A's outputs may be a prefix of B's inputs (a smaller digit system)
    Dims xa = x;
    if (rng.chance(0.25))
      xa.dims[0].digits = xa.dims[0].digits.prefix(rng.uniform(0, xa.dims[0].digits.num_digits()));
    Dims xb = x;
    std::shuffle(xb.dims.begin(), xb.dims.end(), rng.g);
    const LL a = random_layout(rng, i, xa);
    const LL b = random_layout(rng, xb, y);
    const LL c = random_layout(rng, y, z);
    mixed += has_mixed_radix(a) || has_mixed_radix(b) || has_mixed_radix(c) ? 1 : 0;
    LAYOUT_INFO(it,
                "A = " << a.to_string() << "\nB = " << b.to_string() << "\nC = " << c.to_string());
    const auto ab = a.compose(b);
    const auto bc = b.compose(c);
    REQUIRE_MESSAGE(ab.ok(), ab.reason());
    REQUIRE_MESSAGE(bc.ok(), bc.reason());
    const auto left = ab.value().compose(c);
    const auto right = a.compose(bc.value());
    REQUIRE(left.ok());
    REQUIRE(right.ok());
    CHECK(left.value() == right.value());
    // and it is the chain of applications
    const Table ta = tabulate(a), tb = tabulate(b), tc = tabulate(c), tl = tabulate(left.value());
    bool ok = true;
    for (int v = 0; v < ta.total_in && ok; ++v) {
      const Image xs = split_flat(ta.out[static_cast<std::size_t>(v)], ta.out_sizes);
      Image xbv{};
      for (int j = 0; j < a.num_out_dims(); ++j)
        xbv[static_cast<std::size_t>(b.in_dim_index(a.out_name(j)))] =
            xs[static_cast<std::size_t>(j)];
      ok = tl.out[static_cast<std::size_t>(v)] ==
           tc.out[static_cast<std::size_t>(
               tb.out[static_cast<std::size_t>(join_flat(xbv, tb.in_sizes))])];
    }
    CHECK(ok);
  }
  summary("compose associative", kCases, mixed, since(t0));
}

TEST_CASE("property_product_then_divide") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("divide");
  int mixed = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    const bool mix = it % 2 == 1;
    // names drawn from the same pools, so factors often share dims
    const LL a = random_layout(rng, random_dims(rng, mix, kInNames, 2, 32),
                               random_dims(rng, mix, kOutNames, 2, 32));
    const LL b = random_layout(rng, random_dims(rng, mix, kInNames, 2, 32),
                               random_dims(rng, mix, kOutNames, 2, 32));
    const LL p = a * b;
    mixed += has_mixed_radix(p) ? 1 : 0;
    LAYOUT_INFO(it, "A = " << a.to_string() << "\nB = " << b.to_string());
    const auto right = divide_right(p, b);
    REQUIRE_MESSAGE(right.ok(), right.reason());
    CHECK(right.value() * b == p);
    CHECK(same_map_up_to_unit_dims(right.value(), a));
    const auto left = divide_left(p, a);
    REQUIRE_MESSAGE(left.ok(), left.reason());
    CHECK(same_map_up_to_unit_dims(left.value(), b));
    // B * C reproduces P up to dim order
    const LL bc = a * left.value();
    CHECK(same_map_up_to_unit_dims(bc, p));
    // the product's table: (A*B)(a, b) = A(a) + size_A · B(b) in shared dims
    const Table tp = tabulate(p);
    CHECK(image_size(tp) == image_size(tabulate(a)) * image_size(tabulate(b)));
  }
  summary("(A*B) / B == A, A \\ (A*B) == B", kCases, mixed, since(t0));
}

// ---- reshapes, transposes, flattening ---------------------------------------------------------

namespace {
/// Random sizes that multiply to the total of `digits`: usually runs of the
/// flattened digits (representable), sometimes a shuffled product (often not).
std::vector<int> random_split(Rng& rng, const std::vector<int>& radices, bool runs) {
  std::vector<int> r = radices;
  if (!runs) std::shuffle(r.begin(), r.end(), rng.g);
  const int n = rng.uniform(1, 3);
  std::vector<int> cut{0};
  for (int i = 1; i < n; ++i) cut.push_back(rng.uniform(0, static_cast<int>(r.size())));
  cut.push_back(static_cast<int>(r.size()));
  std::sort(cut.begin(), cut.end());
  std::vector<int> sizes;
  for (int i = 0; i < n; ++i) {
    int s = 1;
    for (int q = cut[static_cast<std::size_t>(i)]; q < cut[static_cast<std::size_t>(i) + 1]; ++q)
      s *= r[static_cast<std::size_t>(q)];
    sizes.push_back(s);
  }
  return sizes;
}
/// Oracle: the sizes are runs of the flattened radices iff every running
/// product of the sizes is a running product of the radices.
bool are_runs(const std::vector<int>& radices, const std::vector<int>& sizes) {
  std::vector<long long> prefix{1};
  for (int r : radices) prefix.push_back(prefix.back() * r);
  long long acc = 1;
  for (int s : sizes) {
    acc *= s;
    if (std::find(prefix.begin(), prefix.end(), acc) == prefix.end()) return false;
  }
  return true;
}
std::vector<int> flat_radices(const Dims& d) {
  std::vector<int> r;
  for (const DimSpec& s : d.dims) {
    for (int k = 0; k < s.digits.num_digits(); ++k) r.push_back(s.digits.radix(k));
  }
  return r;
}
SizeList sizes_named(const std::vector<int>& sizes, const char* const* names) {
  SizeList l;
  for (std::size_t i = 0; i < sizes.size(); ++i) l.push_back({names[i], sizes[i]});
  return l;
}
SizeList sizes_of(const Dims& d) {
  SizeList l;
  for (const DimSpec& s : d.dims) l.push_back({s.name, s.digits.size()});
  return l;
}
const char* const kNewNames[] = {"a", "b", "c", "d"};
}  // namespace

TEST_CASE("property_reshape_round_trips") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("reshape");
  int mixed = 0, refused = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    const LL l = random_layout(rng, it % 2 == 1, 128, 128);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    const Dims ins = in_dims_of(l), outs = out_dims_of(l);
    // inputs
    const std::vector<int> in_sizes = random_split(rng, flat_radices(ins), rng.chance(0.7));
    const auto ri = l.reshape_ins(sizes_named(in_sizes, kNewNames));
    CHECK(ri.ok() == are_runs(flat_radices(ins), in_sizes));
    if (ri.ok()) {
      // same flattened map, and back again
      CHECK(tabulate(ri.value()).out == t.out);
      const auto back = ri.value().reshape_ins(sizes_of(ins));
      REQUIRE(back.ok());
      CHECK(back.value() == l);
    } else {
      ++refused;
      CHECK(ri.kind() == FailureKind::kDigitOrder);
    }
    // outputs
    const std::vector<int> out_sizes = random_split(rng, flat_radices(outs), rng.chance(0.7));
    const auto ro = l.reshape_outs(sizes_named(out_sizes, kNewNames));
    CHECK(ro.ok() == are_runs(flat_radices(outs), out_sizes));
    if (ro.ok()) {
      CHECK(rebuilds(ro.value()));
      CHECK(tabulate(ro.value()).out == t.out);  // flat outputs unchanged
      const auto back = ro.value().reshape_outs(sizes_of(outs));
      REQUIRE(back.ok());
      CHECK(back.value() == l);
    } else {
      ++refused;
      CHECK(ro.kind() == FailureKind::kDigitOrder);
    }
  }
  summary("reshape round trips (ins+outs)", kCases, mixed, since(t0));
  CHECK(refused > 0);
}

TEST_CASE("property_transpose_and_flatten") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("transpose");
  int mixed = 0;
  constexpr int kCases = 1500;
  for (int it = 0; it < kCases; ++it) {
    const LL l = random_layout(rng, it % 2 == 1, 128, 128);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    // transpose: a random permutation, then back
    std::vector<int> pi(static_cast<std::size_t>(l.num_in_dims())),
        po(static_cast<std::size_t>(l.num_out_dims()));
    for (std::size_t i = 0; i < pi.size(); ++i) pi[i] = static_cast<int>(i);
    for (std::size_t j = 0; j < po.size(); ++j) po[j] = static_cast<int>(j);
    std::shuffle(pi.begin(), pi.end(), rng.g);
    std::shuffle(po.begin(), po.end(), rng.g);
    NameList in_order, out_order, in_back, out_back;
    for (int i : pi) in_order.push_back(l.in_name(i));
    for (int j : po) out_order.push_back(l.out_name(j));
    for (int i = 0; i < l.num_in_dims(); ++i) in_back.push_back(l.in_name(i));
    for (int j = 0; j < l.num_out_dims(); ++j) out_back.push_back(l.out_name(j));
    const LL tr = l.transpose_ins(in_order).transpose_outs(out_order);
    CHECK(tr.transpose_ins(in_back).transpose_outs(out_back) == l);
    bool same = true;
    for (int x = 0; x < t.total_in && same; ++x) {
      const Image xs = split_flat(x, t.in_sizes);
      Image xt{};
      for (std::size_t i = 0; i < pi.size(); ++i) xt[i] = xs[static_cast<std::size_t>(pi[i])];
      const Image yt = tr.apply(xt);
      const Image y = split_flat(t.out[static_cast<std::size_t>(x)], t.out_sizes);
      for (std::size_t j = 0; j < po.size(); ++j)
        same = same && yt[j] == y[static_cast<std::size_t>(po[j])];
    }
    CHECK(same);
    // flatten == reshape to one dim, and the same flat table
    const LL fi = l.flatten_ins(), fo = l.flatten_outs();
    CHECK(fi == l.reshape_ins({{l.in_name(0), l.total_in_size()}}).value());
    CHECK(fo == l.reshape_outs({{l.out_name(0), l.total_out_size()}}).value());
    CHECK(tabulate(fi).out == t.out);
    CHECK(tabulate(fo).out == t.out);
    CHECK(tabulate(fi.flatten_outs()).out == t.out);
    CHECK(fo.reshape_outs(sizes_of(out_dims_of(l))).value() == l);
  }
  summary("transpose / flatten", kCases, mixed, since(t0));
}

// ---- sublayout, concat, quotient ----------------------------------------------------------------

TEST_CASE("property_sublayout_concat_quotient") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("sublayout");
  int mixed = 0, quotients = 0;
  constexpr int kCases = 1500;
  for (int it = 0; it < kCases; ++it) {
    const LL l = random_layout(rng, it % 2 == 1, 128, 128);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    // split the inputs in two and concat the sublayouts: L again
    NameList first, rest, outs;
    for (int j = 0; j < l.num_out_dims(); ++j) outs.push_back(l.out_name(j));
    const int cut = rng.uniform(0, l.num_in_dims());
    for (int i = 0; i < l.num_in_dims(); ++i) (i < cut ? first : rest).push_back(l.in_name(i));
    const auto joined = l.sublayout(first, outs).concat_ins(l.sublayout(rest, outs));
    REQUIRE_MESSAGE(joined.ok(), joined.reason());
    CHECK(joined.value() == l);
    // split the outputs and concat_outs
    NameList o1, o2, ins;
    for (int i = 0; i < l.num_in_dims(); ++i) ins.push_back(l.in_name(i));
    const int ocut = rng.uniform(0, l.num_out_dims());
    for (int j = 0; j < l.num_out_dims(); ++j) (j < ocut ? o1 : o2).push_back(l.out_name(j));
    const auto paired = l.sublayout(ins, o1).concat_outs(l.sublayout(ins, o2));
    REQUIRE_MESSAGE(paired.ok(), paired.reason());
    CHECK(paired.value() == l);
    CHECK(
        l.sublayout_is_zero(first, outs) ==
        (tabulate(l.sublayout(first, outs)).out ==
         std::vector<int>(static_cast<std::size_t>(l.sublayout(first, outs).total_in_size()), 0)));
    // quotient: identity on a fresh dim times L gives L back
    const DigitSystem qd = random_digits(rng, it % 2 == 1, 3, 8);
    if (l.num_in_dims() < 4 && l.num_out_dims() < 4) {
      const LL withq = LL::identity1D(qd, "q", "q") * l;
      const auto q = withq.quotient({"q"});
      REQUIRE_MESSAGE(q.ok(), q.reason());
      CHECK(q.value() == l);
      ++quotients;
      // a random layout: quotient succeeds only if it really is the identity on a dim
      const Dims sq{{{"q", qd}}};
      const LL mixq = random_layout(rng, sq, sq) * l;
      const auto q2 = mixq.quotient({"q"});
      bool identity = true;
      for (int k = 0; k < qd.num_digits(); ++k)
        identity = identity && mixq.image(0, k)[0] == qd.stride(k);
      CHECK(q2.ok() == identity);
    }
  }
  summary("sublayout / concat / quotient", kCases, mixed, since(t0));
  CHECK(quotients > kCases / 2);
}

// ---- free variables and consecutive runs ------------------------------------------------------

TEST_CASE("property_free_variables_pick_one_minimum_holder") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("free_variables");
  int mixed = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    const Dims outs = random_dims(rng, it % 2 == 1, kOutNames, 2, 32);
    const Dims ins = random_dims(rng, it % 2 == 1, kInNames, 3, 256);
    const LL l = random_layout(rng, ins, outs, 0.25, 0.25);
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    const DigitMasks masks = l.free_variable_masks();
    const std::vector<int> lowest = min_preimage(t);
    bool any_free = false, zero_images_free = true;
    for (int i = 0; i < l.num_in_dims(); ++i) {
      any_free = any_free || masks[static_cast<std::size_t>(i)] != 0;
      for (int k = 0; k < l.in_digits(i).num_digits(); ++k) {
        if (l.image(i, k) == Image{} && (masks[static_cast<std::size_t>(i)] >> k & 1u) == 0)
          zero_images_free = false;
      }
    }
    CHECK(zero_images_free);
    CHECK(any_free == !l.is_injective());
    // the inputs whose free digits are 0: exactly the minimum preimages
    int picked = 0;
    bool minimal = true;
    for (int x = 0; x < t.total_in; ++x) {
      const Image xs = split_flat(x, t.in_sizes);
      bool all_zero = true;
      for (int i = 0; i < l.num_in_dims(); ++i) {
        const DigitSystem& ds = l.in_digits(i);
        for (int k = 0; k < ds.num_digits(); ++k) {
          if ((masks[static_cast<std::size_t>(i)] >> k & 1u) != 0 &&
              ds.digit(xs[static_cast<std::size_t>(i)], k) != 0)
            all_zero = false;
        }
      }
      if (!all_zero) continue;
      ++picked;
      minimal =
          minimal && lowest[static_cast<std::size_t>(t.out[static_cast<std::size_t>(x)])] == x;
    }
    CHECK(minimal);
    CHECK(picked == image_size(t));
  }
  summary("free variables (min holders)", kCases, mixed, since(t0));
}

TEST_CASE("property_num_consecutive_in_out") {
  const auto t0 = std::chrono::steady_clock::now();
  Rng rng("consecutive");
  int mixed = 0, nontrivial = 0;
  constexpr int kCases = 2000;
  for (int it = 0; it < kCases; ++it) {
    // half of the cases start with an identity block so that V > 1 is common
    LL l = random_layout(rng, it % 2 == 1, 64, 64);
    if (it % 4 < 2) {
      const DigitSystem ds = random_digits(rng, it % 2 == 1, 3, 16);
      const LL id = LL::identity1D(ds, l.in_name(0), l.out_name(0));
      if (l.num_out_dims() >= 1) l = id * l;
    }
    mixed += has_mixed_radix(l) ? 1 : 0;
    LAYOUT_INFO(it, l.to_string());
    const Table t = tabulate(l);
    const int v = l.num_consecutive_in_out();
    nontrivial += v > 1 ? 1 : 0;
    // brute force: does block size w work? (first input dim minor in the flat
    // index; L(a·w + u, rest) = L(a·w, rest) + (u, 0, ...))
    auto works = [&](int w) {
      const int o0 = t.out_sizes[0];
      for (int x = 0; x < t.total_in; ++x) {
        const Image xs = split_flat(x, t.in_sizes);
        const int u = xs[0] % w;
        Image base = xs;
        base[0] -= u;
        const Image y = split_flat(t.out[static_cast<std::size_t>(x)], t.out_sizes);
        Image yb =
            split_flat(t.out[static_cast<std::size_t>(join_flat(base, t.in_sizes))], t.out_sizes);
        yb[0] += u;
        if (yb[0] >= o0 || y != yb) return false;
      }
      return true;
    };
    CHECK(works(v));
    // maximal among the strides of the first input dim
    const DigitSystem& ds = l.in_digits(0);
    for (int k = 0; k <= ds.num_digits(); ++k) {
      if (ds.stride(k) > v) CHECK_FALSE(works(ds.stride(k)));
    }
  }
  summary("num_consecutive_in_out", kCases, mixed, since(t0));
  CHECK(nontrivial > kCases / 4);
}
