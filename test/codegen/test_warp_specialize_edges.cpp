// Edge cases of warp specialisation (CompileOptions / codegen::Options
// {.warp_specialize = true, .pingpong}) on sm_90a, checked without a GPU.
//
// For every kernel below the generator must either apply it (diagnostic
// "warp specialised") or fall back visibly ("warp specialisation not
// applied: ...") with exactly the source it generates without the option;
// never throw, and never produce code NVRTC (ptxas included) rejects. Where it
// applies, check_ws() checks the protocol between the producer warp group and
// the consumers:
//   - one CTA barrier (after the mbarrier initialisation), before the producer
//     branch; the consumers use named barrier 1 afterwards;
//   - setmaxnreg: dec 24 in the producer, inc from the register pool in the consumers;
//   - per pipelined loop: the producer walks the same iteration space as the
//     consumers (same lo / hi / step text), issues every copy (tj_issue is
//     called by the producer only) and waits on the per-stage "empty"
//     mbarriers, initialised with num_warps arrivals; each consumer warp
//     arrives once per iteration (one tj_mbar_arrive per loop), after the
//     wgmma reading the released stage has retired;
//   - a pipelined loop nested in a loop over tiles (a persistent kernel): the
//     producer walks the outer loop with the consumers' bounds, declares the
//     ring's counter once before it (never reset per tile), and repeats the
//     outer body's scalar arithmetic; the consumers snapshot the counter per
//     run (tj_it0), release a run's last stage after its final wgmma wait
//     (two arrives per loop when a wgmma is left in flight), and declare no
//     counter inside the outer loop;
//   - a block the loop over tiles loads itself (outside the pipelined loop) is
//     copied once per tile into one buffer: by the producer, after the
//     consumers released the previous tile's copy (its "empty" mbarrier,
//     num_warps arrivals); each consumer warp releases it once per tile, after
//     its reads and before the tile counter tj_oit moves on;
//   - pingpong: group 1 arrives at barrier 2 before the loop, each group syncs
//     on 2 + group before its first wgmma and arrives at 3 - group after its
//     last, group 0 syncs on 2 after the loop; no consumer-wide barrier in
//     between (it would need the other group, which waits for this one's turn).
//
// Set TILEJIT_WS_DUMP=<dir> to write every generated source there (e.g. for
// `nvcc -arch=sm_90a -cubin -Xptxas -v` to look for spills).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/text.hpp"
#include "examples/attention/flash_fwd_tma.hpp"
#include "examples/gemm/matmul_v5.hpp"
#include "examples/gemm/matmul_v6.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

// ---- kernels ---------------------------------------------------------------------

/// Stores acc [BM, BN] at the program's block of c (row stride N).
template <int BM, int BN, class Acc>
void store_block(const tj::Ptr<float>& c, const tj::Int& m0, const tj::Int& n0, const tj::Size& N, const Acc& acc) {
  auto rm = m0 + tj::arange<BM>();
  auto rn = n0 + tj::arange<BN>();
  tj::store(c + tj::expand_dims<1>(rm) * N + tj::expand_dims<0>(rn), acc, tj::expand_dims<0>(rn < N) & tj::expand_dims<1>(rm >= 0));
}

/// C = A·Bᵀ over [lo, hi) of K: both bounds kernel parameters (a zero trip count is a launch away).
template <int BM, int BN, int BK = 64>
struct ParamBounds {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Size N, tj::Size lo, tj::Size hi) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    auto acc = tj::for_range(lo, hi, BK, tj::zeros<float, BM, BN>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc); });
    store_block<BM, BN>(c, m0, n0, N, acc);
  }
};

/// Two sequential top-level K loops into two accumulators (two pipelines in one kernel).
template <int BM, int BN, int BK = 64>
struct TwoLoops {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Desc<bf, BM, BK> a2, tj::Desc<bf, BN, BK> b2, tj::Ptr<float> c,
                  tj::Size N, tj::Size K1, tj::Size K2) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    auto acc1 = tj::for_range(0, K1, BK, tj::zeros<float, BM, BN>(),
                              [&](tj::Int k0, auto acc) { return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc); });
    auto acc2 = tj::for_range(0, K2, BK, tj::zeros<float, BM, BN>(),
                              [&](tj::Int k0, auto acc) { return tj::dot(a2.load(m0, k0), tj::trans(b2.load(n0, k0)), acc); });
    store_block<BM, BN>(c, m0, n0, N, acc1 + acc2 * 0.5f);
  }
};

/// A resident block (desc_load outside any loop) read in a pipelined loop: acc = Q · Σ K_jᵀ.
template <int BM, int BN, int D = 64>
struct ResidentAndLoop {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Ptr<float> c, tj::Size N, tj::Size S) const {
    const tj::Int m0 = tj::program_id(0) * BM;
    auto qt = q.load(m0, 0);
    auto acc = tj::for_range(0, S, BN, tj::zeros<float, BM, BN>(),
                             [&](tj::Int n0, auto acc) { return tj::dot(qt, tj::trans(k.load(n0, 0)), acc); });
    store_block<BM, BN>(c, m0, tj::scalar<std::int32_t>(0), N, acc);
  }
};

/// The causal bound of attention, hi = min(S, start + BM), and a start that is a
/// scalar computed from parameters: lo = (start / 2) rounded down to BN.
template <int BM, int BN, int D = 64>
struct CausalBounds {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Ptr<float> c, tj::Size N, tj::Size S) const {
    const tj::Int start = tj::program_id(0) * BM;
    const tj::Int hi = tj::minimum(S, start + BM);
    const tj::Int lo = start / 2 / BN * BN;
    auto qt = q.load(start, 0);
    auto acc = tj::for_range(lo, hi, BN, tj::zeros<float, BM, BN>(),
                             [&](tj::Int n0, auto acc) { return tj::dot(qt, tj::trans(k.load(n0 + tj::program_id(1) * S, 0)), acc); });
    store_block<BM, BN>(c, start, tj::scalar<std::int32_t>(0), N, acc);
  }
};

/// A pipelined loop nested in another loop that carries the accumulator into it (the outer induction variable
/// moves A's rows): warp-specialised, the producer walks both loops.
template <int BM, int BN, int BK = 64>
struct Nested {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Size N, tj::Size K, tj::Size J) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    auto acc = tj::for_range(0, J, 1, tj::zeros<float, BM, BN>(), [&](tj::Int j, auto acc) {
      return tj::for_range(0, K, BK, acc, [&](tj::Int k0, auto acc2) {
        return tj::dot(a.load(m0 + j * BM, k0), tj::trans(b.load(n0, k0)), acc2);
      });
    });
    store_block<BM, BN>(c, m0, n0, N, acc);
  }
};

