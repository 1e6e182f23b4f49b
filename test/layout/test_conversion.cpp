// Conversion planning (conversion.hpp): one plan kind per TEST_CASE on pairs
// whose answer is known, the digit-order change of fact 12, hundreds of
// seeded random blocked pairs, and the cost model against brute force.
// Every plan made here is checked element by element by verify().
#include <doctest/doctest.h>

#include <random>
#include <string_view>

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/conversion.hpp"
#include "tilejit/layout/encodings/encodings.hpp"

namespace {
using tilejit::LayoutError;
using namespace tilejit::layout;
using LL = LinearLayout;

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

/// Plans src → dst and checks the plan element by element.
ConversionPlan planned(const LL& src, const LL& dst, int elem_bytes = 4) {
  const ConversionPlan p = plan_conversion(src, dst, elem_bytes);
  const VerifyResult v = verify(p, src, dst);
  CHECK_MESSAGE(v.ok, to_string(p.kind), ": ", v.why.view(), "\n  src ", src.to_string(),
                "\n  dst ", dst.to_string());
  CHECK(v.checked == static_cast<long long>(detail::cvt::normalize(dst, "d").total_in_size()));
  return p;
}

// fact 11 / fact 12: 96 floats over 32 lanes, registers minor and lanes minor.
constexpr LL kRegMinor = LL::identity1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0");
constexpr LL kLanesMinor =
    LL::identity1D(32, "lane", "dim0") * LL::identity1D(3, "register", "dim0");

// Compile time: the planner is constexpr (fact 12's pair is a data movement).
static_assert(plan_conversion(kRegMinor, kLanesMinor).kind == ConversionKind::shared_memory);
static_assert(plan_conversion(kRegMinor, kLanesMinor).reindex);
static_assert(plan_conversion(kLanesMinor, kLanesMinor).kind == ConversionKind::no_op);

LL row_major(int warps) { return blocked({64, 256}, {1, 4}, {8, 4}, {warps, 1}, {1, 0}); }

// ---- the four kinds ------------------------------------------------------------------

TEST_CASE("conversion_identical_layouts_is_no_op") {
  for (const LL& l : {row_major(4), mma_sync_accumulator({64, 64}, {2, 2}), wgmma_accumulator(96),
                      kRegMinor}) {
    const ConversionPlan p = planned(l, l);
    CHECK(p.kind == ConversionKind::no_op);
    CHECK(p.cost.instructions == 0);
    CHECK(p.cost.smem_bytes == 0);
    CHECK(p.cost.shuffles == 0);
    CHECK(p.cost.selects == 0);
    CHECK(p.cost.barriers == 0);
  }
  // Input dims in another order, a missing warp dim: still the same layout.
  const LL l = blocked_1d(128, 1);
  CHECK(planned(l, l.transpose_ins({"warp", "lane", "register"})).kind == ConversionKind::no_op);
  CHECK(planned(kLanesMinor, kLanesMinor * LL::zeros1D(1, "warp", "dim0")).kind ==
        ConversionKind::no_op);
}

TEST_CASE("conversion_register_order_is_register_permutation") {
  // Lanes and warps each lie along one dim, so `order` only reorders registers.
  const LL a = blocked({4, 128}, {2, 4}, {1, 32}, {2, 1}, {1, 0});
  const LL b = blocked({4, 128}, {2, 4}, {1, 32}, {2, 1}, {0, 1});
  REQUIRE(!(a == b));
  const ConversionPlan p = planned(a, b);
  CHECK(p.kind == ConversionKind::register_permutation);
  CHECK(p.cost.instructions == 0);  // a static renaming
  CHECK(p.cost.smem_bytes == 0);
  // register r of b holds what register register_source(r) of a holds
  for (int r = 0; r < 8; ++r) {
    CHECK(a.apply({{"register", p.register_source(r)}}) == b.apply({{"register", r}}));
  }
  CHECK(contains(p.why.view(), "static renaming"));
  // Lanes 8..31 repeat lanes 0..7 (the tile is narrower than the lanes) in both.
  const LL bs = blocked({4, 32}, {1, 4}, {1, 32}, {1, 1}, {1, 0});
  const LL bd = blocked({4, 32}, {2, 4}, {1, 32}, {1, 1}, {0, 1});
  REQUIRE(!(bs == bd));
  const ConversionPlan pb = planned(bs, bd);
  CHECK(pb.kind == ConversionKind::register_permutation);
  CHECK(pb.cost.instructions == 0);
}

TEST_CASE("conversion_every_thread_holds_everything_is_register_selection") {
  // Every thread holds the whole 4×8 tile (a broadcast over all lanes); the
  // destination gives each lane one element. The lowest holder of every
  // element is lane 0, but each lane finds its element in its own
  // registers: register_permutation, with a lane-dependent choice (selects).
  const LL all = blocked({4, 8}, {4, 8}, {1, 32}, {1, 1}, {1, 0});
  const LL one = blocked({4, 8}, {1, 1}, {4, 8}, {1, 1}, {1, 0});
  REQUIRE(all.sublayout_is_zero({"lane"}, {"dim0", "dim1"}));
  const ConversionPlan p = planned(all, one);
  CHECK(p.kind == ConversionKind::register_permutation);
  CHECK(p.cost.selects == 31);  // one of 32 registers, by lane
  CHECK(p.cost.shuffles == 0);
  CHECK(contains(p.why.view(), "selects"));
  // The way back: the lanes must exchange data.
  const ConversionPlan q = planned(one, all);
  CHECK(q.kind != ConversionKind::register_permutation);
}

TEST_CASE("conversion_lane_transpose_is_warp_shuffle") {
  // 16×8 over 4 warps stacked along dim0; inside a warp, lanes walk dim1
  // first in a and dim0 first in b: a permutation of the lanes of each warp.
  const LL a = blocked({16, 8}, {1, 1}, {4, 8}, {4, 1}, {1, 0});
  const LL b = blocked({16, 8}, {1, 1}, {4, 8}, {4, 1}, {0, 1});
  const ConversionPlan p = planned(a, b);
  CHECK(p.kind == ConversionKind::warp_shuffle);
  CHECK(p.cost.shuffles == 1);
  CHECK(p.cost.selects == 0);
  CHECK(p.cost.smem_bytes == 0);
  CHECK(p.cost.instructions == 1);
  // lane l of b reads lane shuffle_src_lane(0, l, w) of a, which holds the element
  for (int l = 0; l < 32; ++l) {
    const int from = p.shuffle_src_lane(0, l, 0);
    CHECK(a.apply({{"lane", from}}) == b.apply({{"lane", l}}));
  }
  // With registers: 2×4 per thread (16 registers), lanes and registers both
  // reordered: one shuffle per destination register, the sent register
  // chosen by the sender's lane.
  const LL c = blocked({32, 64}, {2, 4}, {4, 8}, {4, 1}, {1, 0});
  const LL d = blocked({32, 64}, {2, 4}, {4, 8}, {4, 1}, {0, 1});
  const ConversionPlan q = planned(c, d);
  CHECK(q.kind == ConversionKind::warp_shuffle);
  CHECK(q.cost.shuffles == 16);
  CHECK(q.cost.smem_bytes == 0);
}

TEST_CASE("conversion_blocked_mma_sync_is_shared_memory") {
  const LL blk = row_major(4);
  const LL mma = mma_sync_accumulator({64, 256}, {2, 2});
  for (const auto& [s, d] : {std::pair{blk, mma}, std::pair{mma, blk}}) {
    const ConversionPlan p = planned(s, d);
    CHECK(p.kind == ConversionKind::shared_memory);
    CHECK(!p.reindex);
    CHECK(p.cost.smem_bytes == 64 * 256 * 4);  // the tile
    CHECK(p.cost.barriers == 1);
    CHECK(p.smem.vec == 2);  // mma's register pairs are contiguous in both
    CHECK(p.cost.smem_stores == 64 * 256 / 128 / 2);
    CHECK(p.cost.bank_conflict_free());
    CHECK(contains(p.why.view(), "cross warps"));
  }
  // f16: the same plan in half the bytes
  const ConversionPlan h = planned(blk, mma, 2);
  CHECK(h.cost.smem_bytes == 64 * 256 * 2);
  CHECK(h.cost.bank_conflict_free());
}

TEST_CASE("conversion_blocked_wgmma_n96_is_shared_memory") {
  const LL wg = wgmma_accumulator(96);  // 64×96 over 4 warps, dim1 digits [2,2,2,2,2,3]
  const LL blk = blocked({64, 96}, {1, 4}, {8, 4}, {4, 1}, {1, 0});
  REQUIRE(blk.out_digits(1) == wg.out_digits(1));
  for (const auto& [s, d] : {std::pair{blk, wg}, std::pair{wg, blk}}) {
    const ConversionPlan p = planned(s, d);
    CHECK(p.kind == ConversionKind::shared_memory);
    CHECK(!p.reindex);
    CHECK(p.cost.smem_bytes == 64 * 96 * 4);
    CHECK(p.smem.offset_to_tile.in_digits(0).count(3) == 1);  // NPOT storage, exact
  }
  // Three contiguous registers per thread: dim1 digits [3,2,2,2,2,2], another
  // digit system than wgmma's — a re-indexing round trip, still exact.
  const LL blk3 = blocked({64, 96}, {1, 3}, {8, 4}, {4, 1}, {1, 0});
  REQUIRE(!(blk3.out_digits(1) == wg.out_digits(1)));
  for (const auto& [s, d] : {std::pair{blk3, wg}, std::pair{wg, blk3}}) {
    const ConversionPlan p = planned(s, d);
    CHECK(p.kind == ConversionKind::shared_memory);
    CHECK(p.reindex);
    CHECK(p.cost.smem_bytes == 64 * 96 * 4);
    CHECK(p.cost.index_ops > 0);
  }
}

TEST_CASE("conversion_fact12_digit_order_is_data_movement") {
  for (const auto& [s, d] : {std::pair{kRegMinor, kLanesMinor}, std::pair{kLanesMinor, kRegMinor}}) {
    // The algebra says why: no holder map exists in these digit systems.
    const auto c = d.invert_and_compose(s);
    REQUIRE(!c.ok());
    CHECK(c.needs_digit_reorder());
    const ConversionPlan p = planned(s, d);
    CHECK(p.kind == ConversionKind::shared_memory);
    CHECK(p.reindex);
    CHECK(contains(p.why.view(), "[3,2,2,2,2,2]"));
    CHECK(contains(p.why.view(), "[2,2,2,2,2,3]"));
    CHECK(contains(p.why.view(), "digit order"));
    CHECK(p.cost.smem_bytes == 96 * 4);
    CHECK(p.cost.smem_stores == 3);
    CHECK(p.cost.smem_loads == 3);
    // Stored lanes minor, both sides are conflict-free (3 is odd).
    CHECK(p.storage_in_dst_digits == (d == kLanesMinor));
    CHECK(p.cost.bank_conflict_free());
  }
  // element by element, by hand: lane 5 register 2 of fact 12 holds 5 + 64 = 69,
  // which fact 11 keeps in lane 23, register 0 — the plan routes it through
  // one offset.
  const ConversionPlan p = plan_conversion(kRegMinor, kLanesMinor);
  CHECK(p.load_offset(Image{2, 5, 0, 0}) == p.store_offset(Image{0, 23, 0, 0}));
}

TEST_CASE("conversion_transpose_uses_conflict_free_swizzle") {
  // 32×32 floats, one warp: a thread holds a row, then a column. The lanes
  // of one side walk dim1, of the other dim0; a plain row-major layout
  // would put a column in one bank (32-way conflict).
  const LL rows = blocked({32, 32}, {1, 1}, {1, 32}, {1, 1}, {1, 0});
  const LL cols = blocked({32, 32}, {1, 1}, {32, 1}, {1, 1}, {0, 1});
  for (const auto& [s, d] : {std::pair{rows, cols}, std::pair{cols, rows}}) {
    for (int elem_bytes : {1, 2, 4, 8}) {
      CAPTURE(elem_bytes);
      const ConversionPlan p = planned(s, d, elem_bytes);
      CHECK(p.kind == ConversionKind::shared_memory);
      CHECK(p.cost.smem_bytes == 32 * 32 * elem_bytes);
      CHECK(p.cost.bank_conflict_free());
      if (elem_bytes == 4) CHECK(p.smem.swizzled);
    }
  }
}

TEST_CASE("conversion_wave64_and_broadcast_slices_verify") {
  // AMD MFMA 32×32 (wave64) ↔ a blocked layout of 64 lanes.
  const LL mfma = mfma_accumulator({64, 64}, 32, {2, 2});
  const LL blk = blocked({64, 64}, {1, 4}, {4, 16}, {4, 1}, {1, 0});
  for (const auto& [s, d] : {std::pair{mfma, blk}, std::pair{blk, mfma}}) {
    const ConversionPlan p = planned(s, d);
    CHECK(p.kind == ConversionKind::shared_memory);
    CHECK(p.cost.smem_bytes == 64 * 64 * 4);
  }
  // Row sums: slices broadcast each value over lanes (and registers); only
  // the lowest holder stores, every holder loads.
  const LL ms = slice(mma_sync_accumulator({64, 64}, {2, 2}), 1);
  const LL bs = slice(row_major(4), 1);
  REQUIRE(ms.out_size(0) == 64);
  for (const auto& [s, d] : {std::pair{ms, bs}, std::pair{bs, ms}}) {
    const ConversionPlan p = planned(s, d);
    CHECK(p.cost.smem_bytes == (p.kind == ConversionKind::shared_memory ? 64 * 4 : 0));
  }
}

// ---- preconditions ---------------------------------------------------------------------

TEST_CASE("conversion_rejects_different_tiles") {
  CHECK_THROWS_AS((void)plan_conversion(row_major(4), row_major(8)), LayoutError);  // warps
  CHECK_THROWS_AS((void)plan_conversion(blocked_1d(128, 4), blocked_1d(256, 4)), LayoutError);
  CHECK_THROWS_AS((void)plan_conversion(row_major(4), row_major(4), 3), LayoutError);
  const LL offset = nvmma_shared({64, 64}, 2, 128);
  CHECK_THROWS_AS((void)plan_conversion(offset, offset), LayoutError);  // not distributed
}

// ---- random pairs ----------------------------------------------------------------------

struct BlockedParams {
  DimValues spt, tpw, wpc, order;
};

/// A random valid blocked layout of `shape` over `warps` warps of 32 lanes
/// (false after a few tries). With `sibling`, the same parameters as it but
/// `order` flipped, when its warps lie along one dim (then the warps hold
/// the same elements and only lanes and registers are reordered).
bool random_blocked(std::mt19937& g, const DimValues& shape, int warps, LL& out,
                    BlockedParams* params = nullptr, const BlockedParams* sibling = nullptr) {
  auto pick = [&](std::initializer_list<int> xs) {
    std::uniform_int_distribution<int> u(0, static_cast<int>(xs.size()) - 1);
    return *(xs.begin() + u(g));
  };
  if (sibling != nullptr) {
    if (sibling->wpc[0] != 1 && sibling->wpc[1] != 1) return false;
    BlockedParams bp = *sibling;
    bp.order = bp.order[0] == 1 ? DimValues{0, 1} : DimValues{1, 0};
    out = blocked(shape, bp.spt, bp.tpw, bp.wpc, bp.order);
    return true;
  }
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int t0 = pick({1, 2, 4, 8, 16, 32});
    const int w0 = std::min(warps, pick({1, 2, 4, 8}));
    BlockedParams bp{{pick({1, 1, 2, 4, 3}), pick({1, 2, 4, 3, 8})},
                     {t0, 32 / t0},
                     {w0, warps / w0},
                     pick({0, 1}) == 0 ? DimValues{1, 0} : DimValues{0, 1}};
    try {
      out = blocked(shape, bp.spt, bp.tpw, bp.wpc, bp.order);
      if (params != nullptr) *params = bp;
      return true;
    } catch (const LayoutError&) {
    }
  }
  return false;
}

