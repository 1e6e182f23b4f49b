// 16-bit integers and integer casts in vector stores: a thread packs two 16-bit elements into each 32-bit word of
// a vector store (a masked global store, or a TMA store's shared staging). A signed 16-bit register converted to
// unsigned is sign-extended: a negative low element must be cut to its 16 bits before the high one is or-ed in,
// else it overwrites its neighbour with ones. A TMA store of cast<int>(x) of a float x must stage the cast, not x
// (the float converted to unsigned: 0 for every negative x). The sm_90a text, NVRTC, and the GPU against the host.
// Also boxes starting mid 16-byte chunk: the H200 faults on such a TMA store (CUDA_ERROR_ILLEGAL_INSTRUCTION), so a
// store whose column is not provably a multiple of 16 bytes stays masked; the interpreter and the GPU write exactly
// the boxes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "test/common/codegen.hpp"
#include "test/common/gemm_problem.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

/// y[64 pid + i, j] = x[64 pid + i, j] (i16, ld columns): a vectorised masked-free global store.
struct CopyI16 {
  void operator()(tj::Ptr<std::int16_t> x, tj::Ptr<std::int16_t> y, tj::Size ld) const {
    auto r = tj::program_id(0) * 64 + tj::expand_dims<1>(tj::arange<64>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    tj::store(y + r * ld + c, tj::load(x + r * ld + c));
  }
};

/// The same copy stored through a descriptor (a TMA store with tma_store on sm_90a).
struct CopyI16Desc {
  void operator()(tj::Ptr<std::int16_t> x, tj::Desc<std::int16_t, 64, 64> out, tj::Size ld) const {
    auto r = tj::program_id(0) * 64 + tj::expand_dims<1>(tj::arange<64>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    out.store(tj::program_id(0) * 64, 0, tj::load(x + r * ld + c));
  }
};

/// out block = cast<i32>(x block) of f32 x (truncation toward zero), stored through a descriptor.
struct CastI32Desc {
  void operator()(tj::Ptr<float> x, tj::Desc<std::int32_t, 64, 64> out, tj::Size ld) const {
    auto r = tj::program_id(0) * 64 + tj::expand_dims<1>(tj::arange<64>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    out.store(tj::program_id(0) * 64, 0, tj::cast<std::int32_t>(tj::load(x + r * ld + c)));
  }
};

/// out block (64 pid0, 128 pid1 + shift) = bf16(x[64 pid0 + i, j]): boxes starting `shift` columns into a 16-byte chunk.
struct StoreShifted {
  void operator()(tj::Ptr<float> x, tj::Desc<tj::bf16, 64, 64> out, tj::Size shift) const {
    auto r = tj::program_id(0) * 64 + tj::expand_dims<1>(tj::arange<64>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    out.store(tj::program_id(0) * 64, tj::program_id(1) * 128 + shift, tj::cast<tj::bf16>(tj::load(x + r * 64 + c)));
  }
};

/// StoreShifted on `dev` (TMA stores on sm_90a) into C [128, 264] bf16 inside a [130, 288] buffer poisoned with NaN, for
/// shifts of 4 and 3 columns (8 and 6 bytes into a chunk): exactly the boxes' in-bounds elements written.
void run_shifted(const tj::Device& dev) {
  const int M = 128, N = 264, ld = 288, rows = 130;
  const auto x = testing::random_floats(static_cast<std::size_t>(M) * 64, -1.f, 1.f, 95);
  auto k = tj::compile<StoreShifted>(dev, {.num_warps = 4, .tma_store = true});
  for (int shift : {4, 3}) {
    CAPTURE(shift);
    std::vector<tj::bf16> c(static_cast<std::size_t>(rows) * ld, tj::bf16(std::nanf("")));
    auto xs = x;
    float* dx = testing::on_device(dev, xs);
    tj::bf16* dc = testing::on_device(dev, c);
    D od(dev, dc, tj::DType::bf16, {M, N}, {ld, 1}, {64, 64});
    k.launch(tj::Grid{2, 3}, dx, od, shift);
    if (dev.backend() != tj::Backend::interpreter) {
      dev.copy_to_host(c.data(), dc, c.size() * sizeof(tj::bf16));
      dev.free(dx), dev.free(dc);
    }
    int wrong = 0, outside = 0;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < ld; ++j) {
        const float got = static_cast<float>(c[static_cast<std::size_t>(i) * ld + j]);
        const int jj = (j - shift) % 128;
        if (i < M && j < N && j >= shift && jj < 64)
          wrong += got != static_cast<float>(tj::bf16(x[static_cast<std::size_t>(i) * 64 + jj]));
        else
          outside += !std::isnan(got);
      }
    CHECK(wrong == 0);
    CHECK(outside == 0);
  }
}

template <class K>
tj::codegen::Generated sm90(K kernel, bool tma_store) {
  const tj::ir::Kernel k = tj::trace(kernel);
  return tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), {.num_warps = 4, .tma_store = tma_store});
}

/// The packed words of the vector stores in `src` (lines `tN_R.w[W] = ...;`).
std::vector<std::string> packed_words(const std::string& src) {
  std::vector<std::string> out;
  const std::regex word(R"(t\d+_\d+\.w\[\d\] = [^;]*;)");
  for (auto it = std::sregex_iterator(src.begin(), src.end(), word); it != std::sregex_iterator(); ++it) out.push_back(it->str());
  return out;
}

}  // namespace