/// Persistent: a loop over output tiles t = pid, pid + P, ... whose body runs a pipelined K loop at coordinates
/// computed from t, and stores. The shapes of the outer loop the code generator takes or refuses (TileLoop).
enum class TileLoop {
  two_inner,         // two pipelined loops in the tile loop (two rings, both walked per tile)
  split_range,       // the inner bounds from arithmetic on t (each tile a K range, split-K style)
  carried_coord,     // the row offset carried by the outer loop (a scalar loop_carry: the producer repeats it)
  tile_carry,        // refused: the row offset a reduction of a tile the outer loop carries
  loaded_tile,       // the tile index read from a table the kernel never writes (the producer loads it too)
  loaded_written,    // refused: the same, from a pointer the kernel also stores to
  outer_block,       // descriptor blocks copied by TMA in the outer body: once per tile, one buffer each
  doubly_nested,     // refused: the tile loop itself inside another loop
  bound_from_reduce  // refused: the tile count a reduction of a loaded tile
};
template <int BM, int BN, TileLoop S, int BK = 64>
struct Persistent {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Desc<bf, BM, BK> a2, tj::Desc<bf, BN, BK> b2, tj::Ptr<float> c,
                  tj::Ptr<std::int32_t> table, tj::Size M, tj::Size N, tj::Size K) const {
    const tj::Int num_n = (N + (BN - 1)) / BN;
    const tj::Int tiles = [&]() -> tj::Int {
      if constexpr (S == TileLoop::bound_from_reduce) return tj::sum<0>(tj::load(table + tj::arange<16>()));
      else return (M + (BM - 1)) / BM * num_n;
    }();
    auto k_loop = [&](const auto& da, const auto& db, const tj::Int& m0, const tj::Int& n0, const auto& lo, const auto& hi) {
      return tj::for_range(lo, hi, BK, tj::zeros<float, BM, BN>(),
                           [&](tj::Int k0, auto acc) { return tj::dot(da.load(m0, k0), tj::trans(db.load(n0, k0)), acc); });
    };
    auto tile = [&](const tj::Int& t) {
      const tj::Int m0 = t / num_n * BM, n0 = t % num_n * BN;
      if constexpr (S == TileLoop::two_inner) {
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, m0, n0, 0, K) + k_loop(a2, b2, m0, n0, 0, K) * 0.5f);
      } else if constexpr (S == TileLoop::split_range) {
        const tj::Int lo = t % 3 * (K / 3) / BK * BK;
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, m0, n0, lo, tj::minimum(lo + K / 3 + BK, K)));
      } else if constexpr (S == TileLoop::loaded_tile || S == TileLoop::loaded_written) {
        const tj::Int u = tj::load(table + t);
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, u / num_n * BM, n0, 0, K));
        if constexpr (S == TileLoop::loaded_written) tj::store(table + t, u + 1);
      } else if constexpr (S == TileLoop::outer_block) {
        // a rank-64 correction A2·B2ᵀ from blocks loaded once per tile, outside the K loop
        auto corr = tj::dot(a2.load(m0, 0), tj::trans(b2.load(n0, 0)));
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, m0, n0, 0, K) + corr);
      } else {
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, m0, n0, 0, K));
      }
    };
    if constexpr (S == TileLoop::carried_coord) {
      auto last = tj::for_range(tj::program_id(0), tiles, tj::num_programs(0), tj::scalar<std::int32_t>(0), [&](tj::Int t, auto m0) {
        const tj::Int n0 = t % num_n * BN;
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, m0, n0, 0, K));
        return m0 + BM;
      });
      (void)last;
    } else if constexpr (S == TileLoop::tile_carry) {
      auto last = tj::for_range(tj::program_id(0), tiles, tj::num_programs(0), tj::zeros<std::int32_t, 16>(), [&](tj::Int t, auto rows) {
        const tj::Int m0 = tj::sum<0>(rows) / 16, n0 = t % num_n * BN;
        store_block<BM, BN>(c, m0, n0, N, k_loop(a, b, m0, n0, 0, K));
        return rows + BM;
      });
      (void)last;
    } else if constexpr (S == TileLoop::doubly_nested) {
      tj::for_range(0, 2, 1, [&](tj::Int) { tj::for_range(tj::program_id(0), tiles, tj::num_programs(0), tile); });
    } else {
      tj::for_range(tj::program_id(0), tiles, tj::num_programs(0), tile);
    }
  }
};

/// How the K loop's upper bound is obtained (BoundFrom): a scalar loaded from memory,
/// a reduction of a loaded tile, the result of another (scalar) loop.
enum class BoundFrom { scalar_load, reduction, loop_result };
template <int BM, int BN, BoundFrom FROM, int BK = 64>
struct DataBound {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Ptr<std::int32_t> lens, tj::Size N) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    tj::Int hi = [&]() -> tj::Int {
      if constexpr (FROM == BoundFrom::scalar_load) return tj::load(lens + tj::program_id(0));
      else if constexpr (FROM == BoundFrom::reduction) return tj::sum<0>(tj::load(lens + tj::arange<16>()));
      else return tj::for_range(0, N, 1, tj::scalar<std::int32_t>(0), [&](tj::Int, auto h) { return h + BK; });
    }();
    auto acc = tj::for_range(0, hi, BK, tj::zeros<float, BM, BN>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(m0, k0), tj::trans(b.load(n0, k0)), acc); });
    store_block<BM, BN>(c, m0, n0, N, acc);
  }
};

/// Coordinates that are not the induction variable plus a constant.
enum class Coord { nonlinear, carried, loaded_in_loop, loaded_written };
template <int BM, int BN, Coord C, int BK = 64>
struct OddCoords {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Ptr<std::int32_t> table, tj::Size N,
                  tj::Size K) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    if constexpr (C == Coord::carried) {
      auto [acc, off] = tj::for_range(0, K, BK, std::tuple{tj::zeros<float, BM, BN>(), tj::scalar<std::int32_t>(0)},
                                      [&](tj::Int, auto acc, auto off) {
                                        return std::tuple{tj::dot(a.load(m0, off), tj::trans(b.load(n0, off)), acc), off + BK};
                                      });
      (void)off;
      store_block<BM, BN>(c, m0, n0, N, acc);
    } else {
      auto acc = tj::for_range(0, K, BK, tj::zeros<float, BM, BN>(), [&](tj::Int k0, auto acc) {
        if constexpr (C == Coord::nonlinear) {
          // a permutation of the K blocks (k0 / BK · 7 mod K / BK) and a quadratic row offset
          const tj::Int kp = (k0 / BK * 7) % (K / BK) * BK;
          return tj::dot(a.load(m0 + (k0 * k0) % 3, kp), tj::trans(b.load(n0, kp)), acc);
        } else {
          // block-sparse: the K block index is read from memory inside the loop
          const tj::Int kb = tj::load(table + k0 / BK) * BK;
          return tj::dot(a.load(m0, kb), tj::trans(b.load(n0, kb)), acc);
        }
      });
      store_block<BM, BN>(c, m0, n0, N, acc);
      if constexpr (C == Coord::loaded_written) tj::store(table + tj::program_id(0), m0);  // the table is also written
    }
  }
};

/// A pipelined loop whose only dot is register-A wgmma (A from pointer loads, B a K-major descriptor block).
template <int BM, int BN, int BK = 64>
struct RegAOnly {
  void operator()(tj::Ptr<bf> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Size N, tj::Size K) const {
    const tj::Int m0 = tj::program_id(0) * BM, n0 = tj::program_id(1) * BN;
    auto rm = m0 + tj::arange<BM>();
    auto acc = tj::for_range(0, K, BK, tj::zeros<float, BM, BN>(), [&](tj::Int k0, auto acc) {
      auto rk = k0 + tj::arange<BK>();
      auto at = tj::load(a + tj::expand_dims<1>(rm) * K + tj::expand_dims<0>(rk), tj::expand_dims<0>(rk < K) & tj::expand_dims<1>(rm >= 0));
      return tj::dot(at, tj::trans(b.load(n0, k0)), acc);
    });
    store_block<BM, BN>(c, m0, n0, N, acc);
  }
};

