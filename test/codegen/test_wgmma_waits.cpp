// When the code generator leaves a wgmma in flight (sm_90a) and when it must not:
// - an accumulator updated in place across iterations (an "async" dot) only when no other loop-carried value
//   copies the accumulator: `prev = acc` must see the value before this iteration's product;
// - nothing in flight when the program exits, even a product whose result nothing reads;
// - a zero accumulator is not written: the first wgmma has scale-d = 0 (D = A·B);
// - a block copied once per program (resident) is waited for once before a top-level loop reading it, not per
//   iteration.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using bf = tj::bf16;

namespace {

/// acc = Σ_k A_k·B_kᵀ over K in BK steps, and prev = acc before the last step (a second carry copying the first).
template <int BM, int BN, int BK>
struct CarryCopiesAcc {
  void operator()(tj::Desc<bf, BM, BK> a, tj::Desc<bf, BN, BK> b, tj::Ptr<float> c, tj::Ptr<float> c_prev, tj::Size K) const {
    auto init = std::tuple{tj::zeros<float, BM, BN>(), tj::zeros<float, BM, BN>()};
    auto [acc, prev] = tj::for_range(0, K, BK, init, [&](tj::Int k, auto acc, auto prev) {
      (void)prev;
      return std::tuple{tj::dot(a.load(0, k), tj::trans(b.load(0, k)), acc), acc};
    });
    auto offs = tj::expand_dims<1>(tj::arange<BM>()) * BN + tj::expand_dims<0>(tj::arange<BN>());
    tj::store(c + offs, acc);
    tj::store(c_prev + offs, prev);
  }
};

/// A product nobody reads (its wgmma would be left in flight), then a store.
struct UnreadDot {
  void operator()(tj::Desc<bf, 64, 64> a, tj::Desc<bf, 64, 64> b, tj::Ptr<float> out) const {
    auto unused = tj::dot(a.load(0, 0), tj::trans(b.load(0, 0)));
    (void)unused;
    tj::store(out + tj::arange<64>(), tj::zeros<float, 64>());
  }
};

/// out = Σ_j Q·K_jᵀ over key blocks j: a fresh product per iteration (zero accumulator) added to a carry; Q is copied
/// once (a resident block).
template <int BM, int BN, int D>
struct SumOfScores {
  void operator()(tj::Desc<bf, BM, D> q, tj::Desc<bf, BN, D> k, tj::Ptr<float> out, tj::Size S) const {
    auto q_tile = q.load(0, 0);
    auto acc = tj::for_range(0, S, BN, tj::zeros<float, BM, BN>(), [&](tj::Int n0, auto acc) {
      return acc + tj::dot(q_tile, tj::trans(k.load(n0, 0)));
    });
    tj::store(out + tj::expand_dims<1>(tj::arange<BM>()) * BN + tj::expand_dims<0>(tj::arange<BN>()), acc);
  }
};

tj::codegen::Generated sm90(auto kernel, int stages) {
  return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 4, .num_stages = stages});
}

}  // namespace

TEST_CASE("codegen: an accumulator another carry copies is not updated in place across iterations") {
  const auto g = sm90(CarryCopiesAcc<64, 64, 64>{}, 3);
  CHECK(testing::has_diagnostic(g, "0 wgmma left in flight across iterations"));
  testing::compiles_for_sm90a(g.source, "carry_copies_acc.cu");
  // The interpreter: prev is acc one step before the end.
  auto dev = tj::Device::interpreter();
  constexpr int K = 192;
  auto a = testing::random_tensor<bf>(64 * K, 31), b = testing::random_tensor<bf>(64 * K, 32);
  std::vector<float> c(64 * 64), c_prev(64 * 64);
  const tj::TensorDescriptor da(dev, a.data(), tj::DType::bf16, {64, K}, {K, 1}, {64, 64});
  const tj::TensorDescriptor db(dev, b.data(), tj::DType::bf16, {64, K}, {K, 1}, {64, 64});
  tj::compile<CarryCopiesAcc<64, 64, 64>>(dev, {.num_warps = 4}).launch(tj::Grid{1}, da, db, c.data(), c_prev.data(), K);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      double full = 0, before = 0;
      for (int k = 0; k < K; ++k) {
        const double p = static_cast<double>(static_cast<float>(a[i * K + k])) * static_cast<float>(b[j * K + k]);
        full += p;
        if (k < K - 64) before += p;
      }
      CHECK(std::abs(c[i * 64 + j] - full) < 1e-3 * (1 + std::abs(full)));
      CHECK(std::abs(c_prev[i * 64 + j] - before) < 1e-3 * (1 + std::abs(before)));
    }
}