TEST_CASE("conversion_random_blocked_pairs_verify") {
  std::mt19937 g(20240611);
  const std::initializer_list<int> sizes = {4, 8, 16, 32, 64, 12, 24, 48, 96, 6};
  int made = 0;
  std::array<int, 4> kinds{};
  int reindexed = 0;
  while (made < 400) {
    std::uniform_int_distribution<int> u(0, static_cast<int>(sizes.size()) - 1);
    const DimValues shape{*(sizes.begin() + u(g)), *(sizes.begin() + u(g))};
    const int warps = std::uniform_int_distribution<int>(0, 2)(g) == 0 ? 1 : 4;
    LL a, b;
    BlockedParams pa;
    if (!random_blocked(g, shape, warps, a, &pa)) continue;
    const bool sibling = std::uniform_int_distribution<int>(0, 2)(g) == 0;
    if (!random_blocked(g, shape, warps, b, nullptr, sibling ? &pa : nullptr)) continue;
    CAPTURE(a.to_string());
    CAPTURE(b.to_string());
    const int elem_bytes = std::uniform_int_distribution<int>(0, 1)(g) == 0 ? 4 : 2;
    const ConversionPlan p = planned(a, b, elem_bytes);
    ++kinds[static_cast<std::size_t>(p.kind)];
    reindexed += p.reindex ? 1 : 0;
    if (p.kind == ConversionKind::shared_memory) {
      CHECK(p.cost.smem_bytes == shape.product() * elem_bytes);
      CHECK(p.cost.ideal_store_wavefronts <= p.cost.store_wavefronts);
      CHECK(p.cost.ideal_load_wavefronts <= p.cost.load_wavefronts);
    } else {
      CHECK(p.cost.smem_bytes == 0);
    }
    ++made;
  }
  MESSAGE("kinds: no_op ", kinds[0], ", register_permutation ", kinds[1], ", warp_shuffle ",
          kinds[2], ", shared_memory ", kinds[3], " (", reindexed, " re-indexed)");
  CHECK(kinds[0] > 0);
  CHECK(kinds[1] > 0);
  CHECK(kinds[2] > 0);
  CHECK(kinds[3] > 0);
  CHECK(reindexed > 0);
}