/// Two wgmma in one iteration with a reduction across warps (a column maximum of S: the rows
/// are spread over the warps) between them: the code generator puts a consumer-wide barrier
/// (shared-memory scratch) between the two products.
template <int BM, int BN, int D = 64>
struct CrossWarpBetweenDots {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Desc<bf, BN, D> v, tj::Ptr<float> c, tj::Size N, tj::Size S) const {
    const tj::Int m0 = tj::program_id(0) * BM;
    auto qt = q.load(m0, 0);
    auto acc = tj::for_range(0, S, BN, tj::zeros<float, BM, D>(), [&](tj::Int n0, auto acc) {
      auto s = tj::dot(qt, tj::trans(k.load(n0, 0)));
      auto p = s - tj::expand_dims<0>(tj::max<0>(s));
      return tj::dot(tj::cast<bf>(p), v.load(n0, 0), acc);
    });
    store_block<BM, D>(c, m0, tj::scalar<std::int32_t>(0), N, acc);
  }
};

/// Descriptor blocks loaded outside any loop only: S = Q·Kᵀ once.
template <int BM, int BN, int D = 64>
struct ResidentOnly {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Ptr<float> c, tj::Size N) const {
    const tj::Int m0 = tj::program_id(0) * BM;
    store_block<BM, BN>(c, m0, tj::scalar<std::int32_t>(0), N, tj::dot(q.load(m0, 0), tj::trans(k.load(0, 0))));
  }
};

// ---- helpers -----------------------------------------------------------------------

using testing::occurrences;
using Opts = tj::codegen::Options;

constexpr auto has_diag = &testing::has_diagnostic;

template <class K>
tj::codegen::Generated gen(const char* arch, const Opts& o, const K& kernel = K{}) {
  return tj::codegen::generate(tj::trace(kernel), {}, tj::codegen::target_for(arch), o);
}

void dump(const tj::codegen::Generated& g, const std::string& tag) {
  const char* dir = std::getenv("TILEJIT_WS_DUMP");
  if (!dir) return;
  std::ofstream(std::string(dir) + "/" + tag + ".cu") << g.source;
  std::ofstream diag(std::string(dir) + "/" + tag + ".diag");
  for (const auto& d : g.diagnostics) diag << d << "\n";
}

/// NVRTC builds `g` for sm_90a into a cubin (ptxas runs): no CompileError. Skips without NVRTC.
void nvrtc_ok(const tj::codegen::Generated& g) {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) return;
  tj::runtime::JitRequest req;
  req.source = g.source;
  req.name = g.kernel_name + "_ws.cu";
  req.arch = "sm_90a";
  try {
    CHECK(!tj::runtime::compile(req).binary.bytes.empty());
  } catch (const tj::Error& e) {
    FAIL_CHECK("NVRTC/ptxas rejected the generated sm_90a code: ", std::string(e.what()).substr(0, 3000));
  }
}

/// The pipelined loops (from the "loop %L: TMA pipeline" diagnostics).
std::vector<int> pipe_loops(const tj::codegen::Generated& g) {
  std::vector<int> out;
  static const std::regex re(R"(^loop %(\d+): TMA pipeline of)");
  for (const auto& d : g.diagnostics) {
    std::smatch m;
    if (std::regex_search(d, m, re)) out.push_back(std::stoi(m[1]));
  }
  return out;
}

/// The loop that encloses pipelined loop L in a warp-specialised kernel (from the "producer walks loop %L inside
/// loop %O" diagnostic), -1 when L is outermost.
int outer_of(const tj::codegen::Generated& g, int L) {
  static const std::regex re(R"(the producer walks loop %(\d+) inside loop %(\d+);)");
  for (const auto& d : g.diagnostics) {
    std::smatch m;
    if (std::regex_search(d, m, re) && std::stoi(m[1]) == L) return std::stoi(m[2]);
  }
  return -1;
}

/// The blocks copied once per iteration of a loop over work items (from the "desc_load %X: copied by TMA once per
/// iteration of loop %O" diagnostics): (X, O).
std::vector<std::pair<int, int>> item_blocks(const tj::codegen::Generated& g) {
  std::vector<std::pair<int, int>> out;
  static const std::regex re(R"(^desc_load %(\d+): copied by TMA once per iteration of loop %(\d+) )");
  for (const auto& d : g.diagnostics) {
    std::smatch m;
    if (std::regex_search(d, m, re)) out.push_back({std::stoi(m[1]), std::stoi(m[2])});
  }
  return out;
}

/// Whether loop L leaves a wgmma in flight across iterations with a prefetch (stages > 1): its consumers then
/// release each stage one iteration late.
bool releases_late(const tj::codegen::Generated& g, int L, int stages) {
  const std::regex re(fmt::format(R"(^loop %{}: TMA pipeline of .*, (\d+) wgmma left in flight)", L));
  for (const auto& d : g.diagnostics) {
    std::smatch m;
    if (std::regex_search(d, m, re)) return std::stoi(m[1]) > 0 && stages > 1;
  }
  return false;
}

/// The text between `from` (inclusive) and the matching closing brace of the block it opens.
std::string block_at(const std::string& s, std::size_t from) {
  const std::size_t open = s.find('{', from);
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return s.substr(from, i + 1 - from);
  }
  return s.substr(from);
}

int expected_consumer_inc(int warps) {  // 0: no setmaxnreg.inc
  switch (warps) {
    case 4: return 0;
    case 8: return 240;
    case 12: return 160;
    case 16: return 112;
    default: return -1;
  }
}