TEST_CASE("codegen: no wgmma is in flight when the program exits") {
  const auto g = sm90(UnreadDot{}, 1);
  const auto commit = g.source.rfind("wgmma.commit_group");
  REQUIRE(commit != std::string::npos);
  CHECK(g.source.find("wgmma.wait_group", commit) != std::string::npos);
  testing::compiles_for_sm90a(g.source, "unread_dot.cu");
}

TEST_CASE("codegen: a zero accumulator is not written and a resident block is waited for once") {
  const auto g = sm90(SumOfScores<64, 64, 64>{}, 2);
  const std::string& src = g.source;
  std::smatch m;
  REQUIRE(std::regex_search(src, m, std::regex(R"(float v(\d+)\[32\];  // = A·B: the first wgmma has scale-d = 0)")));
  const std::string d = m[1];
  CHECK(src.find("v" + d + "[0] = ") == std::string::npos);  // no register of the product is initialised
  // The first of the four k16 steps writes ("=f") with scale-d 0; the next three accumulate ("+f") with 1.
  const std::size_t first = src.find("wgmma.mma_async", m.position(0));
  REQUIRE(first != std::string::npos);
  const std::string first_line = src.substr(first, src.find('\n', first) - first);
  CHECK(first_line.find(", 0, 1, 1, 0, 0; }") != std::string::npos);
  CHECK(first_line.find("\"=f\"(v" + d + "[0])") != std::string::npos);
  const std::size_t second = src.find("wgmma.mma_async", first + 1);
  const std::string second_line = src.substr(second, src.find('\n', second) - second);
  CHECK(second_line.find(", 1, 1, 1, 0, 0; }") != std::string::npos);
  CHECK(second_line.find("\"+f\"(v" + d + "[0])") != std::string::npos);
  // Q's barrier: one wait before the loop (and thread 0's at exit), none in the body.
  REQUIRE(std::regex_search(src, m, std::regex(R"(for \(int s\d+ = )")));
  const std::size_t loop = static_cast<std::size_t>(m.position(0));
  REQUIRE(std::regex_search(src, m, std::regex(R"(tj_mbar_wait\(tj_rbar(\d+), 0u\);  // block %\d+ has landed \(once, before loop)")));
  CHECK(static_cast<std::size_t>(m.position(0)) < loop);
  const std::string wait = "tj_mbar_wait(tj_rbar" + m[1].str() + ", 0u);";
  for (std::size_t p = src.find(wait, loop); p != std::string::npos; p = src.find(wait, p + 1))
    CHECK(src.compare(p - 17, 17, "if (tj_tid == 0) ") == 0);  // thread 0's wait before the program exits only
  testing::compiles_for_sm90a_without_spills(src, "sum_of_scores.cu");
  // The interpreter: out = Σ_j Q·K_jᵀ.
  auto dev = tj::Device::interpreter();
  constexpr int S = 192;
  auto q = testing::random_tensor<bf>(64 * 64, 41), k = testing::random_tensor<bf>(S * 64, 42);
  std::vector<float> out(64 * 64);
  const tj::TensorDescriptor dq(dev, q.data(), tj::DType::bf16, {64, 64}, {64, 1}, {64, 64});
  const tj::TensorDescriptor dk(dev, k.data(), tj::DType::bf16, {S, 64}, {64, 1}, {64, 64});
  tj::compile<SumOfScores<64, 64, 64>>(dev, {.num_warps = 4}).launch(tj::Grid{1}, dq, dk, out.data(), S);
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      double ref = 0;
      for (int b = 0; b < S; b += 64)
        for (int d = 0; d < 64; ++d) ref += static_cast<double>(static_cast<float>(q[i * 64 + d])) * static_cast<float>(k[(b + j) * 64 + d]);
      CHECK(std::abs(out[i * 64 + j] - ref) < 1e-3 * (1 + std::abs(ref)));
    }
}