TEST_CASE("conversion_random_blocked_mma_pairs_verify") {
  std::mt19937 g(7);
  int made = 0;
  while (made < 60) {
    const int wm = std::uniform_int_distribution<int>(0, 1)(g) == 0 ? 1 : 2;
    const DimValues shape{16 * wm * (1 + std::uniform_int_distribution<int>(0, 2)(g)),
                          16 * (1 + std::uniform_int_distribution<int>(0, 5)(g))};
    LL b;
    if (!random_blocked(g, shape, wm * 2, b)) continue;
    const LL m = mma_sync_accumulator(shape, {wm, 2});
    CAPTURE(b.to_string());
    planned(b, m);
    planned(m, b);
    ++made;
  }
}

// ---- the cost model ----------------------------------------------------------------------

TEST_CASE("conversion_wavefront_formula_matches_brute_force") {
  // The linear formula (|X ∩ K| / |X ∩ sub-word| per phase) against counting
  // distinct words per bank, instruction by instruction, on warp 0.
  std::mt19937 g(99);
  int compared = 0;
  while (compared < 100) {
    const DimValues shape{32 << std::uniform_int_distribution<int>(0, 2)(g),
                          16 << std::uniform_int_distribution<int>(0, 2)(g)};
    LL a, b;
    if (!random_blocked(g, shape, 4, a) || !random_blocked(g, shape, 4, b)) continue;
    const int elem_bytes = 1 << std::uniform_int_distribution<int>(0, 3)(g);
    const ConversionPlan p = planned(a, b, elem_bytes);
    if (p.kind != ConversionKind::shared_memory || p.reindex) continue;
    CAPTURE(a.to_string());
    CAPTURE(b.to_string());
    CAPTURE(elem_bytes);
    const auto st = detail::cvt::brute_force_wavefronts(
        p.src.in_size(0), 32, p.smem.vec, elem_bytes,
        [&](int r, int l) { return p.store_offset(Image{r, l, 0, 0}); },
        [&](int r, int l) { return p.store_writes(Image{r, l, 0, 0}); });
    const DigitMasks dfree = p.dst.free_variable_masks();
    const DigitSystem& drs = p.dst.in_digits(0);
    const auto ld = detail::cvt::brute_force_wavefronts(
        p.dst.in_size(0), 32, p.smem.vec, elem_bytes,
        [&](int r, int l) { return p.load_offset(Image{r, l, 0, 0}); },
        [&](int r, int) {
          for (int k = 0; k < drs.num_digits(); ++k) {
            if (((dfree[0] >> k) & 1u) != 0 && drs.digit(r, k) != 0) return false;
          }
          return true;
        });
    CHECK(st.actual == p.cost.store_wavefronts);
    CHECK(st.ideal == p.cost.ideal_store_wavefronts);
    CHECK(ld.actual == p.cost.load_wavefronts);
    CHECK(ld.ideal == p.cost.ideal_load_wavefronts);
    ++compared;
  }
}

}  // namespace