/// The persistent-loop protocol of a pipelined loop L nested in loop O (see the file comment); `body` is the
/// consumers' loop L.
void check_nested(const std::string& P, const std::string& C, int L, int O, bool late, const std::string& body) {
  // Same outer iteration space on both sides.
  const std::regex ofor(fmt::format(R"(for \(int s{0} = ([^;]*); s{0} < ([^;]*); s{0} \+= ([^)]*)\) \{{)", O));
  std::smatch pm, cm;
  REQUIRE(std::regex_search(P, pm, ofor));
  REQUIRE(std::regex_search(C, cm, ofor));
  CHECK(occurrences(P, fmt::format("for (int s{} = ", O)) == 1);
  CHECK(occurrences(C, fmt::format("for (int s{} = ", O)) == 1);
  CHECK(pm[1].str() == cm[1].str());
  CHECK(pm[2].str() == cm[2].str());
  CHECK(pm[3].str() == cm[3].str());
  // The producer: one counter, declared before the outer loop, counting on across tiles; the inner walk inside it.
  const std::size_t pouter = P.find(pm[0].str());
  const std::string pbody = block_at(P, pouter);
  CHECK(occurrences(P, fmt::format("unsigned tj_it{} = 0;", L)) == 1);
  CHECK(P.find(fmt::format("unsigned tj_it{} = 0;", L)) < pouter);
  CHECK(pbody.find(fmt::format("for (int s{} = ", L)) != std::string::npos);
  CHECK(pbody.find(fmt::format("tj_it{} = ", L)) == std::string::npos);  // never reset per tile
  CHECK(pbody.find("tj_issue") != std::string::npos);
  CHECK(pbody.find("tj_tma_load_2d(") != std::string::npos);
  CHECK(pbody.find("tj_mbar_wait(tj_empty") != std::string::npos);
  CHECK(pbody.find("tj_mbar_wait(tj_bar") == std::string::npos);  // the producer never waits for its own copies
  CHECK(pbody.find("bar.sync") == std::string::npos);
  // The consumers: the counter is the kernel-wide one (declared once, before the producer branch); per run of loop L
  // only a snapshot.
  const std::size_t couter = C.find(cm[0].str());
  const std::string cbody = block_at(C, couter);
  CHECK(C.find(fmt::format("unsigned tj_it{} = ", L)) == std::string::npos);
  CHECK(cbody.find(fmt::format("tj_it{} = ", L)) == std::string::npos);
  const std::size_t snap = cbody.find(fmt::format("const unsigned tj_it0{0} = tj_it{0};", L));
  const std::size_t inner = cbody.find(fmt::format("for (int s{} = ", L));
  REQUIRE(snap != std::string::npos);
  REQUIRE(inner != std::string::npos);
  CHECK(snap < inner);
  CHECK(cbody.find("__syncthreads") == std::string::npos);
  if (late) {
    CHECK(body.find(fmt::format("tj_it{0} > tj_it0{0}) tj_mbar_arrive(tj_empty{0} + 8u * ((tj_it{0} - 1u)", L)) != std::string::npos);
    // After the loop: its final wgmma wait, then the release of the run's last stage, inside the tile loop.
    const std::size_t after = inner + block_at(cbody, inner).size();
    const std::size_t wait0 = cbody.find("wgmma.wait_group.sync.aligned 0;", after);
    const std::size_t last = cbody.find(fmt::format("if (tj_it{0} > tj_it0{0}) {{ __syncwarp(); if (tj_lane == 0) tj_mbar_arrive(tj_empty{0}", L), after);
    REQUIRE(wait0 != std::string::npos);
    REQUIRE(last != std::string::npos);
    CHECK(wait0 < last);
  }
}

struct WsResult {
  bool applied = false, pingpong = false;
  std::string producer, consumers;
};

