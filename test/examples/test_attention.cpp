// Attention forward: the interpreter (and, on a GPU, the device) against an
// f64 reference on fresh random inputs — D = 64 and 96 (exact), causal and
// not, grouped-query heads, ragged S.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "examples/attention/flash_fwd.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {

struct Ref {
  std::vector<double> o, lse;
};

/// testing::attention_ref per head of [BH, S, D] tensors (query head bh reads KV head bh / group).
template <class T>
Ref reference(const std::vector<T>& q, const std::vector<T>& k, const std::vector<T>& v, int BH, int group, int S, int D,
              bool causal, double scale) {
  auto head = [&](const std::vector<T>& x, int h) {
    std::vector<double> out(static_cast<std::size_t>(S) * D);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[static_cast<std::size_t>(h) * S * D + i]);
    return out;
  };
  Ref r;
  for (int bh = 0; bh < BH; ++bh) {
    const auto h = testing::attention_ref(head(q, bh), head(k, bh / group), head(v, bh / group), S, S, D, causal, scale);
    r.o.insert(r.o.end(), h.o.begin(), h.o.end());
    r.lse.insert(r.lse.end(), h.lse.begin(), h.lse.end());
  }
  return r;
}

template <int BM, int BN, int D, bool CAUSAL, class T>
void check(const tj::Device& dev, int B, int Hq, int group, int S, double tol) {
  CAPTURE(D);
  CAPTURE(CAUSAL);
  CAPTURE(S);
  CAPTURE(group);
  CAPTURE(testing::fresh_seed());
  const int BH = B * Hq, BHkv = B * (Hq / group);
  auto gen = [&](int n, unsigned salt) { return testing::random_tensor<T>(static_cast<std::size_t>(n), salt); };
  auto q = gen(BH * S * D, 1), k = gen(BHkv * S * D, 2), v = gen(BHkv * S * D, 3);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const Ref ref = reference(q, k, v, BH, group, S, D, CAUSAL, scale);
  std::vector<T> o(q.size());
  std::vector<float> lse(static_cast<std::size_t>(BH) * S);
  auto kern = tj::compile<examples::FlashAttnFwd<BM, BN, D, CAUSAL, T>>(dev, {.num_warps = 4});
  const tj::Grid grid{tj::cdiv(S, BM), BH};
  const float scale_log2e = static_cast<float>(scale * 1.4426950408889634);
  if (dev.backend() == tj::Backend::interpreter) {
    kern.launch(grid, q.data(), k.data(), v.data(), o.data(), lse.data(), S, group, scale_log2e);
  } else {
    auto up = [&](const std::vector<T>& h) {
      auto* p = static_cast<T*>(dev.alloc(h.size() * sizeof(T)));
      dev.copy_to_device(p, h.data(), h.size() * sizeof(T));
      return p;
    };
    T *dq = up(q), *dk = up(k), *dv = up(v), *dout = up(o);
    auto* dl = static_cast<float*>(dev.alloc(lse.size() * 4));
    dev.memset(dout, 0xff, o.size() * sizeof(T));
    kern.launch(grid, dq, dk, dv, dout, dl, S, group, scale_log2e);
    dev.copy_to_host(o.data(), dout, o.size() * sizeof(T));
    dev.copy_to_host(lse.data(), dl, lse.size() * 4);
    dev.free(dq), dev.free(dk), dev.free(dv), dev.free(dout), dev.free(dl);
  }
  std::vector<double> got(o.size());
  for (std::size_t i = 0; i < o.size(); ++i) {
    got[i] = static_cast<float>(o[i]);
    REQUIRE(!std::isnan(got[i]));
  }
  // Max error relative to the output's scale (bf16 rounds P and O at ~4e-3 each).
  double worst = 0, scale_ref = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - ref.o[i])), scale_ref = std::max(scale_ref, std::fabs(ref.o[i]));
  CHECK(worst / scale_ref < tol);
  CHECK(testing::rel_error(got, ref.o) < tol / 2);
  CHECK(testing::rel_error(lse, ref.lse) < 1e-3);
}

}  // namespace

TEST_CASE("attention_fwd_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  check<32, 32, 64, false, tj::bf16>(dev, 1, 2, 1, 80, 2e-2);   // ragged S
  check<32, 32, 96, true, tj::bf16>(dev, 1, 2, 1, 70, 2e-2);    // D = 96 exact, causal
  check<32, 32, 64, true, tj::f16>(dev, 2, 4, 2, 64, 1e-2);     // GQA: 4 query heads over 2 KV heads
}

TEST_CASE("attention_fwd_compiles_for_nvidia_targets") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  for (std::string arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwd<64, 64, 64, true, tj::bf16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwd<64, 64, 96, false, tj::bf16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwd<64, 64, 128, true, tj::f16>>(arch, {.num_warps = 4}));
  }
}

TEST_CASE("attention_fwd_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check<64, 64, 64, false, tj::bf16>(dev, 1, 4, 1, 300, 2e-2);
  check<64, 64, 96, true, tj::bf16>(dev, 1, 4, 2, 257, 2e-2);
  check<64, 64, 128, true, tj::bf16>(dev, 2, 4, 4, 256, 2e-2);
}
