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