/// Generates `kernel` for sm_90a with warp_specialize (and `pingpong`), checks the invariants of the
/// file comment, compiles it with NVRTC; returns whether it applied.
template <class K>
WsResult check_ws(int warps, int stages, bool pingpong, const std::string& tag, const K& kernel = K{}) {
  CAPTURE(tag);
  CAPTURE(warps);
  CAPTURE(stages);
  CAPTURE(pingpong);
  const Opts plain{.num_warps = warps, .num_stages = stages};
  const Opts ws{.num_warps = warps, .num_stages = stages, .warp_specialize = true, .pingpong = pingpong};
  tj::codegen::Generated g, base;
  REQUIRE_NOTHROW(g = gen<K>("sm_90a", ws, kernel));
  REQUIRE_NOTHROW(base = gen<K>("sm_90a", plain, kernel));
  dump(g, tag);
  const std::string& src = g.source;
  WsResult r;
  r.applied = has_diag(g, "warp specialised: ");
  const bool refused = has_diag(g, "warp specialisation not applied: ");
  CHECK(r.applied != refused);  // exactly one of the two, always
  nvrtc_ok(g);
  if (!r.applied) {
    // The fallback is the plain kernel, character for character.
    CHECK(src == base.source);
    CHECK(g.threads == 32 * warps);
    CHECK(src.find("setmaxnreg") == std::string::npos);
    CHECK(src.find("tj_empty") == std::string::npos);
    CHECK(src.find("bar.sync") == std::string::npos);
    if (pingpong) CHECK(src.find("bar.arrive") == std::string::npos);
    return r;
  }
  CHECK(g.threads == 32 * warps + 128);
  // __maxnreg__ pins the launch allocation that setmaxnreg redistributes (64K / threads, a multiple of 8).
  CHECK(src.find(fmt::format("__maxnreg__({})", std::min(255, 65536 / g.threads / 8 * 8))) != std::string::npos);
  CHECK(src.find("__launch_bounds__") == std::string::npos);
  CHECK(has_diag(g, fmt::format("warp specialised: {} consumer warp(s)", warps)));
  const std::size_t prod = src.find(fmt::format("if (tj_warp >= {}) {{", warps));
  REQUIRE(prod != std::string::npos);
  r.producer = block_at(src, prod);
  r.consumers = src.substr(prod + r.producer.size());
  const std::string& P = r.producer;
  const std::string& C = r.consumers;
  // One CTA barrier, before the producer branch; the producer leaves at its end.
  CHECK(occurrences(src, "__syncthreads") == 1);
  CHECK(src.find("__syncthreads") < prod);
  CHECK(P.rfind("return;") != std::string::npos);
  CHECK(P.find("bar.sync") == std::string::npos);
  // setmaxnreg
  CHECK(occurrences(P, "setmaxnreg") == 1);
  CHECK(P.find("setmaxnreg.dec.sync.aligned.u32 24;") != std::string::npos);
  const int inc = expected_consumer_inc(warps);
  if (inc == 0) CHECK(C.find("setmaxnreg") == std::string::npos);
  if (inc > 0) {
    CHECK(occurrences(C, "setmaxnreg") == 1);
    CHECK(C.find(fmt::format("setmaxnreg.inc.sync.aligned.u32 {};", inc)) != std::string::npos);
  }
  // Consumers' barriers: named barrier 1 over the consumer threads only.
  static const std::regex bar1(R"(bar\.sync 1, (\d+);)");
  for (auto it = std::sregex_iterator(C.begin(), C.end(), bar1); it != std::sregex_iterator(); ++it)
    CHECK(std::stoi((*it)[1]) == 32 * warps);
  // Per pipelined loop.
  const auto loops = pipe_loops(g);
  REQUIRE(!loops.empty());
  for (int L : loops) {
    CAPTURE(L);
    // Same iteration space on both sides.
    const std::regex pfor(fmt::format(R"(for \(int s{0} = ([^;]*); s{0} < ([^;]*); s{0} \+= ([^,]*), \+\+tj_it{0}\) \{{)", L));
    const std::regex cfor(fmt::format(R"(for \(int s{0} = ([^;]*); s{0} < ([^;]*); s{0} \+= ([^)]*)\) \{{)", L));
    std::smatch pm, cm;
    REQUIRE(std::regex_search(P, pm, pfor));
    REQUIRE(std::regex_search(C, cm, cfor));
    CHECK(occurrences(P, fmt::format("for (int s{} = ", L)) == 1);
    CHECK(occurrences(C, fmt::format("for (int s{} = ", L)) == 1);
    CHECK(pm[1].str() == cm[1].str());
    CHECK(pm[2].str() == cm[2].str());
    CHECK(pm[3].str() == cm[3].str());
    // Every copy issued by the producer, once per iteration; never by the consumers.
    CHECK(occurrences(P, fmt::format("tj_issue{}(s{}, tj_it{});", L, L, L)) == 1);
    CHECK(C.find(fmt::format("tj_issue{}", L)) == std::string::npos);
    CHECK(C.find("tj_tma_load_2d(tj_ring") == std::string::npos);
    // Empty barriers: num_warps arrivals per phase; one arrive per warp and iteration; the producer waits.
    CHECK(occurrences(src, fmt::format("tj_mbar_init(tj_empty{} + 8 * s, {});", L, warps)) == 1);
    const int O = outer_of(g, L);
    const bool late = releases_late(g, L, stages);
    CAPTURE(O);
    // Nested in a tile loop with a wgmma left in flight: a second arrive after the loop releases the run's last stage.
    CHECK(occurrences(src, fmt::format("tj_mbar_arrive(tj_empty{}", L)) == (O >= 0 && late ? 2u : 1u));
    CHECK(occurrences(C, fmt::format("if (tj_lane == 0", L)) >= 1);
    CHECK(occurrences(P, fmt::format("tj_mbar_wait(tj_empty{}", L)) == 1);
    CHECK(occurrences(C, fmt::format("tj_mbar_wait(tj_empty{}", L)) == 0);
    CHECK(occurrences(C, fmt::format("tj_mbar_wait(tj_bar{} + 8u * tj_st{}", L, L)) == 1);
    // The release sits in the consumer loop, after the last wgmma wait of the iteration; with one
    // stage (nothing prefetched) after wait_group 0 and for this very stage.
    const std::size_t loop_at = C.find(cm[0].str());
    const std::string body = block_at(C, loop_at);
    const std::size_t rel = body.find(fmt::format("tj_mbar_arrive(tj_empty{}", L));
    REQUIRE(rel != std::string::npos);
    CHECK(body.find("wgmma", rel) == std::string::npos);  // no wgmma after the release in the iteration
    const std::size_t wait = body.rfind("wgmma.wait_group.sync.aligned ", rel);
    if (stages == 1) {
      REQUIRE(wait != std::string::npos);
      CHECK(body.compare(wait, 32, "wgmma.wait_group.sync.aligned 0;") == 0);
      CHECK(body.find(fmt::format("8u * tj_st{});", L), rel) < body.find('\n', rel));
    }
    if (O >= 0) check_nested(P, C, L, O, late, body);
  }
  for (auto [x, O] : item_blocks(g)) {
    CAPTURE(x);
    CAPTURE(O);
    const std::string full = fmt::format("tj_mbar_wait(tj_ibar{}, tj_oit{} & 1u);", x, O);
    const std::string release = fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", x);
    CHECK(occurrences(src, fmt::format("tj_mbar_init(tj_ibar{0}, 1); tj_mbar_init(tj_ibar{0} + 8u, {1});", x, warps)) == 1);
    // The producer copies it once per tile, after the previous tile's release; the consumers never copy.
    CHECK(occurrences(P, fmt::format("if (tj_oit{1} > 0u) tj_mbar_wait(tj_ibar{0} + 8u, (tj_oit{1} - 1u) & 1u); tj_mbar_expect_tx(tj_ibar{0}, ", x, O)) == 1);
    CHECK(occurrences(C, fmt::format("tj_ibar{} + 8u, (", x)) == 0);
    CHECK(C.find(fmt::format("tj_mbar_expect_tx(tj_ibar{}", x)) == std::string::npos);
    // One release per consumer warp and tile, after every read of the tile's copy, before the counter moves on.
    const std::size_t couter = C.find(fmt::format("for (int s{} = ", O));
    REQUIRE(couter != std::string::npos);
    const std::string body = block_at(C, couter);
    CHECK(occurrences(C, release) == 1);
    const std::size_t rel = body.find(release), inc = body.find(fmt::format("++tj_oit{};", O));
    REQUIRE(rel != std::string::npos);
    REQUIRE(inc != std::string::npos);
    CHECK(rel < inc);
    CHECK(body.rfind(full) < rel);
    CHECK(body.find(full, rel + release.size()) == std::string::npos);
    CHECK(occurrences(C, fmt::format("++tj_oit{};", O)) == 1);
  }
  // Pingpong.
  r.pingpong = has_diag(g, "pingpong: the warp groups take turns");
  if (pingpong && !r.pingpong) CHECK(has_diag(g, "pingpong not applied: "));
  if (!r.pingpong) {
    CHECK(src.find("bar.arrive") == std::string::npos);
    CHECK(src.find("bar.sync %0") == std::string::npos);
    return r;
  }
  REQUIRE(loops.size() == 1);
  const int L = loops.front();
  const std::size_t hand = C.find("if (tj_warp / 4 == 1) asm volatile(\"bar.arrive 2, 256;\"");
  const std::size_t loop_at = C.find(fmt::format("for (int s{} = ", L));
  REQUIRE(hand != std::string::npos);
  CHECK(hand < loop_at);
  CHECK(occurrences(src, "bar.arrive 2, 256;") == 1);
  const std::string body = block_at(C, loop_at);
  const std::size_t turn = body.find("asm volatile(\"bar.sync %0, 256;\" :: \"r\"(2 + tj_warp / 4)");
  const std::size_t give = body.find("asm volatile(\"bar.arrive %0, 256;\" :: \"r\"(3 - tj_warp / 4)");
  REQUIRE(turn != std::string::npos);
  REQUIRE(give != std::string::npos);
  CHECK(turn < give);
  CHECK(occurrences(src, "bar.sync %0") == 1);
  CHECK(occurrences(src, "bar.arrive %0") == 1);
  CHECK(body.find("wgmma.mma_async", turn) < give);
  CHECK(body.find("wgmma.mma_async", give) == std::string::npos);  // every wgmma of the iteration inside the turn
  // No consumer-wide barrier inside a turn: the other group is parked on its turn barrier.
  CHECK(body.substr(turn, give - turn).find("bar.sync 1,") == std::string::npos);
  const std::size_t after = C.find("if (tj_warp / 4 == 0) asm volatile(\"bar.sync 2, 256;\"", loop_at + body.size());
  CHECK(after != std::string::npos);
  CHECK(occurrences(src, "bar.sync 2, 256;") == 1);
  return r;
}

}  // namespace

// ---- loops, bounds and coordinates that warp specialisation takes --------------------

TEST_CASE("warp_specialize_edges_two_sequential_pipelined_loops") {
  for (int stages : {1, 2, 3}) {
    const auto r = check_ws<TwoLoops<128, 64>>(8, stages, false, fmt::format("two_loops_s{}", stages));
    CHECK(r.applied);
    // The producer walks both loops, in program order, in one thread.
    const auto loops_at = std::pair{r.producer.find("tj_issue"), r.producer.rfind("tj_issue")};
    CHECK(loops_at.first < loops_at.second);
  }
  const auto g = gen<TwoLoops<128, 64>>("sm_90a", {.num_warps = 8, .num_stages = 2, .warp_specialize = true});
  CHECK(has_diag(g, "TMA copies of 2 loop(s)"));
  // pingpong needs exactly one pipelined loop; warp specialisation stays.
  const auto pp = check_ws<TwoLoops<128, 64>>(8, 2, true, "two_loops_pp");
  CHECK(pp.applied);
  CHECK(!pp.pingpong);
  CHECK(has_diag(gen<TwoLoops<128, 64>>("sm_90a", {.num_warps = 8, .num_stages = 2, .warp_specialize = true, .pingpong = true}),
                 "pingpong not applied: it needs exactly one pipelined loop"));
}

