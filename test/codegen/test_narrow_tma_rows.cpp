// TMA-fed wgmma operands whose rows are narrower than 128 bytes (an i8 / f8 K step of 64, a bf16 K step of 32).
// They are legal (K · size a multiple of 32 bytes) and compile to the TMA pipeline, but the box is one 128-byte
// swizzle span wide, so each stage copies twice what the block uses (expect_tx 16384 for two 4 KiB blocks). That
// used to be silent (and the docs claimed K = 128 for i8 / f8, K a multiple of 64 for bf16): the generated kernel
// now reports it in its diagnostics, and 128-byte rows, which copy exactly their block, report nothing.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

/// C[64, 64] = Σ_k A[0:64, k:k+BK] · B[0:64, k:k+BK]ᵀ in K steps of BK.
template <class T, int BK>
struct NarrowRows {
  using Acc = tj::lang::dot_acc_t<T>;
  void operator()(tj::Desc<T, 64, BK> a, tj::Desc<T, 64, BK> b, tj::Ptr<Acc> c, tj::Size K) const {
    auto acc = tj::for_range(0, K, BK, tj::zeros<Acc, 64, 64>(),
                             [&](tj::Int k0, auto acc) { return tj::dot(a.load(0, k0), tj::trans(b.load(0, k0)), acc); });
    tj::store(c + tj::expand_dims<1>(tj::arange<64>()) * 64 + tj::expand_dims<0>(tj::arange<64>()), acc);
  }
};

template <class K>
tj::codegen::Generated sm90(int stages = 2) {
  return tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for("sm_90a"), {.num_warps = 4, .num_stages = stages});
}

/// Every `tj_mbar_expect_tx(<bar>, <n>u)` byte count in `src`.
std::vector<int> expect_tx(const std::string& src) {
  std::vector<int> out;
  const std::regex re(R"(tj_mbar_expect_tx\([^,;]+, (\d+)u\))");
  for (auto it = std::sregex_iterator(src.begin(), src.end(), re); it != std::sregex_iterator(); ++it) out.push_back(std::stoi((*it)[1]));
  return out;
}

template <class T, int BK>
void check_narrow(const char* name, int row_bytes) {
  CAPTURE(name);
  const auto g = sm90<NarrowRows<T, BK>>();
  // The TMA pipeline is taken: both operands through TMA, boxes of 64 rows x 128 bytes.
  REQUIRE(g.tma_params == std::vector<int>{0, 1});
  const int box_elems = 128 / static_cast<int>(sizeof(T));
  CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, box_elems}, {64, box_elems}});
  // Each stage: two blocks of 64 rows x 128 bytes = 16384 bytes, for 2 x 64 x row_bytes used.
  const auto tx = expect_tx(g.source);
  REQUIRE_FALSE(tx.empty());
  for (int n : tx) CHECK(n == 2 * 64 * 128);
  CHECK(g.source.find("wgmma.mma_async") != std::string::npos);
  // Reported, once per parameter, with the ratio.
  for (int p : {0, 1}) {
    CAPTURE(p);
    CHECK(testing::has_diagnostic(g, "descriptor parameter " + std::to_string(p) + ": its [64, " + std::to_string(BK) + "] blocks have " +
                                         std::to_string(row_bytes) + "-byte rows, copied as 1 TMA box(es) " + std::to_string(box_elems) +
                                         " elements (128 bytes) wide: each copy moves 8192 bytes into shared memory for a block of " +
                                         std::to_string(64 * row_bytes) + " (" + (row_bytes == 64 ? "2.00x" : "4.00x")));
  }
  testing::compiles_for_sm90a(g.source, std::string(name) + ".cu");
}

}  // namespace

TEST_CASE("narrow_tma_rows_i8_k64_and_bf16_k32_copy_128_byte_boxes_and_say_so") {
  check_narrow<std::int8_t, 64>("narrow_i8_k64", 64);
  check_narrow<tj::bf16, 32>("narrow_bf16_k32", 64);
  check_narrow<tj::f8e4m3, 32>("narrow_e4m3_k32", 32);  // 32-byte rows: 4x
}

TEST_CASE("narrow_tma_rows_128_byte_rows_copy_exactly_their_block_and_report_nothing") {
  for (const auto& g : {sm90<NarrowRows<std::int8_t, 128>>(), sm90<NarrowRows<tj::bf16, 64>>(), sm90<NarrowRows<float, 32>>()}) {
    REQUIRE(g.tma_params == std::vector<int>{0, 1});
    const auto tx = expect_tx(g.source);
    REQUIRE_FALSE(tx.empty());
    for (int n : tx) CHECK(n == 2 * 64 * 128);  // the blocks' own bytes
    for (const auto& d : g.diagnostics) CHECK(d.find("TMA box(es)") == std::string::npos);
  }
  // Two slabs, the second half used (bf16 K = 96: 192-byte rows): 256 bytes copied per row, reported.
  const auto g = sm90<NarrowRows<tj::bf16, 96>>();
  CHECK(testing::has_diagnostic(g, "its [64, 96] blocks have 192-byte rows, copied as 2 TMA box(es) 64 elements (128 bytes) wide: "
                                   "each copy moves 16384 bytes into shared memory for a block of 12288 (1.33x"));
  testing::compiles_for_sm90a(g.source, "narrow_bf16_k96.cu");
}

// The interpreter runs the same narrow kernel exactly (i8 -> i32).
TEST_CASE("narrow_tma_rows_i8_k64_interpreter_is_exact") {
  const auto dev = tj::Device::interpreter();
  constexpr int K = 192;
  std::vector<std::int8_t> a(64 * K), b(64 * K);
  auto ra = testing::random_floats(a.size(), -100, 100, 11), rb = testing::random_floats(b.size(), -100, 100, 12);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::int8_t>(ra[i]), b[i] = static_cast<std::int8_t>(rb[i]);
  std::vector<std::int32_t> c(64 * 64, -1);
  tj::TensorDescriptor da(dev, a.data(), tj::DType::i8, {64, K}, {K, 1}, {64, 64});
  tj::TensorDescriptor db(dev, b.data(), tj::DType::i8, {64, K}, {K, 1}, {64, 64});
  auto k = tj::compile<NarrowRows<std::int8_t, 64>>(dev, {.num_warps = 4, .num_stages = 2});
  k.launch(tj::Grid{1}, da, db, c.data(), K);
  int bad = 0;
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) {
      std::int32_t s = 0;
      for (int kk = 0; kk < K; ++kk) s += a[static_cast<std::size_t>(i * K + kk)] * b[static_cast<std::size_t>(j * K + kk)];
      bad += c[static_cast<std::size_t>(i * 64 + j)] != s;
    }
  CHECK(bad == 0);
}
