// tilejit launches report to the profiler through the launch hook.
#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "examples/attention/attention.hpp"
#include "examples/gemm/matmul_v1.hpp"
#include "examples/vector_add.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace prof = tilejit::profiler;

namespace {

/// VecAdd declaring its own cost: the launch reports it instead of the IR's count.
struct DeclaredCost : examples::VecAdd<32> {
  tj::LaunchCost launch_cost(const tj::Grid& g, const float*, const float*, const float*, int n) const {
    (void)g;
    return {.flops = 7LL * n, .flops_width = 64, .bytes = 12LL * n};
  }
};

/// A functor that cannot be copied: Kernel keeps no copy, and the launch reports the IR's count.
struct NoCopy : examples::VecAdd<32> {
  NoCopy() = default;
  NoCopy(const NoCopy&) = delete;
  NoCopy& operator=(const NoCopy&) = delete;
  tj::LaunchCost launch_cost(const tj::Grid&, const float*, const float*, const float*, int) const { return {.bytes = 1}; }
};

const nlohmann::json& child(const nlohmann::json& node, const std::string& name) {
  for (const auto& c : node["children"])
    if (c["frame"]["name"] == name) return c;
  FAIL("no child named " << name << " in " << node.dump());
  static const nlohmann::json none;
  return none;
}

/// A session with the launch hook, writing into a fresh directory; finalized and the directory removed at scope exit.
struct HookSession {
  std::filesystem::path dir;
  prof::SessionId id;
  explicit HookSession(const std::string& tag)
      : dir(std::filesystem::temp_directory_path() / ("tj_hook_" + tag + "_" + std::to_string(::getpid()))), id(start(dir)) {}
  ~HookSession() {
    prof::finalize(id);
    std::filesystem::remove_all(dir);
  }
  HookSession(const HookSession&) = delete;
  HookSession& operator=(const HookSession&) = delete;
  /// The current phase's call tree (hatchet JSON), its root node.
  nlohmann::json root() const { return nlohmann::json::parse(*prof::get(id, prof::current_phase(id)))[0]; }

 private:
  static prof::SessionId start(const std::filesystem::path& d) {
    std::filesystem::create_directories(d);
    prof::Options o;
    o.hook = "launch";
    return prof::start((d / "hook").string(), o);
  }
};

}  // namespace

TEST_CASE("profiler_launch_hook_records_tilejit_launches") {
  HookSession session("basic");
  std::vector<float> x(200, 1.f), y(200, 2.f), out(200);
  auto k = tj::compile<examples::VecAdd<96>>(tj::Device::interpreter(), {.num_warps = 1});
  {
    prof::Scope step("step");
    k.launch(tj::Grid{3}, x.data(), y.data(), out.data(), 200);
    k.launch(tj::Grid{3}, x.data(), y.data(), out.data(), 200);
  }
  std::vector<float> a(40 * 33, 0.5f), b(33 * 20, 0.25f), c(40 * 20);
  auto mm = tj::compile<examples::MatmulV1<16, 16, 16, float>>(tj::Device::interpreter(), {.num_warps = 1});
  auto declared = tj::compile<DeclaredCost>(tj::Device::interpreter(), {.num_warps = 1});
  {
    prof::Scope gemm("gemm");
    mm.launch(tj::Grid{3, 2}, a.data(), b.data(), c.data(), 40, 20, 33);
    declared.launch(tj::Grid{7}, x.data(), y.data(), out.data(), 200);
  }
  const auto root = session.root();
  // The kernel's node under the scope, with what its IR amounts to: two launches of 3 programs, each loading two
  // and storing one 96-float tile; no product, so no flops.
  CHECK(k.ir().name == "VecAdd_96_float");
  const auto& vec = child(child(root, "step"), k.ir().name);
  CHECK(vec["metrics"]["bytes"] == 2 * 3 * 3 * 96 * 4);
  CHECK_FALSE(vec["metrics"].contains("flops32"));
  // The tiled GEMM: 6 programs x ceil(33 / 16) = 3 K steps of a 16x16x16 product and two 16x16 loads, and a store.
  const auto& gemm = child(child(root, "gemm"), mm.ir().name);
  CHECK(gemm["metrics"]["flops32"] == 6 * 3 * 2 * 16 * 16 * 16);
  CHECK(gemm["metrics"]["bytes"] == 6 * 3 * 2 * 16 * 16 * 4 + 6 * 16 * 16 * 4);
  // A kernel's own launch_cost, called with the launch's arguments.
  const auto& own = child(child(root, "gemm"), declared.ir().name);
  CHECK(own["metrics"]["flops64"] == 7 * 200);
  CHECK(own["metrics"]["bytes"] == 12 * 200);
  CHECK(out[0] == 3.f);
}

TEST_CASE("profiler_launch_hook_reports_the_attention_forward_s_declared_cost") {
  // Causal attention's key range depends on the program, so the IR cannot total it: the kernel declares its cost.
  HookSession session("attn");
  const examples::AttnShape shape{.batch = 1, .heads_q = 4, .heads_kv = 2, .seqlen = 40, .head_dim = 64, .causal = true};
  const std::size_t nq = 4 * 40 * 64, nkv = 2 * 40 * 64;
  std::vector<tj::bf16> q(nq, tj::bf16(0.25f)), k(nkv, tj::bf16(-0.5f)), v(nkv, tj::bf16(1.f)), out(nq);
  std::vector<float> lse(4 * 40);
  examples::Attention<tj::bf16> attn(tj::Device::interpreter());
  {
    prof::Scope fwd("fwd");
    attn.forward(q.data(), k.data(), v.data(), out.data(), lse.data(), shape);
  }
  const auto root = session.root();
  const auto& f = child(root, "fwd");
  REQUIRE(f["children"].size() == 1);
  const auto& kern = f["children"][0];
  CHECK(kern["metrics"]["flops16"] == 4LL * 4 * 40 * 40 * 64 / 2);
  CHECK(kern["metrics"]["bytes"] == (2LL * 4 + 2LL * 2) * 40 * 64 * 2 + 4LL * 40 * 4);
  CHECK(std::abs(float(out[0]) - 1.f) < 1e-2f);  // every V row is 1: so is every output
}

TEST_CASE("profiler_launch_hook_counts_a_non_copyable_functor_from_its_ir") {
  HookSession session("nocopy");
  std::vector<float> x(64, 1.f), y(64, 2.f), out(64);
  auto k = tj::compile<NoCopy>(tj::Device::interpreter(), {.num_warps = 1});
  k.launch(tj::Grid{2}, x.data(), y.data(), out.data(), 64);
  const auto root = session.root();
  // Its launch_cost (bytes = 1) cannot be called without a copy: the IR's 2 programs x 3 tiles of 32 floats.
  CHECK(child(root, k.ir().name)["metrics"]["bytes"] == 2 * 3 * 32 * 4);
  CHECK(out[63] == 3.f);
}