TEST_CASE("warp_specialize_edges_resident_block_and_loop") {
  for (int warps : {4, 8}) {
    const auto r = warps == 4 ? check_ws<ResidentAndLoop<64, 64>>(4, 3, false, "resident_w4")
                              : check_ws<ResidentAndLoop<128, 128>>(8, 2, true, "resident_w8_pp");
    CHECK(r.applied);
    CHECK(r.pingpong == (warps == 8));
    // The resident copy is the consumers' (thread 0), issued once, waited for before the program exits;
    // the producer does not touch it.
    CHECK(r.producer.find("tj_rbar") == std::string::npos);
    CHECK(r.consumers.find("if (tj_tid == 0) { tj_mbar_expect_tx(tj_rbar") != std::string::npos);
    CHECK(r.consumers.find("has landed before the program exits") != std::string::npos);
  }
}

TEST_CASE("warp_specialize_edges_bounds_from_parameters_and_scalars") {
  // lo and hi are parameters (hi <= lo at run time: no iteration on either side, nothing issued or waited).
  for (int stages : {1, 2, 4}) {
    const auto r = check_ws<ParamBounds<128, 128>>(8, stages, false, fmt::format("param_bounds_s{}", stages));
    CHECK(r.applied);
    // The producer recomputes the parameters it needs, nothing loop-carried.
    CHECK(r.producer.find("arg4") != std::string::npos);
    CHECK(r.producer.find("arg5") != std::string::npos);
  }
  // hi = min(S, start + BM), lo from arithmetic on program_id: the producer recomputes the chain.
  const auto c = check_ws<CausalBounds<128, 64>>(8, 2, true, "causal_bounds_pp");
  CHECK(c.applied);
  CHECK(c.pingpong);
  CHECK(c.producer.find("tj_min(") != std::string::npos);
  CHECK(c.producer.find("blockIdx.x") != std::string::npos);
  CHECK(c.producer.find("blockIdx.y") != std::string::npos);  // the coordinate's program_id(1) * S
  // The library's attention kernels.
  CHECK(check_ws<examples::FlashAttnFwdTma<128, 128, 64, true, bf>>(8, 2, false, "flash_causal_ws").applied);
  CHECK(check_ws<examples::FlashAttnFwdTma<128, 64, 128, false, bf>>(8, 3, true, "flash_full_pp").applied);
  const auto overlap = check_ws<examples::FlashAttnFwdTmaOverlap<128, 64, 96, true, bf>>(8, 2, true, "flash_overlap_pp");
  CHECK(overlap.applied);
}

TEST_CASE("warp_specialize_edges_coordinates") {
  // Nonlinear in the induction variable (mul, div, rem): the producer evaluates the chain in its
  // coordinate function at each iteration.
  const auto nl = check_ws<OddCoords<128, 64, Coord::nonlinear>>(8, 3, false, "coords_nonlinear");
  CHECK(nl.applied);
  CHECK(nl.producer.find(" * s") != std::string::npos);
  CHECK(nl.producer.find(" % ") != std::string::npos);
  // A K block index read inside the loop from a table the kernel never writes (block-sparse): pipelined, the
  // producer loads the index of the iteration it copies for.
  const auto ld = check_ws<OddCoords<128, 64, Coord::loaded_in_loop>>(8, 2, false, "coords_loaded");
  CHECK(ld.applied);
  CHECK(std::regex_search(ld.producer, std::regex(R"(int const s\d+ = \*s\d+;)")));
  // The same from a pointer the kernel also stores to (the producer could read ahead of a store), a coordinate
  // carried by the loop: these blocks are not pipelined at all (plain loads), so there is nothing to specialise;
  // the fallback is the plain kernel (check_ws).
  CHECK(!check_ws<OddCoords<128, 64, Coord::loaded_written>>(8, 2, false, "coords_loaded_written").applied);
  CHECK(!check_ws<OddCoords<128, 64, Coord::carried>>(8, 2, true, "coords_carried").applied);
}

TEST_CASE("warp_specialize_edges_bounds_from_data") {
  // A scalar loaded once, outside loops (varlen-style): the producer loads it too.
  const auto ld = check_ws<DataBound<128, 64, BoundFrom::scalar_load>>(8, 2, false, "bound_scalar_load");
  CHECK(ld.applied);
  CHECK(ld.producer.find("arg3") != std::string::npos);
  // A reduction of a tile, the result of another loop: fall back, naming the node.
  const Opts o{.num_warps = 8, .num_stages = 2, .warp_specialize = true};
  CHECK(!check_ws<DataBound<128, 64, BoundFrom::reduction>>(8, 2, false, "bound_reduction").applied);
  CHECK(has_diag(gen<DataBound<128, 64, BoundFrom::reduction>>("sm_90a", o), "is not a scalar computed outside loops"));
  CHECK(!check_ws<DataBound<128, 64, BoundFrom::loop_result>>(8, 2, true, "bound_loop_result").applied);
  CHECK(has_diag(gen<DataBound<128, 64, BoundFrom::loop_result>>("sm_90a", o), "feeds a loop bound or a block coordinate and is not a scalar computed outside loops"));
}

TEST_CASE("warp_specialize_edges_loop_nested_in_an_outer_loop") {
  // The outer loop carries the accumulator into the inner one and moves A's rows: a tile value carried by the
  // outer loop that feeds no coordinate is the consumers' business; the producer walks both loops.
  for (int stages : {1, 2, 3}) {
    const auto r = check_ws<Nested<128, 64>>(8, stages, false, fmt::format("nested_s{}", stages));
    CHECK(r.applied);
    CHECK(!std::regex_search(r.producer, std::regex(R"(float v\d+\[)")));  // no tile in the producer: the carries are the consumers'
  }
  // Ping-pong: the turns continue across the outer loop's iterations (handed over once before it, taken back once
  // after it; check_ws checks both lie outside the inner loop and occur once).
  const auto g = gen<Nested<128, 64>>("sm_90a", {.num_warps = 8, .num_stages = 2, .warp_specialize = true, .pingpong = true});
  CHECK(has_diag(g, "warp specialised: the producer walks loop %"));
  CHECK(has_diag(g, "continuing across loop %"));
  CHECK(check_ws<Nested<128, 64>>(8, 2, true, "nested_pp").pingpong);
}