TEST_CASE("store_packing_16_bit_integers_cut_the_low_half_to_16_bits") {
  for (bool desc : {false, true}) {
    CAPTURE(desc);
    const auto g = desc ? sm90(CopyI16Desc{}, true) : sm90(CopyI16{}, false);
    if (desc) REQUIRE(testing::has_diagnostic(g, "stored by TMA"));
    const auto words = packed_words(g.source);
    REQUIRE(!words.empty());
    for (const std::string& w : words) {
      CAPTURE(w);
      CHECK(w.find(" << 16)") != std::string::npos);
      CHECK(w.find("& 0xFFFFu") != std::string::npos);  // the low element without its sign extension
    }
    testing::compiles_for_sm90a(g.source, desc ? "store_packing_i16_tma.cu" : "store_packing_i16.cu");
  }
}

TEST_CASE("store_packing_tma_store_of_an_integer_cast_stages_the_cast") {
  const auto g = sm90(CastI32Desc{}, true);
  REQUIRE(testing::has_diagnostic(g, "stored by TMA"));
  const auto words = packed_words(g.source);
  REQUIRE(!words.empty());
  // Every staged register is one the cast computed ((int)(x)), not the float it read.
  for (const std::string& w : words) {
    CAPTURE(w);
    std::smatch m;
    REQUIRE(std::regex_search(w, m, std::regex(R"(\(unsigned\)\((v\d+)\[(\d+)\]\))")));
    CHECK(g.source.find(m[1].str() + "[" + m[2].str() + "] = (int)(") != std::string::npos);
  }
  testing::compiles_for_sm90a(g.source, "store_packing_cast_i32_tma.cu");
}

TEST_CASE("store_packing_gpu_16_bit_integers_and_integer_casts") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  const int M = 192, N = 64;  // three programs
  const auto f = testing::random_floats(static_cast<std::size_t>(M) * N, -30000.f, 30000.f, 91);
  std::vector<std::int16_t> x(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) x[i] = static_cast<std::int16_t>(f[i]);  // about half negative
  std::vector<float> xf = testing::random_floats(static_cast<std::size_t>(M) * N, -50.f, 50.f, 93);
  for (int variant = 0; variant < 3; ++variant) {
    CAPTURE(variant);
    std::vector<std::int16_t> y16(x.size(), 0x5555);
    std::vector<std::int32_t> y32(x.size(), 0x55555555);
    auto* dx = testing::on_device(dev, x);
    auto* dxf = testing::on_device(dev, xf);
    auto* d16 = testing::on_device(dev, y16);
    auto* d32 = testing::on_device(dev, y32);
    if (variant == 0) {
      tj::compile<CopyI16>(dev, {.num_warps = 4}).launch(tj::Grid{M / 64}, dx, d16, N);
    } else if (variant == 1) {
      D od(dev, d16, tj::DType::i16, {M, N}, {N, 1}, {64, 64});
      tj::compile<CopyI16Desc>(dev, {.num_warps = 4, .tma_store = true}).launch(tj::Grid{M / 64}, dx, od, N);
    } else {
      D od(dev, d32, tj::DType::i32, {M, N}, {N, 1}, {64, 32});
      tj::compile<CastI32Desc>(dev, {.num_warps = 4, .tma_store = true}).launch(tj::Grid{M / 64}, dxf, od, N);
    }
    dev.copy_to_host(y16.data(), d16, y16.size() * sizeof(std::int16_t));
    dev.copy_to_host(y32.data(), d32, y32.size() * sizeof(std::int32_t));
    dev.free(dx), dev.free(dxf), dev.free(d16), dev.free(d32);
    int wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      wrong += variant < 2 ? y16[i] != x[i] : y32[i] != static_cast<std::int32_t>(std::trunc(xf[i]));
    CHECK(wrong == 0);
  }
}

TEST_CASE("store_packing_tma_store_boxes_mid_chunk_interpreter") {
  run_shifted(tj::Device::interpreter());
  const tj::ir::Kernel k = tj::trace(StoreShifted{});
  const auto g = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), {.num_warps = 4, .tma_store = true});
  CHECK(testing::has_diagnostic(g, "stored by TMA"));  // shift known to be a multiple of 16
  testing::compiles_for_sm90a(g.source, "store_packing_shifted.cu");
  // A box starting mid 16-byte chunk faults on the H200 (CUDA_ERROR_ILLEGAL_INSTRUCTION): with `shift` not known to be a
  // multiple of 8 bf16 (the launches above pass 4 and 3) the store stays masked.
  tj::ir::Specialization odd = testing::all_div16(k);
  odd.flags[2] = 0;
  const auto m = tj::codegen::generate(k, odd, tj::codegen::target_for("sm_90a"), {.num_warps = 4, .tma_store = true});
  CHECK(m.source.find("tj_tma_store_2d(&s") == std::string::npos);
  CHECK(testing::has_diagnostic(m, "a TMA store box must start on a 16-byte chunk"));
}

TEST_CASE("store_packing_gpu_tma_store_boxes_mid_chunk") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 90) {
    MESSAGE("no Hopper GPU: skipping");
    return;
  }
  run_shifted(dev);
}
