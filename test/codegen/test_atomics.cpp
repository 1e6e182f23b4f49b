// Atomics (tj::atomic_add / max / min / xchg / cas): a histogram over many programs, old values read back by the
// threads that hold copies of an element (a 1-D tile over more threads than elements, and a scalar ticket per
// program), f32 max / min on the bits, exchange and compare-and-swap. Checked: the generated code compiles for
// sm_90a, sm_80 and gfx942; the interpreter, the generated HIP text run on the CPU with real threads (the host
// emulator, wave32 and wave64) and the GPU all match CPU references on fresh random inputs; bad element types fail
// to compile (test/compile_fail/atomic_f16.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/host_emulator.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"
#include <tilejit/tilejit.hpp>

namespace tj = tilejit;

namespace {

constexpr int kBins = 16;

/// hist[x[i]] += 1 for i < n, 256 elements a program.
struct Histogram {
  void operator()(tj::Ptr<std::int32_t> x, tj::Ptr<std::int32_t> hist, tj::Ptr<std::int32_t> n) const {
    auto offs = tj::program_id(0) * 256 + tj::arange<256>();
    auto ok = offs < tj::load(n);
    tj::atomic_add(hist + tj::load(x + offs, ok, 0), 1, ok);
  }
};

/// out = the old values of p[0..64) as v is added to them (64 elements over up to 256 threads: copies).
struct AddOld {
  void operator()(tj::Ptr<std::int64_t> p, tj::Ptr<std::int64_t> v, tj::Ptr<std::int64_t> out) const {
    auto o = tj::arange<64>();
    tj::store(out + o, tj::atomic_add(p + o, tj::load(v + o)));
  }
};

/// tickets[pid] = a ticket from one shared counter (a scalar atomic whose result every thread uses).
struct Ticket {
  void operator()(tj::Ptr<std::int32_t> counter, tj::Ptr<std::int32_t> tickets, tj::Ptr<std::int32_t> unused) const {
    auto t = tj::atomic_add(counter, 1);
    tj::store(tickets + tj::program_id(0), t + tj::load(unused) * 0);
  }
};

/// mx[c] = max, mn[c] = min over all programs' rows of x [rows, 32] (8 rows a program), f32 on the bits.
struct ColumnMaxMin {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> mx, tj::Ptr<float> mn) const {
    auto r = tj::program_id(0) * 8 + tj::expand_dims<1>(tj::arange<8>());
    auto c = tj::expand_dims<0>(tj::arange<32>());
    auto v = tj::load(x + r * 32 + c);
    tj::atomic_max(mx + c + r * 0, v);
    tj::atomic_min(mn + c + r * 0, v);
  }
};

/// u64 min and i64 max into 4 addresses, masked to the first `n` of 128 elements of each program.
struct IntMaxMin {
  void operator()(tj::Ptr<std::int64_t> x, tj::Ptr<std::int64_t> mx, tj::Ptr<std::uint64_t> mn) const {
    auto o = tj::program_id(0) * 128 + tj::arange<128>();
    auto v = tj::load(x + o);
    auto ok = tj::arange<128>() < 100;
    tj::atomic_max(mx + o % 4, v, ok);
    tj::atomic_min(mn + o % 4, tj::cast<std::uint64_t>(v), ok);
  }
};

/// lock: every program tries 0 -> pid + 1 (one wins); swap: out = the old values as v is exchanged in (f64).
struct CasXchg {
  void operator()(tj::Ptr<std::int32_t> lock, tj::Ptr<std::int32_t> got, tj::Ptr<double> swap) const {
    tj::store(got + tj::program_id(0), tj::atomic_cas(lock, 0, tj::program_id(0) + 1));
    auto o = tj::program_id(0) * 32 + tj::arange<32>();
    auto old = tj::atomic_xchg(swap + o, tj::cast<double>(o) + 0.5);
    tj::store(swap + 4096 + o, old);
  }
};

/// acc[i % 8] += x[i] (f32) for i < n.
struct FloatAdd {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> acc, tj::Ptr<std::int32_t> n) const {
    auto offs = tj::program_id(0) * 128 + tj::arange<128>();
    auto ok = offs < tj::load(n);
    tj::atomic_add(acc + offs % 8, tj::load(x + offs, ok, 0.0f), ok);
  }
};