TEST_CASE("warp_specialize_edges_persistent_tile_loops_taken") {
  // Rung 6 itself: one, two and four consumer warp groups, one to four stages, plain and fused epilogues.
  for (int stages = 1; stages <= 4; ++stages) {
    CHECK(check_ws<examples::MatmulV6<64, 128, bf>>(4, stages, false, fmt::format("v6_w4_s{}", stages)).applied);
    CHECK(check_ws<examples::MatmulV6<128, 256, bf>>(8, stages, stages % 2 == 0, fmt::format("v6_w8_s{}", stages)).applied);
    if (stages >= 3) CHECK(check_ws<examples::MatmulV6<256, 128, bf>>(16, stages, false, fmt::format("v6_w16_s{}", stages)).applied);
  }
  const auto fused = check_ws<examples::MatmulV6Fused<128, 256, bf, examples::Act::gelu_tanh>>(8, 4, false, "v6_fused_gelu");
  CHECK(fused.applied);
  // The bias is the consumers' (a plain load in the tile loop): the producer reads no pointer argument.
  CHECK(fused.producer.find("arg2") == std::string::npos);
  CHECK(fused.producer.find("arg3") == std::string::npos);
  // Two pipelined loops in the tile loop: two rings, walked in program order inside one producer tile loop.
  const auto two = check_ws<Persistent<128, 64, TileLoop::two_inner>>(8, 3, false, "persistent_two_inner");
  CHECK(two.applied);
  const auto g2 = gen<Persistent<128, 64, TileLoop::two_inner>>("sm_90a", {.num_warps = 8, .num_stages = 3, .warp_specialize = true});
  CHECK(has_diag(g2, "TMA copies of 2 loop(s)"));
  int walked = 0;
  for (const auto& d : g2.diagnostics) walked += d.find("warp specialised: the producer walks loop %") != std::string::npos;
  CHECK(walked == 2);
  // The tile index read from a table the kernel never writes (a host-built schedule): the producer loads it too.
  const auto table = check_ws<Persistent<128, 64, TileLoop::loaded_tile>>(8, 2, false, "persistent_loaded_tile");
  CHECK(table.applied);
  CHECK(table.producer.find("arg5") != std::string::npos);
  // A row offset the tile loop carries (a scalar recurrence): the producer keeps its own copy, initialised before
  // its loop and advanced at the end of each iteration, as the consumers do.
  const auto carried = check_ws<Persistent<128, 64, TileLoop::carried_coord>>(8, 2, false, "persistent_carried_coord");
  CHECK(carried.applied);
  CHECK(std::regex_search(carried.producer, std::regex(R"(int (s\d+) = s\d+;  // carried by loop %\d+\n(.|\n)*int const y\d+ = s\d+;\n *\1 = y)")));
  // Inner bounds from arithmetic on the tile index (each tile its own K range).
  const auto split = check_ws<Persistent<128, 64, TileLoop::split_range>>(8, 2, false, "persistent_split_range");
  CHECK(split.applied);
  CHECK(split.producer.find("tj_min(") != std::string::npos);
  // A rank-64 correction from blocks the tile loop loads itself: copied once per tile into one buffer each (by the
  // producer, before the K loop's copies of the tile), released after the correction's wgmma; with and without
  // the producer, the same diagnostics.
  for (int stages : {1, 2, 3}) {
    const auto outer = check_ws<Persistent<128, 64, TileLoop::outer_block>>(8, stages, false, fmt::format("persistent_outer_block_s{}", stages));
    CHECK(outer.applied);
    CHECK(outer.producer.find("tj_item") < outer.producer.find("tj_issue"));
    const auto plain = gen<Persistent<128, 64, TileLoop::outer_block>>("sm_90a", {.num_warps = 8, .num_stages = stages});
    const auto ws = gen<Persistent<128, 64, TileLoop::outer_block>>("sm_90a", {.num_warps = 8, .num_stages = stages, .warp_specialize = true});
    CHECK(item_blocks(plain).size() == 2);
    CHECK(item_blocks(ws) == item_blocks(plain));
    CHECK(occurrences(plain.source, "if (tj_tid == 0) { if (tj_oit") == 2);  // thread 0 copies where the block is loaded
    nvrtc_ok(plain);
  }
}

TEST_CASE("warp_specialize_edges_persistent_tile_loops_refused") {
  const Opts o{.num_warps = 8, .num_stages = 2, .warp_specialize = true};
  auto refused = [&](auto kernel, const std::string& tag, const std::string& why) {
    using K = decltype(kernel);
    CAPTURE(tag);
    CHECK(!check_ws<K>(8, 2, false, tag).applied);
    const auto g = gen<K>("sm_90a", o);
    CHECK(has_diag(g, why));
  };
  refused(Persistent<128, 64, TileLoop::tile_carry>{}, "persistent_tile_carry", "(add) in loop %");
  refused(Persistent<128, 64, TileLoop::loaded_written>{}, "persistent_loaded_written", "(load) in loop %");
  refused(Persistent<128, 64, TileLoop::doubly_nested>{}, "persistent_doubly_nested", "itself nested in loop %");
  refused(Persistent<128, 64, TileLoop::bound_from_reduce>{}, "persistent_bound_from_reduce",
          "feeds a loop bound or a block coordinate and is not a scalar computed outside loops");
  CHECK(has_diag(gen<Persistent<128, 64, TileLoop::tile_carry>>("sm_90a", o),
                 "feeds a loop bound or a block coordinate of a nested pipelined loop and is not scalar arithmetic"));
}

// ---- warps, stages, dot forms ------------------------------------------------------------

TEST_CASE("warp_specialize_edges_warps_and_stages") {
  for (int stages = 1; stages <= 4; ++stages) {
    CHECK(check_ws<examples::MatmulV5<64, 128, bf>>(4, stages, false, fmt::format("v5_w4_s{}", stages)).applied);
    CHECK(check_ws<examples::MatmulV5<128, 128, bf>>(8, stages, stages % 2 == 0, fmt::format("v5_w8_s{}", stages)).applied);
    if (stages <= 3) CHECK(check_ws<examples::MatmulV5<256, 128, bf>>(16, stages, false, fmt::format("v5_w16_s{}", stages)).applied);
  }
  // Diagnostic register counts.
  const Opts w16{.num_warps = 16, .num_stages = 3, .warp_specialize = true};
  CHECK(has_diag(gen<examples::MatmulV5<256, 128, bf>>("sm_90a", w16), "16 consumer warp(s) with 112 registers each"));
  const Opts w4{.num_warps = 4, .num_stages = 3, .warp_specialize = true};
  CHECK(has_diag(gen<examples::MatmulV5<64, 128, bf>>("sm_90a", w4), "4 consumer warp(s) with 255 registers each"));
}

TEST_CASE("warp_specialize_edges_pingpong_needs_two_consumer_groups") {
  for (int warps : {4, 16}) {
    CAPTURE(warps);
    const auto r = warps == 4 ? check_ws<examples::MatmulV5<64, 128, bf>>(4, 3, true, "pp_w4")
                              : check_ws<examples::MatmulV5<256, 128, bf>>(16, 3, true, "pp_w16");
    CHECK(r.applied);
    CHECK(!r.pingpong);
    const auto g = warps == 4
                       ? gen<examples::MatmulV5<64, 128, bf>>("sm_90a", {.num_warps = 4, .num_stages = 3, .warp_specialize = true, .pingpong = true})
                       : gen<examples::MatmulV5<256, 128, bf>>("sm_90a", {.num_warps = 16, .num_stages = 3, .warp_specialize = true, .pingpong = true});
    CHECK(has_diag(g, fmt::format("pingpong not applied: it needs two consumer warp groups (num_warps = 8), not {}", warps)));
  }
}

TEST_CASE("warp_specialize_edges_register_a_only_loop") {
  for (int stages : {1, 2, 3}) {
    const auto r = check_ws<RegAOnly<128, 128>>(8, stages, stages == 2, fmt::format("rega_s{}", stages));
    CHECK(r.applied);
    // Nothing is left in flight (register A waits at once): the iteration releases its own stage, after its wait.
    const auto g = gen<RegAOnly<128, 128>>("sm_90a", {.num_warps = 8, .num_stages = stages, .warp_specialize = true});
    CHECK(has_diag(g, "0 wgmma left in flight"));
    const auto rel = r.consumers.find("tj_mbar_arrive(tj_empty");
    REQUIRE(rel != std::string::npos);
    CHECK(r.consumers.find("8u * tj_st", rel) < r.consumers.find('\n', rel));
    CHECK(r.consumers.rfind("wgmma.wait_group.sync.aligned 0;", rel) != std::string::npos);
  }
}

