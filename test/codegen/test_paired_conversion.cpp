// Layout conversions of 16-bit tiles through shared memory move register pairs that sit at adjacent columns of one
// row as one 32-bit word (codegen.cpp, convert / paired_columns): half the st.shared / ld.shared of the element
// form. When the target layout pairs every register — an mma.sync operand — the converted tile is held packed, two
// elements per register, and the mma takes the words as they are (packed_word); the A-fragment layout is read with
// ldmatrix.x4, a 16 x 16 block per instruction (ldsm_blocks). The text, NVRTC for sm_80, and the
// generated HIP executed on the CPU (host emulator) against plain C++; the GPU runs the same conversions in the
// off-Hopper attention backward (test_attention_bwd_library.cpp), whose P and dS take this path.
#include <doctest/doctest.h>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "examples/attention/flash_bwd_tma.hpp"
#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/runners.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {

/// y = x + xᵀ for one N x N tile (row-major): xᵀ's registers come from x's layout through shared memory.
template <class T, int N>
struct PlusTranspose {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto r = tj::expand_dims<1>(tj::arange<N>());
    auto c = tj::expand_dims<0>(tj::arange<N>());
    auto t = tj::load(x + r * N + c);
    tj::store(y + r * N + c, t + tj::trans(t));
  }
};

template <class T>
void plus_transpose_matches_the_host() {
  constexpr int N = 32;
  CAPTURE(testing::fresh_seed());
  const std::vector<float> f = testing::random_floats(N * N, -8, 8, 71);
  std::vector<T> x(f.begin(), f.end());
  for (const char* arch : {"gfx1100", "gfx942"}) {
    CAPTURE(arch);
    const auto g = tj::codegen::generate(tj::trace(PlusTranspose<T, N>{}), {}, tj::codegen::target_for(arch), {.num_warps = 4});
    CHECK(testing::has_diagnostic(g, "through"));  // the case exercises a shared-memory conversion
    CHECK(g.source.find("((unsigned*)tj_smem)[") != std::string::npos);
    const std::vector<T> y = testing::OnHost{arch}.run<PlusTranspose<T, N>>(x, 4);
    if (y.empty()) {
      MESSAGE("no clang for the host emulator: skipping ", arch);
      continue;
    }
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j) {
        // The kernel adds in f32 and rounds once to T, as here.
        const float want = static_cast<float>(T(static_cast<float>(x[i * N + j]) + static_cast<float>(x[j * N + i])));
        REQUIRE(static_cast<float>(y[static_cast<std::size_t>(i * N + j)]) == want);
      }
  }
}

/// y = x[p] + x[pᵀ] through a tile of pointers p to 16-bit elements, pᵀ converted through shared memory: the
/// conversion moves pointers, not 16-bit values (it once wrapped them in tj_f32_to_bf16, which did not compile).
template <class T, int N>
struct PointerTranspose {
  void operator()(tj::Ptr<T> x, tj::Ptr<T> y) const {
    auto r = tj::expand_dims<1>(tj::arange<N>());
    auto c = tj::expand_dims<0>(tj::arange<N>());
    auto p = x + r * N + c;
    tj::store(y + r * N + c, tj::load(p) + tj::load(tj::trans(p)));
  }
};

}  // namespace