/// acc[r, c] += x[p, r, c] over programs p, rows r < n: f32 [32, 64] tiles whose threads hold contiguous, aligned
/// runs of columns — vector reductions (red.global.add.v4.f32) on sm_90, scalar atomics elsewhere.
struct TileAdd {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> acc, tj::Ptr<std::int32_t> n) const {
    auto r = tj::expand_dims<1>(tj::arange<32>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    auto ok = r < tj::load(n);
    tj::atomic_add(acc + r * 64 + c, tj::load(x + tj::program_id(0) * 2048 + r * 64 + c), ok);
  }
};

/// acc[r, c] += (a_p · b_p)[r, c] over programs p: bf16 [32, 32] products added in the accumulator's own layout,
/// whose registers pair adjacent columns (red.global.add.v2.f32 on sm_90).
struct DotAdd {
  void operator()(tj::Ptr<tj::bf16> a, tj::Ptr<tj::bf16> b, tj::Ptr<float> acc) const {
    auto r = tj::expand_dims<1>(tj::arange<32>());
    auto c = tj::expand_dims<0>(tj::arange<32>());
    auto base = tj::program_id(0) * 1024;
    tj::atomic_add(acc + r * 32 + c, tj::dot(tj::load(a + base + r * 32 + c), tj::load(b + base + r * 32 + c)));
  }
};

/// acc[i + j] += 1 for a [16, 4] tile (rows overlap: a sliding window): runs of 4 along j start at every i, so
/// they are 4-byte aligned only — scalar atomics, never vectors.
struct WindowAdd {
  void operator()(tj::Ptr<float> acc) const {
    auto i = tj::expand_dims<1>(tj::arange<16>());
    auto j = tj::expand_dims<0>(tj::arange<4>());
    tj::atomic_add(acc + i + j, tj::full<float, 16, 4>(1.0f));
  }
};

/// out = the old values of p[0..64) as 1 is added to each (f32, the old values used: atomics that return them).
struct AddOldF32 {
  void operator()(tj::Ptr<float> p, tj::Ptr<float> out) const {
    auto o = tj::arange<64>();
    tj::store(out + o, tj::atomic_add(p + o, tj::full<float, 64>(1.0f)));
  }
};

/// Runs kernel K over `programs` with buffers bufs (every buffer is copied back).
struct OnDevice {
  const tj::Device& dev;
  template <class K, class... V>
  bool run(unsigned programs, int nw, std::vector<V>&... bufs) const {
    testing::Mirror m{dev, {}};
    tj::compile<K>(dev, {.num_warps = nw}).launch(tj::Grid{programs}, m.up(bufs)...);
    m.down();
    return true;
  }
};

/// The generated HIP text for `arch` on the CPU (false: no host clang).
struct OnHost {
  const char* arch;
  template <class K, class... V>
  bool run(unsigned programs, int nw, std::vector<V>&... bufs) const {
    const auto hk = testing::HostKernel::compile(tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for(arch), {.num_warps = nw}));
    if (!hk) return false;
    hk->launch({programs, 1, 1}, bufs.data()...);
    return true;
  }
};

