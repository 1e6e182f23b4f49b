// tilejit launches report to the profiler through the launch hook.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace prof = tilejit::profiler;

TEST_CASE("profiler_launch_hook_records_tilejit_launches") {
  const auto dir = std::filesystem::temp_directory_path() / ("tj_hook_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  prof::Options o;
  o.hook = "launch";
  const auto s = prof::start((dir / "hook").string(), o);
  std::vector<float> x(200, 1.f), y(200, 2.f), out(200);
  auto k = tj::compile<examples::VecAdd<96>>(tj::Device::interpreter(), {.num_warps = 1});
  {
    prof::Scope step("step");
    k.launch(tj::Grid{3}, x.data(), y.data(), out.data(), 200);
    k.launch(tj::Grid{3}, x.data(), y.data(), out.data(), 200);
  }
  const auto json = prof::get(s, prof::current_phase(s));
  REQUIRE(json.has_value());
  CHECK(json->find("\"step\"") != std::string::npos);
  CHECK(json->find("VecAdd_96_float") != std::string::npos);  // the kernel's node under the scope
  prof::finalize(s);
  std::filesystem::remove_all(dir);
  CHECK(out[0] == 3.f);
}
