// TMA-fed wgmma operands whose rows are not a whole number of 128-byte slabs (an i8 / f8 K step of 64 or 32, a
// bf16 K step of 32 or 96). They used to be copied in 128-byte boxes — twice or four times what a block uses, a
// third more at 192-byte rows — and reported as such. Now their slabs are as wide as the rows allow (64 or 32 bytes,
// with the matching TMA swizzle and wgmma descriptor layout): each stage copies exactly its blocks, and the
// diagnostic says how they are held. Rows that are no multiple of 32 bytes (a 72-wide MN-major bf16 block) keep
// 128-byte slabs and the old report (test_sm90_codegen_edges.cpp).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using testing::occurrences;

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

/// Call sites of the narrow-slab wgmma descriptors (the prelude's definitions, "_sw(unsigned", not counted).
std::size_t sw_calls(const std::string& src) {
  return occurrences(src, "tj_wgmma_desc_sw(") + occurrences(src, "tj_wgmma_desc_mn_sw(") - occurrences(src, "_sw(unsigned");
}

template <class T, int BK>
void check_narrow(const char* name, int row_bytes, int slab_bytes) {
  CAPTURE(name);
  const auto g = sm90<NarrowRows<T, BK>>();
  // The TMA pipeline is taken: both operands through TMA, boxes of 64 rows x one slab.
  REQUIRE(g.tma_params == std::vector<int>{0, 1});
  const int box_elems = slab_bytes / static_cast<int>(sizeof(T)), slabs = row_bytes / slab_bytes;
  CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, box_elems}, {64, box_elems}});
  // Each stage: exactly the two blocks' bytes.
  const auto tx = expect_tx(g.source);
  REQUIRE_FALSE(tx.empty());
  for (int n : tx) CHECK(n == 2 * 64 * row_bytes);
  CHECK(occurrences(g.source, "tj_tma_load_2d(") == static_cast<std::size_t>(2 * slabs + 1));  // + the prelude's definition
  // A and B: one descriptor each at the block's start; every later 32-byte k step adds its offset to it.
  CHECK(sw_calls(g.source) == 2u);
  CHECK(occurrences(g.source, "tj_wgmma_desc_at(tj_d") == static_cast<std::size_t>(2 * (row_bytes / 32 - 1)));
  // Reported, once per parameter.
  for (int p : {0, 1}) {
    CAPTURE(p);
    CHECK(testing::has_diagnostic(g, fmt::format("descriptor parameter {}: its [64, {}] blocks have {}-byte rows, held exactly as {} "
                                                 "slab(s) of {} bytes with the {}B swizzle", p, BK, row_bytes, slabs, slab_bytes, slab_bytes)));
    for (const auto& d : g.diagnostics) CHECK(d.find("TMA box(es)") == std::string::npos);
  }
  testing::compiles_for_sm90a(g.source, std::string(name) + ".cu");
}

}  // namespace

TEST_CASE("narrow_tma_rows_copy_exactly_their_block_in_64_and_32_byte_slabs") {
  check_narrow<std::int8_t, 64>("narrow_i8_k64", 64, 64);
  check_narrow<tj::bf16, 32>("narrow_bf16_k32", 64, 64);
  check_narrow<tj::f8e4m3, 32>("narrow_e4m3_k32", 32, 32);
  check_narrow<tj::bf16, 96>("narrow_bf16_k96", 192, 64);  // 1.5 x 128 bytes: three 64-byte slabs
  check_narrow<tj::bf16, 48>("narrow_bf16_k48", 96, 32);   // three 32-byte slabs
}

TEST_CASE("narrow_tma_rows_128_byte_rows_keep_128_byte_slabs_and_report_nothing") {
  const std::pair<tj::codegen::Generated, int> cases[] = {
      {sm90<NarrowRows<std::int8_t, 128>>(), 128}, {sm90<NarrowRows<tj::bf16, 64>>(), 64}, {sm90<NarrowRows<float, 32>>(), 32}};
  for (const auto& [g, box_elems] : cases) {
    REQUIRE(g.tma_params == std::vector<int>{0, 1});
    const auto tx = expect_tx(g.source);
    REQUIRE_FALSE(tx.empty());
    for (int n : tx) CHECK(n == 2 * 64 * 128);  // the blocks' own bytes
    CHECK(g.tma_boxes == std::vector<std::array<int, 2>>{{64, box_elems}, {64, box_elems}});
    CHECK(sw_calls(g.source) == 0u);  // 128B descriptors only
    for (const auto& d : g.diagnostics) CHECK(d.find("TMA box(es)") == std::string::npos);
    for (const auto& d : g.diagnostics) CHECK(d.find("held exactly") == std::string::npos);
  }
}

// The code generator's other targets keep 128-byte slabs: the cp.async ring (sm_80) has no swizzle choice to make.
TEST_CASE("narrow_tma_rows_cp_async_ring_keeps_128_byte_slabs") {
  const auto g = tj::codegen::generate(tj::trace(NarrowRows<tj::bf16, 96>{}), {}, tj::codegen::target_for("sm_80"),
                                       {.num_warps = 4, .num_stages = 2});
  CHECK(g.tma_boxes.empty());
  CHECK(sw_calls(g.source) == 0u);
  for (const auto& d : g.diagnostics) CHECK(d.find("held exactly") == std::string::npos);
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