template <class Runner>
void check_all(const Runner& on, unsigned salt) {
  CAPTURE(testing::fresh_seed());
  for (int nw : {1, 4}) {
    CAPTURE(nw);
    {  // histogram over 5 programs, the last one ragged
      const int n = 1100;
      std::vector<std::int32_t> x(1280), hist(kBins, 0), nn{n};
      const auto f = testing::random_floats(x.size(), 0, kBins, salt);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::min(kBins - 1, static_cast<int>(f[i]));
      if (!on.template run<Histogram>(5, nw, x, hist, nn)) return;
      std::vector<std::int32_t> want(kBins, 0);
      for (int i = 0; i < n; ++i) ++want[static_cast<std::size_t>(x[static_cast<std::size_t>(i)])];
      CHECK(hist == want);
    }
    {  // old values to every copy; each element added once
      std::vector<std::int64_t> p(64), v(64), out(64, -1);
      const auto f = testing::random_floats(128, -1e6, 1e6, salt + 1);
      for (int i = 0; i < 64; ++i) {
        p[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(f[static_cast<std::size_t>(i)]) << 20;
        v[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(f[64 + static_cast<std::size_t>(i)]);
      }
      const auto p0 = p;
      on.template run<AddOld>(1, nw, p, v, out);
      CHECK(out == p0);
      for (int i = 0; i < 64; ++i) CHECK(p[static_cast<std::size_t>(i)] == p0[static_cast<std::size_t>(i)] + v[static_cast<std::size_t>(i)]);
    }
    {  // tickets: a permutation of 0 .. 6
      std::vector<std::int32_t> counter{0}, tickets(7, -1), unused{3};
      on.template run<Ticket>(7, nw, counter, tickets, unused);
      CHECK(counter[0] == 7);
      std::sort(tickets.begin(), tickets.end());
      for (int i = 0; i < 7; ++i) CHECK(tickets[static_cast<std::size_t>(i)] == i);
    }
    {  // f32 max / min over 6 programs x 8 rows; memory starts at values of both signs (and -0 / +0)
      auto x = testing::random_floats(48 * 32, -8, 8, salt + 2);
      x[5] = -0.0f;
      std::vector<float> mx(32), mn(32);
      const auto init = testing::random_floats(32, -9, 9, salt + 3);
      for (int c = 0; c < 32; ++c) mx[static_cast<std::size_t>(c)] = mn[static_cast<std::size_t>(c)] = init[static_cast<std::size_t>(c)];
      mx[5] = mn[5] = 0.0f;
      on.template run<ColumnMaxMin>(6, nw, x, mx, mn);
      for (int c = 0; c < 32; ++c) {
        float hi = init[static_cast<std::size_t>(c)], lo = hi;
        if (c == 5) hi = lo = 0.0f;
        for (int r = 0; r < 48; ++r) {
          hi = std::max(hi, x[static_cast<std::size_t>(r * 32 + c)]);
          lo = std::min(lo, x[static_cast<std::size_t>(r * 32 + c)]);
        }
        CHECK(mx[static_cast<std::size_t>(c)] == hi);
        CHECK(mn[static_cast<std::size_t>(c)] == lo);
      }
    }
    {  // i64 max, u64 min (values of both signs: as u64 the negative ones are the largest)
      std::vector<std::int64_t> x(3 * 128), mx(4, std::numeric_limits<std::int64_t>::min());
      std::vector<std::uint64_t> mn(4, std::numeric_limits<std::uint64_t>::max());
      const auto f = testing::random_floats(x.size(), -1e9, 1e9, salt + 4);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int64_t>(f[i]) * 4096;
      on.template run<IntMaxMin>(3, nw, x, mx, mn);
      std::vector<std::int64_t> wmx(4, std::numeric_limits<std::int64_t>::min());
      std::vector<std::uint64_t> wmn(4, std::numeric_limits<std::uint64_t>::max());
      for (int p = 0; p < 3; ++p)
        for (int j = 0; j < 100; ++j) {
          const int i = p * 128 + j;
          wmx[static_cast<std::size_t>(i % 4)] = std::max(wmx[static_cast<std::size_t>(i % 4)], x[static_cast<std::size_t>(i)]);
          wmn[static_cast<std::size_t>(i % 4)] = std::min(wmn[static_cast<std::size_t>(i % 4)], static_cast<std::uint64_t>(x[static_cast<std::size_t>(i)]));
        }
      CHECK(mx == wmx);
      CHECK(mn == wmn);
    }
    {  // compare-and-swap: exactly one program wins; exchange returns the old values
      std::vector<std::int32_t> lock{0}, got(5, -1);
      std::vector<double> swap(4096 + 5 * 32);
      for (std::size_t i = 0; i < 5 * 32; ++i) swap[i] = -static_cast<double>(i) * 0.25;
      on.template run<CasXchg>(5, nw, lock, got, swap);
      const auto winners = std::count(got.begin(), got.end(), 0);
      CHECK(winners == 1);
      const auto w = static_cast<int>(std::find(got.begin(), got.end(), 0) - got.begin());
      CHECK(lock[0] == w + 1);
      for (int p = 0; p < 5; ++p)
        if (p != w) CHECK(got[static_cast<std::size_t>(p)] == w + 1);
      for (std::size_t i = 0; i < 5 * 32; ++i) {
        CHECK(swap[i] == static_cast<double>(i) + 0.5);
        CHECK(swap[4096 + i] == -static_cast<double>(i) * 0.25);
      }
    }
    {  // f32 tiles added by 3 programs, rows past n masked off
      const int n = 27;
      auto x = testing::random_floats(3 * 2048, -1, 1, salt + 6);
      auto acc = testing::random_floats(2048, -1, 1, salt + 7);
      const auto acc0 = acc;
      std::vector<std::int32_t> nn{n};
      on.template run<TileAdd>(3, nw, x, acc, nn);
      for (int e = 0; e < 2048; ++e) {
        double want = acc0[static_cast<std::size_t>(e)];
        if (e / 64 < n)
          for (int p = 0; p < 3; ++p) want += x[static_cast<std::size_t>(p * 2048 + e)];
        CHECK(std::abs(acc[static_cast<std::size_t>(e)] - want) <= 1e-5);
      }
    }
    {  // f32 old values returned (no vector reductions there)
      auto p = testing::random_floats(64, -4, 4, salt + 8);
      const auto p0 = p;
      std::vector<float> out(64, -1.0f);
      on.template run<AddOldF32>(1, nw, p, out);
      CHECK(out == p0);
      for (int i = 0; i < 64; ++i) CHECK(p[static_cast<std::size_t>(i)] == p0[static_cast<std::size_t>(i)] + 1.0f);
    }
    {  // overlapping rows: acc[k] gains one per (i, j) with i + j = k
      std::vector<float> acc(19, 0.5f);
      on.template run<WindowAdd>(2, nw, acc);
      for (int k = 0; k < 19; ++k) {
        int hits = 0;
        for (int i = 0; i < 16; ++i) hits += (k - i >= 0 && k - i < 4) ? 1 : 0;
        CHECK(acc[static_cast<std::size_t>(k)] == 0.5f + 2.0f * static_cast<float>(hits));
      }
    }
    {  // f32 adds into 8 addresses, masked
      const int n = 500;
      auto x = testing::random_floats(512, -1, 1, salt + 5);
      std::vector<float> acc(8, 0.0f);
      std::vector<std::int32_t> nn{n};
      on.template run<FloatAdd>(4, nw, x, acc, nn);
      for (int j = 0; j < 8; ++j) {
        double s = 0;
        for (int i = j; i < n; i += 8) s += x[static_cast<std::size_t>(i)];
        CHECK(std::abs(acc[static_cast<std::size_t>(j)] - s) <= 1e-4);
      }
    }
  }
}

}  // namespace

TEST_CASE("atomics_compile_everywhere") {
  auto all = [](const auto& kernel) {
    const auto k = tj::trace(kernel);
    for (int nw : {1, 4}) {
      CAPTURE(k.name);
      CAPTURE(nw);
      for (const char* arch : {"sm_90a", "sm_80"}) testing::compiles_for(tj::codegen::generate(k, {}, tj::codegen::target_for(arch), {.num_warps = nw}).source, arch, k.name);
      testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = nw}).source, k.name);
    }
  };
  all(Histogram{});
  all(AddOld{});
  all(Ticket{});
  all(ColumnMaxMin{});
  all(IntMaxMin{});
  all(CasXchg{});
  all(FloatAdd{});
  all(TileAdd{});
  all(DotAdd{});
  all(WindowAdd{});
  all(AddOldF32{});
}