TEST_CASE("warp_specialize_edges_not_whole_warp_groups_or_no_pipeline") {
  // num_warps 2: no wgmma (M = 16 x num_warps is not a warp group's 64 rows), so no pipeline either.
  CHECK(!check_ws<examples::MatmulV5<32, 64, bf>>(2, 2, true, "w2").applied);
  // Descriptor blocks only outside loops (resident): no pipeline, nothing to specialise.
  const auto none = check_ws<ResidentOnly<64, 64>>(4, 2, true, "resident_only");
  CHECK(!none.applied);
  CHECK(has_diag(gen<ResidentOnly<64, 64>>("sm_90a", {.num_warps = 4, .num_stages = 2, .warp_specialize = true}),
                 "warp specialisation not applied: no loop has a TMA pipeline"));
}

// ---- other targets: the option changes nothing ------------------------------------------

TEST_CASE("warp_specialize_edges_other_targets_generate_the_same_source") {
  auto same = [](const char* arch, auto kernel, int warps) {
    using K = decltype(kernel);
    CAPTURE(arch);
    const auto plain = gen<K>(arch, {.num_warps = warps, .num_stages = 3});
    const auto ws = gen<K>(arch, {.num_warps = warps, .num_stages = 3, .warp_specialize = true});
    const auto pp = gen<K>(arch, {.num_warps = warps, .num_stages = 3, .warp_specialize = true, .pingpong = true});
    CHECK(ws.source == plain.source);
    CHECK(pp.source == plain.source);
    CHECK(ws.threads == plain.threads);
    // CUDA targets without wgmma pipeline the blocks with cp.async, which every thread issues: no producer warp.
    CHECK(has_diag(ws, std::string(arch).starts_with("sm_") ? "warp specialisation not applied: target " + std::string(arch) + " has no TMA"
                                                             : std::string("warp specialisation not applied: no loop has a TMA pipeline")));
  };
  for (const char* arch : {"sm_80", "sm_90", "gfx942"}) {
    same(arch, examples::MatmulV5<64, 64, bf>{}, 4);
    same(arch, TwoLoops<64, 64>{}, 4);
    same(arch, CausalBounds<64, 64>{}, 4);
  }
  testing::compiles_for_gfx942(gen<TwoLoops<64, 64>>("gfx942", {.num_warps = 4, .num_stages = 3, .warp_specialize = true}).source,
                               "two_loops_ws.hip");
}

// ---- bugs the first version of these tests found, fixed since (the descriptions say how) ----------------

// Was a bug (fixed: generate() makes the kernel again without pingpong, with a diagnostic): pingpong put a
// consumer-wide barrier inside a warp group's turn. A reduction across warps (here the
// column maximum of S, whose rows are spread over both warp groups) between the first and the last wgmma of
// the iteration is emitted as `bar.sync 1, 256` between `bar.sync 2 + tj_warp / 4` and
// `bar.arrive 3 - tj_warp / 4`: group 0, in its turn, waits at barrier 1 for group 1's threads, while group
// 1 waits at barrier 3 for group 0's end of turn. Deadlock in the first iteration. decide_warp_specialization
// should refuse pingpong (with a diagnostic) when the span between pp_first_ and pp_last_ contains a sync()
// (cross-warp reductions, layout conversions through shared memory, staged wgmma operands).
// Without pingpong the same kernel is fine (first CHECK).
TEST_CASE("warp_specialize_edges_pingpong_with_a_consumer_barrier_inside_the_turn") {
  CHECK(check_ws<CrossWarpBetweenDots<128, 64>>(8, 2, false, "crosswarp_ws").applied);
  const auto r = check_ws<CrossWarpBetweenDots<128, 64>>(8, 2, true, "crosswarp_pp");
  CHECK((!r.applied || !r.pingpong));  // else check_ws fails: "bar.sync 1," inside the turn
  const auto g = gen<CrossWarpBetweenDots<128, 64>>("sm_90a", {.num_warps = 8, .num_stages = 2, .warp_specialize = true, .pingpong = true});
  CHECK(has_diag(g, "pingpong not applied: between dot %"));
  CHECK(g.source.find("bar.sync %0") == std::string::npos);
}

// Was a bug (fixed: a "not applied" diagnostic): 32 consumer warps (M = 512, register-A wgmma over 8 warp groups) plus the producer warp group make
// 1152 threads: __launch_bounds__(1152), more than the 1024 threads a CUDA block may have, so every launch
// fails. warp specialisation should need num_warps * 32 + 128 <= 1024 (a "not applied" diagnostic otherwise).
// (ptxas also spills: 56 registers per thread.)
TEST_CASE("warp_specialize_edges_32_warps_exceed_the_block_size") {
  const auto g = gen<RegAOnly<512, 64>>("sm_90a", {.num_warps = 32, .num_stages = 2, .warp_specialize = true});
  CHECK(g.threads == 1024);
  CHECK(has_diag(g, "warp specialisation not applied: num_warps = 32 and the producer warp group make 1152 threads"));
}

// Was a bug (fixed: the kernel is declared __maxnreg__(launch regs), which pins ptxas's allocation; the
// arithmetic is checked here with ptxas's own register count):
// setmaxnreg.inc assumes the program's register pool is launch_regs() x threads (168 x 384 for 8 consumer
// warps), but ptxas allocates only what the kernel needs even with setmaxnreg: TwoLoops<128, 64> with 8
// warps gets "Used 90 registers" (NVRTC and nvcc 13.0), a pool of at most 96 x 384 = 36864 registers, while
// the consumers ask for 240 x 256 + the producer's 24 x 128 = 64512. setmaxnreg.inc blocks until the CTA's
// pool has the registers (PTX ISA), so the consumers never get past it: the hang commit 8680760 describes.
// Also CausalBounds<128, 64> (79 registers), CrossWarpBetweenDots (106), RegAOnly with fewer registers.
// The inc must be computed from the registers ptxas actually allocates, or the allocation forced
// (e.g. -maxrregcount / .maxnreg launch_regs()).
TEST_CASE("warp_specialize_edges_setmaxnreg_inc_within_the_allocated_pool") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) return;
  auto pool_ok = [](const tj::codegen::Generated& g, int warps) {
    tj::runtime::JitRequest req;
    req.source = g.source;
    req.name = g.kernel_name + "_regs.cu";
    req.arch = "sm_90a";
    req.options = {"-Xptxas=-v"};
    const auto res = tj::runtime::compile(req);
    std::smatch m;
    static const std::regex used(R"(Used (\d+) registers)");
    REQUIRE(std::regex_search(res.log, m, used));
    const int regs = (std::stoi(m[1]) + 7) / 8 * 8;
    static const std::regex inc(R"(setmaxnreg\.inc\.sync\.aligned\.u32 (\d+);)");
    std::smatch mi;
    const int want = std::regex_search(g.source, mi, inc) ? std::stoi(mi[1]) : regs;
    CAPTURE(regs);
    CAPTURE(want);
    CHECK(regs * g.threads >= want * 32 * warps + 24 * 128);
  };
  pool_ok(gen<TwoLoops<128, 64>>("sm_90a", {.num_warps = 8, .num_stages = 2, .warp_specialize = true}), 8);
  pool_ok(gen<CausalBounds<128, 64>>("sm_90a", {.num_warps = 8, .num_stages = 2, .warp_specialize = true, .pingpong = true}), 8);
  pool_ok(gen<examples::MatmulV5<128, 128, bf>>("sm_90a", {.num_warps = 8, .num_stages = 3, .warp_specialize = true}), 8);
}