TEST_CASE("codegen: a tile of pointers to 16-bit elements converts as pointers") {
  constexpr int N = 32;
  using K = PointerTranspose<tj::bf16, N>;
  const auto g = tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  CHECK(testing::has_diagnostic(g, "through"));
  CHECK(g.source.find("((tj_bf16**)tj_smem)[") != std::string::npos);  // pointers stored as pointers
  CHECK_FALSE(std::regex_search(g.source, std::regex(R"(\(\(tj_bf16\*\*\)tj_smem\)\[[^\n]*tj_(f32_to_bf16|bf16_to_f32))")));
  if (const auto r = testing::compile_for(g.source, "sm_80", "pointer_transpose.cu")) CHECK(!r->binary.bytes.empty());
  CAPTURE(testing::fresh_seed());
  const std::vector<float> f = testing::random_floats(N * N, -8, 8, 72);
  const std::vector<tj::bf16> x(f.begin(), f.end());
  const std::vector<tj::bf16> y = testing::OnHost{"gfx1100"}.run<K>(x, 4);
  if (y.empty()) return;  // no clang for the host emulator
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      REQUIRE(static_cast<float>(y[static_cast<std::size_t>(i * N + j)]) ==
              static_cast<float>(tj::bf16(static_cast<float>(x[i * N + j]) + static_cast<float>(x[j * N + i]))));
}

TEST_CASE("codegen: a 16-bit conversion stores register pairs at adjacent columns as 32-bit words") {
  const auto g = tj::codegen::generate(tj::trace(PlusTranspose<tj::bf16, 32>{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
  const std::size_t at = g.source.find("through shared memory");
  REQUIRE(at != std::string::npos);
  const std::string conv = g.source.substr(at, g.source.find("__syncthreads();", at) - at);
  // A word of two elements: a bf16 tile's f32 registers hold bf16 values exactly, so their high halves are the pair.
  CHECK(conv.find("= (tj_as_u32(") != std::string::npos);
  CHECK(conv.find("((tj_bf16*)tj_smem)[") == std::string::npos);  // and no element stored alone
  if (const auto r = testing::compile_for(g.source, "sm_80", "plus_transpose.cu")) CHECK(!r->binary.bytes.empty());  // (a compile error throws)
}

TEST_CASE("codegen: 16-bit conversions through words run right on the host emulator (bf16, f16)") {
  plus_transpose_matches_the_host<tj::bf16>();
  plus_transpose_matches_the_host<tj::f16>();
}

TEST_CASE("codegen: an mma.sync operand converted through shared memory is held packed and read as words") {
  // dK/dV of the attention backward on sm_80, 64 x 64 on 2 x 2 warps: P and dS leave the accumulator layout for
  // operand A of Pᵀ·dO and dSᵀ·Q (a warp holds half of a row block's K there).
  using K = examples::FlashBwdKVTma<64, 64, 64, false, tj::bf16>;
  const auto g = tj::codegen::generate(tj::trace(K{}), {}, tj::codegen::target_for("sm_80"), {.num_warps = 4, .num_stages = 2});
  CHECK(testing::has_diagnostic(g, "32-bit words"));
  const std::size_t decl = g.source.find("];  // packed: element 2i in the low half of word i");
  REQUIRE(decl != std::string::npos);
  const std::size_t name_at = g.source.rfind("unsigned x", decl);
  REQUIRE(name_at != std::string::npos);
  const std::string name = g.source.substr(name_at + 9, g.source.find('[', name_at) - name_at - 9);
  CAPTURE(name);
  // Filled by ldmatrix, one .x4 per 16 x 16 block of the A fragments, from rows of 64 + 8 elements (144 bytes: whole
  // 16-byte chunks for ldmatrix, an odd count of them for the banks).
  CHECK(g.source.find("tj_ldsm_x4(tj_la" + name + " + 0u, " + name + "[0], " + name + "[1], " + name + "[2], " + name + "[3]);") !=
        std::string::npos);
  CHECK(g.source.find(") * 72 + ") != std::string::npos);
  // The mma's A registers are the words themselves, not repacked from f32 halves.
  CHECK(g.source.find("= {" + name + "[0], " + name + "[1], " + name + "[2], " + name + "[3]}") != std::string::npos);
  CHECK(g.source.find("tj_bf16x2_lo(" + name + "[") == std::string::npos);
  if (const auto r = testing::compile_for(g.source, "sm_80", "bwd_kv.cu")) CHECK(!r->binary.bytes.empty());  // (a compile error throws)
}