TEST_CASE("atomics_f32_adds_become_vector_reductions_on_sm90") {
  // Launches specialise pointers to 16-byte alignment where they are; generate as such a launch does.
  auto gen = [](const auto& kernel, const char* arch, int nw, std::uint8_t flags = tj::ir::Specialization::kDiv16) {
    const auto k = tj::trace(kernel);
    tj::ir::Specialization spec;
    spec.flags.assign(k.params.size(), flags);
    return tj::codegen::generate(k, spec, tj::codegen::target_for(arch), {.num_warps = nw}).source;
  };
  auto calls = [](const std::string& src, const std::string& fn) {
    std::size_t n = 0;
    for (std::size_t p = src.find(fn + "(v"); p != std::string::npos; p = src.find(fn + "(v", p + 1)) ++n;
    return n;
  };
  // [32, 64] f32 over 4 warps: 16 elements a thread, in runs of 4 columns: 4 vector reductions, no scalar atomics.
  const std::string tile = gen(TileAdd{}, "sm_90a", 4);
  CHECK(calls(tile, "tj_red_add_v4") == 4);
  CHECK(calls(tile, "tj_atomic_add") == 0);
  testing::compiles_for(tile, "sm_90a", "TileAdd");
  // The mma accumulator pairs adjacent columns: [32, 32] over 4 warps is 8 elements a thread, 4 pairs.
  const std::string dot = gen(DotAdd{}, "sm_90a", 4);
  CHECK(calls(dot, "tj_red_add_v2") == 4);
  CHECK(calls(dot, "tj_atomic_add") == 0);
  testing::compiles_for(dot, "sm_90a", "DotAdd");
  // Not on sm_80 (PTX's vector red needs sm_90), not without 16-byte-aligned pointers, not for overlapping rows,
  // not where the old values are used (AddOld), not for other element types (Histogram).
  CHECK(calls(gen(TileAdd{}, "sm_80", 4), "tj_red_add_v4") == 0);
  CHECK(calls(gen(TileAdd{}, "sm_90a", 4, 0), "tj_red_add_v4") == 0);
  CHECK(calls(gen(TileAdd{}, "sm_90a", 4, 0), "tj_atomic_add") == 16);
  const std::string window = gen(WindowAdd{}, "sm_90a", 1);
  CHECK(calls(window, "tj_red_add_v2") + calls(window, "tj_red_add_v4") == 0);
  CHECK(calls(window, "tj_atomic_add") == 2);  // [16, 4] over one warp: 2 elements a thread
  const std::string used = gen(AddOldF32{}, "sm_90a", 1);
  CHECK(calls(used, "tj_red_add_v2") + calls(used, "tj_red_add_v4") == 0);
  CHECK(calls(used, "tj_atomic_add") == 2);
  CHECK(calls(gen(Histogram{}, "sm_90a", 4), "tj_red_add_v4") == 0);
}

