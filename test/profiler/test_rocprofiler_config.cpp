// The rocprofiler-sdk PC-sampling configuration (compile-only; untested on AMD
// hardware here: see include/tilejit/profiler/rocprofiler_pc_sampling.hpp).
#include <doctest/doctest.h>

#include <tilejit/profiler/rocprofiler_pc_sampling.hpp>

namespace rocm = tilejit::profiler::rocm;
using Cfg = rocm::PcSamplingConfig;

// The checks are constexpr: a bad configuration can be rejected at compile time.
static_assert(Cfg{}.valid());
static_assert(Cfg{}.unit() == Cfg::Unit::time);
static_assert(Cfg{.method = Cfg::Method::stochastic}.unit() == Cfg::Unit::cycles);
static_assert(!Cfg{.method = Cfg::Method::stochastic, .interval = 1000}.valid());

TEST_CASE("profiler rocprofiler: PC-sampling configuration (host trap / stochastic) and its checks") {
  Cfg host;
  CHECK(rocm::name(host.method) == "host_trap");
  CHECK(rocm::name(host.unit()) == "time");
  CHECK(host.effective_interval() == Cfg::kDefaultHostTrapUs);
  host.interval = 50;
  CHECK(host.valid());
  host.interval = 2'000'000;
  CHECK(host.problem().find("1 s") != std::string_view::npos);

  Cfg st{.method = Cfg::Method::stochastic};
  CHECK(rocm::name(st.method) == "stochastic");
  CHECK(rocm::name(st.unit()) == "cycles");
  CHECK(st.effective_interval() == Cfg::kDefaultStochasticCycles);
  CHECK(st.valid());
  st.interval = 65536;
  CHECK(st.valid());
  st.interval = 65537;
  CHECK(st.problem().find("power of two") != std::string_view::npos);

  Cfg small{.buffer_size = 1024};
  CHECK(small.problem().find("4 KiB") != std::string_view::npos);
  Cfg mark{.watermark = 0};
  CHECK(mark.problem().find("watermark") != std::string_view::npos);
  mark.watermark = mark.buffer_size + 1;
  CHECK_FALSE(mark.valid());
}