TEST_CASE("atomics_dot_accumulators_added_match_f64") {
  // DotAdd on the interpreter and, where there is one, the GPU (sm_90: vector reductions), against f64.
  auto check = [](const tj::Device& dev, unsigned salt) {
    CAPTURE(testing::fresh_seed());
    for (int nw : {1, 4}) {
      CAPTURE(nw);
      auto a = testing::random_tensor<tj::bf16>(3 * 1024, salt);
      auto b = testing::random_tensor<tj::bf16>(3 * 1024, salt + 1);
      auto acc = testing::random_floats(1024, -1, 1, salt + 2);
      const auto acc0 = acc;
      OnDevice{dev}.run<DotAdd>(3, nw, a, b, acc);
      for (int r = 0; r < 32; ++r)
        for (int c = 0; c < 32; ++c) {
          double want = acc0[static_cast<std::size_t>(r * 32 + c)];
          for (int p = 0; p < 3; ++p)
            for (int k = 0; k < 32; ++k)
              want += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>(p * 1024 + r * 32 + k)])) *
                      static_cast<double>(static_cast<float>(b[static_cast<std::size_t>(p * 1024 + k * 32 + c)]));
          CHECK(std::abs(acc[static_cast<std::size_t>(r * 32 + c)] - want) <= 1e-4 * (1.0 + std::abs(want)));
        }
    }
  };
  check(tj::Device::interpreter(), 740);
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping the GPU half");
    return;
  }
  check(dev, 750);
}

TEST_CASE("atomics_do_each_element_once_and_share_old_values") {
  // 64 elements at 4 warps: 128 threads hold them twice; only the owners add, and the old values the copies use
  // come through shared memory.
  const auto g = tj::codegen::generate(tj::trace(AddOld{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  CHECK(g.source.find("tj_atomic_add(") != std::string::npos);
  CHECK(g.source.find("from their owners") != std::string::npos);
  // The histogram's result is unused: no shared memory.
  const auto h = tj::codegen::generate(tj::trace(Histogram{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  CHECK(h.source.find("from their owners") == std::string::npos);
  CHECK(h.shared_bytes == 0);
  // Pointers written by an atomic count as stored (launch checks of overlapping operands).
  CHECK(tj::ir::stored_pointer_params(tj::trace(Histogram{})) == std::vector<char>{0, 1, 0});
  CHECK(tj::ir::print(tj::trace(CasXchg{})).find("atomic_cas i32") != std::string::npos);
}

TEST_CASE("atomics_interpreter_match_cpu") { check_all(OnDevice{tj::Device::interpreter()}, 700); }

TEST_CASE("atomics_generated_code_runs_on_the_host_emulator") {
  check_all(OnHost{"gfx1100"}, 710);
  check_all(OnHost{"gfx942"}, 720);
}

TEST_CASE("atomics_gpu_match_cpu") {
  auto dev = tj::Device::best();
  if (dev.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_all(OnDevice{dev}, 730);
}
