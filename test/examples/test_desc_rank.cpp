// Kernel-side tensor descriptors of rank 3..5 (lang/descriptor.hpp, ir desc_view): a block is a 2-D tile of one
// row dim and the last dim, read at one coordinate per dim with bounds per dim. Checked in the interpreter against a
// per-element reference (loads with zero and NaN fill, stores dropping what is out of bounds, outer coordinates
// below 0 and past the shape), through the batched GEMM example (rank 3) against f64 with C's padding poisoned,
// in the generated text for sm_90a (TMA 3-D / 4-D boxes, the TMA store, warp specialisation), sm_80 (the cp.async
// ring reading the 2-D slice) and gfx942 (masked loads), compiled by NVRTC and hiprtc; on a GPU, the same kernels
// on each path.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "examples/gemm/matmul_batched.hpp"
#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "tilejit/ir/lower_descriptors.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;

namespace {

/// Program (x, y): the [8, 16] block of `in` ([B, S, C]) at (y - 1, 8x - 5, 0) written whole into out[y][x] ([8, 16]
/// per program, no mask): batch coordinates -1 and B are out of bounds, and so are the rows below 0 and past S.
struct Gather3 {
  void operator()(tj::Desc<float, 1, 8, 16> in, tj::Ptr<float> out) const {
    auto t = in.load(tj::program_id(1) - 1, tj::program_id(0) * 8 - 5, 0);
    auto base = (tj::program_id(1) * tj::num_programs(0) + tj::program_id(0)) * 128;
    auto r = tj::expand_dims<1>(tj::arange<8>());
    auto c = tj::expand_dims<0>(tj::arange<16>());
    tj::store(out + base + r * 16 + c, t);
  }
};

/// [B, S, H, Dh] (FlashAttention's BSHD) with [1, 16, 1, 8] blocks: program (x, y) reads the block at (y / 4,
/// 16x - 3, y % 4 - 1, 0) and stores 2t + 1 at the same place of `out`: heads -1 and H (y % 4 = 3 with H = 2) are
/// out of bounds, as are rows below 0 and past S.
struct Bshd4 {
  void operator()(tj::Desc<float, 1, 16, 1, 8> in, tj::Desc<float, 1, 16, 1, 8> out) const {
    auto s0 = tj::program_id(0) * 16 - 3;
    auto b = tj::program_id(1) / 4, h = tj::program_id(1) % 4 - 1;
    auto t = in.load(b, s0, h, 0);
    out.store(b, s0, h, 0, t * 2.0f + 1.0f);
  }
};

/// Rank 5, no outer dim above 1 (rows along dim 3), and rank 3 with the rows along dim 0 (not next to the columns):
/// out block = in block + 1 at coordinates from the program ids.
struct Rank5 {
  void operator()(tj::Desc<float, 1, 1, 1, 8, 16> in, tj::Desc<float, 1, 1, 1, 8, 16> out) const {
    auto p = tj::program_id(1);
    auto i0 = tj::program_id(0) * 8;
    out.store(p / 6, p / 2 % 3, p % 2, i0, 0, in.load(p / 6, p / 2 % 3, p % 2, i0, 0) + 1.0f);
  }
};
struct RowsOuter {
  void operator()(tj::Desc<float, 4, 1, 16> in, tj::Desc<float, 4, 1, 16> out) const {
    auto i0 = tj::program_id(0) * 4;
    auto j = tj::program_id(1);
    out.store(i0, j, 0, in.load(i0, j, 0) + 1.0f);
  }
  // (shape(d) of a dim the descriptor does not have is refused while tracing: see the rules test)
};

struct BadShape {
  void operator()(tj::Desc<float, 1, 8, 16> in, tj::Ptr<float> out) const {
    tj::store(out + tj::arange<4>(), tj::zeros<float, 4>() + tj::cast<float>(in.shape(3)));
  }
};
struct Shapes {  // every dim's extent and stride, read in the kernel
  void operator()(tj::Desc<float, 1, 8, 16> in, tj::Ptr<int> out) const {
    tj::store(out + 0, in.shape(0));
    tj::store(out + 1, in.shape(1));
    tj::store(out + 2, in.shape(2));
    tj::store(out + 3, in.stride(0));
    tj::store(out + 4, in.stride(1));
    tj::store(out + 5, in.stride(2));
  }
};

/// Q [B, S, H, 64] times K [B, S, H, 64]ᵀ per (batch, head), one [64, 64] score tile per program, through rank-4
/// descriptors with [1, 64, 1, 64] blocks (TMA 4-D boxes on sm_90a), K walked in a loop of 64-key steps that sums
/// the score tiles (so the blocks sit in a pipelined loop): out[b, h] = Σ_j Q_blk · K_blk(j)ᵀ.
struct ScoresBshd {
  void operator()(tj::Desc<tj::bf16, 1, 64, 1, 64> q, tj::Desc<tj::bf16, 1, 64, 1, 64> k, tj::Ptr<float> out, tj::Size S,
                  tj::Size H) const {
    auto b = tj::program_id(1) / H, h = tj::program_id(1) % H;
    auto m0 = tj::program_id(0) * 64;
    auto acc = tj::for_range(0, S, 64, tj::zeros<float, 64, 64>(), [&](tj::Int n0, auto acc) {
      return tj::dot(q.load(b, m0, h, 0), tj::trans(k.load(b, n0, h, 0)), acc);
    });
    auto r = tj::expand_dims<1>(tj::arange<64>());
    auto c = tj::expand_dims<0>(tj::arange<64>());
    tj::store(out + (tj::program_id(1) * tj::num_programs(0) + tj::program_id(0)) * 4096 + r * 64 + c, acc);
  }
};

/// Rank 1: program p reads the [96] block of `x` at element 96p - 7 (the first program's first 7 lanes below 0, the
/// last ones past n) into out[96p ..] whole, and stores 2t + 1 at the same place of `y` (out-of-bounds lanes dropped).
struct Vec96 {
  void operator()(tj::Desc<float, 96> x, tj::Desc<float, 96> y, tj::Ptr<float> out) const {
    auto i0 = tj::program_id(0) * 96 - 7;
    auto t = x.load(i0);
    tj::store(out + tj::program_id(0) * 96 + tj::arange<96>(), t);
    y.store(i0, t * 2.0f + 1.0f);
  }
};
/// Rank 1 of i32 (zero fill), blocks of 64 at 64p + 5, and the descriptor's extent and stride read in the kernel.
struct VecI32 {
  void operator()(tj::Desc<std::int32_t, 64> x, tj::Ptr<std::int32_t> out) const {
    tj::store(out + tj::program_id(0) * 64 + tj::arange<64>(), x.load(tj::program_id(0) * 64 + 5) + x.shape(0) * 1000 + x.stride(0));
  }
};

int count_op(const tj::ir::Kernel& k, tj::ir::Op op) {
  int n = 0;
  for (const auto& node : k.nodes) n += node.op == op;
  return n;
}

/// Device buffer mirror: the host vector, and where the kernel sees it.
template <class T>
struct Buf {
  const tj::Device& dev;
  std::vector<T>& host;
  T* at = nullptr;
  Buf(const tj::Device& d, std::vector<T>& h) : dev(d), host(h), at(h.data()) {
    if (dev.backend() == tj::Backend::interpreter) return;
    at = static_cast<T*>(dev.alloc(h.size() * sizeof(T)));
    dev.copy_to_device(at, h.data(), h.size() * sizeof(T));
  }
  void back() {
    if (dev.backend() != tj::Backend::interpreter) dev.copy_to_host(host.data(), at, host.size() * sizeof(T));
  }
  ~Buf() {
    if (dev.backend() != tj::Backend::interpreter) dev.free(at);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
};

void run_gather3(const tj::Device& dev, bool nan_fill, const std::string& arch = {}) {
  CAPTURE(nan_fill);
  CAPTURE(testing::fresh_seed());
  const int B = 3, S = 21, C = 16, ld = 24;  // [B, S, C] inside rows of 24
  std::vector<float> x = testing::random_floats(static_cast<std::size_t>(B) * S * ld, -2, 2, 3);
  std::vector<float> y(static_cast<std::size_t>(B + 2) * 4 * 128, -9.0f);
  Buf<float> bx(dev, x), by(dev, y);
  const D in(dev, bx.at, tj::DType::f32, {B, S, C}, {S * ld, ld, 1}, {1, 8, 16},
             {.oob_fill = nan_fill ? D::OobFill::nan : D::OobFill::zero});
  auto k = tj::compile<Gather3>(dev, {.num_warps = 4, .arch = arch});
  k.launch(tj::Grid{4, B + 2}, in, by.at);
  by.back();
  const float fill = nan_fill ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
  int wrong = 0;
  for (int py = 0; py < B + 2; ++py)
    for (int px = 0; px < 4; ++px)
      for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 16; ++c) {
          const int b = py - 1, s = px * 8 - 5 + r;
          const bool in_b = b >= 0 && b < B && s >= 0 && s < S;
          const float want = in_b ? x[(static_cast<std::size_t>(b) * S + s) * ld + c] : fill;
          const float got = y[((static_cast<std::size_t>(py) * 4 + px) * 8 + r) * 16 + c];
          wrong += !(got == want || (std::isnan(got) && std::isnan(want)));
        }
  CHECK(wrong == 0);
}

void run_rank1(const tj::Device& dev, bool nan_fill, const std::string& arch = {}) {
  CAPTURE(nan_fill);
  CAPTURE(testing::fresh_seed());
  const int n = 250, guard = 40, programs = 4;  // 4 x 96 = 384 lanes over 250 elements, from -7
  std::vector<float> x = testing::random_floats(n + guard, -2, 2, 11);
  std::vector<float> y(n + guard, -9.0f), out(programs * 96, -5.0f);
  const std::vector<float> x0 = x;
  Buf<float> bx(dev, x), by(dev, y), bo(dev, out);
  const D dx(dev, bx.at, tj::DType::f32, {n}, {1}, {96}, {.oob_fill = nan_fill ? D::OobFill::nan : D::OobFill::zero});
  const D dy(dev, by.at, tj::DType::f32, {n}, {1}, {96});
  auto k = tj::compile<Vec96>(dev, {.num_warps = 4, .arch = arch});
  k.launch(tj::Grid{programs}, dx, dy, bo.at);
  by.back();
  bo.back();
  const float fill = nan_fill ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
  int wrong_load = 0, wrong_store = 0;
  for (int p = 0; p < programs; ++p)
    for (int j = 0; j < 96; ++j) {
      const int i = p * 96 - 7 + j;
      const float want = i >= 0 && i < n ? x0[static_cast<std::size_t>(i)] : fill;
      const float got = out[static_cast<std::size_t>(p * 96 + j)];
      wrong_load += !(got == want || (std::isnan(got) && std::isnan(want)));
    }
  for (int i = 0; i < n + guard; ++i)  // every element in bounds written once; the guard past n untouched
    wrong_store += y[static_cast<std::size_t>(i)] != (i < n ? x0[static_cast<std::size_t>(i)] * 2.0f + 1.0f : -9.0f);
  CHECK(wrong_load == 0);
  CHECK(wrong_store == 0);

  std::vector<std::int32_t> xi, oi(4 * 64, -1);
  for (float f : testing::random_floats(200, -1000, 1000, 12)) xi.push_back(static_cast<std::int32_t>(f));
  Buf<std::int32_t> bxi(dev, xi), boi(dev, oi);
  const D di(dev, bxi.at, tj::DType::i32, {199}, {1}, {64});  // the last element is outside the descriptor
  tj::compile<VecI32>(dev, {.num_warps = 2, .arch = arch}).launch(tj::Grid{4}, di, boi.at);
  boi.back();
  int wrong_int = 0;
  for (int i = 0; i < 4 * 64; ++i) {
    const int src = i + 5;
    wrong_int += oi[static_cast<std::size_t>(i)] != (src < 199 ? xi[static_cast<std::size_t>(src)] : 0) + 199 * 1000 + 1;
  }
  CHECK(wrong_int == 0);
}

void run_bshd4(const tj::Device& dev) {
  CAPTURE(testing::fresh_seed());
  const int B = 2, S = 37, H = 2, Dh = 8;
  std::vector<float> x = testing::random_floats(static_cast<std::size_t>(B) * S * H * Dh, -3, 3, 5);
  std::vector<float> y(x.size(), -7.0f);
  Buf<float> bx(dev, x), by(dev, y);
  const std::vector<std::int64_t> shape{B, S, H, Dh}, strides{S * H * Dh, H * Dh, Dh, 1};
  const D in(dev, bx.at, tj::DType::f32, shape, strides, {1, 16, 1, 8});
  const D out(dev, by.at, tj::DType::f32, shape, strides, {1, 16, 1, 8});
  auto k = tj::compile<Bshd4>(dev, {.num_warps = 4});
  k.launch(tj::Grid{4, B * 4}, in, out);  // rows -3 .. 60 cover S = 37 and run past it
  by.back();
  int wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) wrong += y[i] != x[i] * 2.0f + 1.0f;  // every element written once, nothing else
  CHECK(wrong == 0);
}

void run_rank5_and_rows_outer(const tj::Device& dev) {
  CAPTURE(testing::fresh_seed());
  {
    const int A0 = 2, A1 = 3, A2 = 2, R = 20, C = 16;
    std::vector<float> x = testing::random_floats(static_cast<std::size_t>(A0) * A1 * A2 * R * C, -1, 1, 9);
    std::vector<float> y(x.size(), -5.0f);
    Buf<float> bx(dev, x), by(dev, y);
    const std::vector<std::int64_t> shape{A0, A1, A2, R, C}, strides{A1 * A2 * R * C, A2 * R * C, R * C, C, 1};
    const D in(dev, bx.at, tj::DType::f32, shape, strides, {1, 1, 1, 8, 16});
    const D out(dev, by.at, tj::DType::f32, shape, strides, {1, 1, 1, 8, 16});
    tj::compile<Rank5>(dev, {.num_warps = 4}).launch(tj::Grid{3, A0 * A1 * A2}, in, out);
    by.back();
    int wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) wrong += y[i] != x[i] + 1.0f;
    CHECK(wrong == 0);
  }
  {
    const int R = 10, J = 3, C = 16;
    std::vector<float> x = testing::random_floats(static_cast<std::size_t>(R) * J * C, -1, 1, 11);
    std::vector<float> y(x.size(), -5.0f);
    Buf<float> bx(dev, x), by(dev, y);
    const std::vector<std::int64_t> shape{R, J, C}, strides{J * C, C, 1};
    const D in(dev, bx.at, tj::DType::f32, shape, strides, {4, 1, 16});
    const D out(dev, by.at, tj::DType::f32, shape, strides, {4, 1, 16});
    tj::compile<RowsOuter>(dev, {.num_warps = 4}).launch(tj::Grid{3, J}, in, out);  // rows 8..11: 10, 11 dropped
    by.back();
    int wrong = 0;
    for (std::size_t i = 0; i < x.size(); ++i) wrong += y[i] != x[i] + 1.0f;
    CHECK(wrong == 0);
  }
}

/// The batched GEMM against f64, C [batch, M, N] inside a buffer whose padding rows and columns are poisoned: a
/// store past M or N of any batch shows up there.
template <int BM, int BN, bool PERSISTENT = false>
void run_batched(const tj::Device& dev, int batch, int M, int N, int K, int stages, const std::string& arch = {}, bool tma_store = false,
                 bool ws = false) {
  CAPTURE(PERSISTENT);
  CAPTURE(batch);
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(arch);
  CAPTURE(tma_store);
  CAPTURE(ws);
  CAPTURE(testing::fresh_seed());
  const int ldc = (N + 3) / 4 * 4 + 8, rows_c = M + 3;  // padding: 8+ columns per row (16-byte row strides), 3 rows per batch
  std::vector<tj::bf16> a, b;
  for (float v : testing::random_floats(static_cast<std::size_t>(batch) * M * K, -1, 1, 21)) a.push_back(tj::bf16(v));
  for (float v : testing::random_floats(static_cast<std::size_t>(batch) * N * K, -1, 1, 22)) b.push_back(tj::bf16(v));
  const float poison = -12345.0f;
  std::vector<float> c(static_cast<std::size_t>(batch) * rows_c * ldc, poison);
  Buf<tj::bf16> ba(dev, a), bb(dev, b);
  Buf<float> bc(dev, c);
  const D da(dev, ba.at, tj::DType::bf16, {batch, M, K}, {static_cast<std::int64_t>(M) * K, K, 1}, {1, 64, 64});  // re-encoded at launch
  const D db(dev, bb.at, tj::DType::bf16, {batch, N, K}, {static_cast<std::int64_t>(N) * K, K, 1}, {1, BN, 64},
             {.swizzle = D::Swizzle::b128});
  const D dc(dev, bc.at, tj::DType::f32, {batch, M, N}, {static_cast<std::int64_t>(rows_c) * ldc, ldc, 1}, {1, BM, 32});
  const tj::CompileOptions opt{.num_warps = BM / 16, .num_stages = stages, .arch = arch, .warp_specialize = ws, .tma_store = tma_store};
  if constexpr (PERSISTENT) {
    // Fewer programs than tiles (7, or one per SM): each walks several tiles, across batches.
    const int programs = dev.backend() == tj::Backend::interpreter ? 7 : dev.num_sms();
    tj::compile<examples::MatmulBatchedPersistent<BM, BN, tj::bf16>>(dev, opt).launch(
        examples::persistent_batched_grid(batch, M, N, BM, BN, programs), da, db, dc, M, N, K);
  } else {
    tj::compile<examples::MatmulBatched<BM, BN, tj::bf16>>(dev, opt).launch(tj::Grid{tj::cdiv(M, BM) * tj::cdiv(N, BN), batch}, da, db,
                                                                           dc, N, K);
  }
  bc.back();
  double num = 0, den = 0;
  int written_padding = 0, unwritten = 0;
  for (int z = 0; z < batch; ++z)
    for (int i = 0; i < rows_c; ++i)
      for (int j = 0; j < ldc; ++j) {
        const float got = c[(static_cast<std::size_t>(z) * rows_c + i) * ldc + j];
        if (i >= M || j >= N) {
          written_padding += got != poison;
          continue;
        }
        unwritten += got == poison;
        double s = 0;
        for (int kk = 0; kk < K; ++kk)
          s += static_cast<double>(static_cast<float>(a[(static_cast<std::size_t>(z) * M + i) * K + kk])) *
               static_cast<float>(b[(static_cast<std::size_t>(z) * N + j) * K + kk]);
        num += (got - s) * (got - s);
        den += s * s;
      }
  CHECK(written_padding == 0);
  CHECK(unwritten == 0);
  CHECK(std::sqrt(num / den) < 1e-5);
}

void run_scores_bshd(const tj::Device& dev, const std::string& arch) {
  CAPTURE(arch);
  CAPTURE(testing::fresh_seed());
  const int B = 2, S = 100, H = 3, Dh = 64;  // S ragged: key rows 100..127 of the last step read zeros
  std::vector<tj::bf16> q, kk;
  for (float v : testing::random_floats(static_cast<std::size_t>(B) * S * H * Dh, -1, 1, 31)) q.push_back(tj::bf16(v));
  for (float v : testing::random_floats(static_cast<std::size_t>(B) * S * H * Dh, -1, 1, 32)) kk.push_back(tj::bf16(v));
  const int tiles = tj::cdiv(S, 64);
  std::vector<float> out(static_cast<std::size_t>(B) * H * tiles * 4096, std::numeric_limits<float>::quiet_NaN());
  Buf<tj::bf16> bq(dev, q), bk(dev, kk);
  Buf<float> bo(dev, out);
  const std::vector<std::int64_t> shape{B, S, H, Dh}, strides{static_cast<std::int64_t>(S) * H * Dh, H * Dh, Dh, 1};
  const D dq(dev, bq.at, tj::DType::bf16, shape, strides, {1, 64, 1, 64});
  const D dk(dev, bk.at, tj::DType::bf16, shape, strides, {1, 64, 1, 64});
  auto k = tj::compile<ScoresBshd>(dev, {.num_warps = 4, .num_stages = 2, .arch = arch});
  k.launch(tj::Grid{tiles, B * H}, dq, dk, bo.at, S, H);
  bo.back();
  auto at = [&](const std::vector<tj::bf16>& t, int b, int s, int h, int d) {
    return s < S ? static_cast<double>(static_cast<float>(t[((static_cast<std::size_t>(b) * S + s) * H + h) * Dh + d])) : 0.0;
  };
  double num = 0, den = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < tiles; ++t)
        for (int r = 0; r < 64; ++r)
          for (int c = 0; c < 64; ++c) {
            double s = 0;
            for (int n0 = 0; n0 < S; n0 += 64)
              for (int d = 0; d < Dh; ++d) s += at(q, b, t * 64 + r, h, d) * at(kk, b, n0 + c, h, d);
            const float got = out[((static_cast<std::size_t>(b * H + h) * tiles + t) * 64 + r) * 64 + c];
            num += (got - s) * (got - s);
            den += s * s;
          }
  CHECK(std::sqrt(num / den) < 1e-5);
}

}  // namespace

TEST_CASE("desc_rank_n_traces_a_view_per_block_and_prints_the_block") {
  const tj::ir::Kernel k = tj::trace(Bshd4{});
  CHECK(count_op(k, tj::ir::Op::desc_view) == 2);
  CHECK(k.params[0].rank == 4);
  CHECK(k.params[0].row_dim == 1);
  CHECK(k.params[0].block == std::array<int, 5>{1, 16, 1, 8, 0});
  const std::string text = tj::ir::print(k);
  CHECK(text.find("arg0: desc<f32> block [1,16,1,8]") != std::string::npos);
  CHECK(text.find("rank=4 row_dim=1") != std::string::npos);
  CHECK(tj::trace(Rank5{}).params[0].row_dim == 3);      // no outer dim above 1: rank - 2
  CHECK(tj::trace(RowsOuter{}).params[0].row_dim == 0);  // the rows need not sit next to the columns
  static_assert(tj::Desc<float, 1, 16, 1, 8>::block0 == 16 && tj::Desc<float, 1, 16, 1, 8>::block1 == 8);
  // Lowered: no view left, every block a masked load or store of the 2-D slice.
  const tj::ir::Kernel low = tj::ir::lower_descriptors(k);
  CHECK(count_op(low, tj::ir::Op::desc_view) == 0);
  CHECK(count_op(low, tj::ir::Op::load) == 1);
  CHECK(count_op(low, tj::ir::Op::store) == 1);
  tj::ir::verify(low);
}

TEST_CASE("desc_rank_n_interpreter_bounds_hold_per_dim") {
  const auto dev = tj::Device::interpreter();
  run_gather3(dev, false);
  run_gather3(dev, true);
  run_bshd4(dev);
  run_rank5_and_rows_outer(dev);
  // The extents and strides of every dim, read in a kernel.
  std::vector<float> x(3 * 21 * 24, 1.0f);
  std::vector<int> o(6, -1);
  const D in(dev, x.data(), tj::DType::f32, {3, 21, 16}, {21 * 24, 24, 1}, {1, 8, 16});
  tj::compile<Shapes>(dev, {.num_warps = 4}).launch(tj::Grid{1}, in, o.data());
  CHECK(o == std::vector<int>{3, 21, 16, 21 * 24, 24, 1});
}

TEST_CASE("desc_rank1_interpreter_loads_fill_and_stores_drop_out_of_bounds") {
  const auto dev = tj::Device::interpreter();
  run_rank1(dev, false);
  run_rank1(dev, true);
  // A rank-2 descriptor for a rank-1 Desc is refused at launch, naming both ranks.
  std::vector<float> x(256, 1.0f), o(384, 0.0f);
  const D two(dev, x.data(), tj::DType::f32, {2, 128}, {128, 1}, {1, 96});
  const D one(dev, x.data(), tj::DType::f32, {256}, {1}, {96});
  auto k = tj::compile<Vec96>(dev, {.num_warps = 4});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1}, two, one, o.data()), doctest::Contains("rank 2: the kernel's Desc has rank 1"),
                       tj::InvalidArgument);
  // A 1-D block is a masked vector load / store: no desc_load or desc_store node, nothing for TMA.
  const auto ir = tj::trace(Vec96{});
  CHECK(count_op(ir, tj::ir::Op::desc_load) == 0);
  CHECK(count_op(ir, tj::ir::Op::desc_store) == 0);
  CHECK(count_op(ir, tj::ir::Op::load) == 1);
  CHECK(count_op(ir, tj::ir::Op::store) == 2);
}

TEST_CASE("desc_rank1_compiles_for_sm90a_sm80_and_gfx942") {
  for (const auto& k : {tj::trace(Vec96{}), tj::trace(VecI32{})}) {
    CAPTURE(k.name);
    const auto g = tj::codegen::generate(k, testing::all_div16(k), tj::codegen::target_for("sm_90a"), {.num_warps = 4});
    testing::compiles_for_sm90a(g.source, k.name + "_rank1.cu");
    const auto s80 = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
    testing::compiles_for(s80.source, "sm_80", k.name);
    testing::compiles_for_gfx942(tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 4}).source, k.name);
  }
}

TEST_CASE("desc_rank_n_rules") {
  const auto dev = tj::Device::interpreter();
  // A dim the descriptor does not have: refused while tracing, naming it.
  CHECK_THROWS_WITH_AS(tj::trace(BadShape{}), doctest::Contains("Desc::shape(3): the descriptor has rank 3"), tj::InvalidArgument);
  // The argument's rank must be the Desc's.
  std::vector<float> x(64 * 16, 0.0f), y(64 * 16, 0.0f);
  const D two(dev, x.data(), tj::DType::f32, {64, 16}, {16, 1}, {8, 16});
  auto k = tj::compile<Gather3>(dev, {.num_warps = 4});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1, 1}, two, y.data()), doctest::Contains("rank 2: the kernel's Desc has rank 3"),
                       tj::InvalidArgument);
  // 32-bit offsets: the extent over every dim counts.
  const D big(dev, x.data(), tj::DType::f32, {1024, 1024, 4096}, {1024 * 4096, 4096, 1}, {1, 8, 16});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1, 1}, big, y.data()), doctest::Contains("2^31 - 1 elements of extent"), tj::InvalidArgument);
  // ... even where the extent itself passes 2^63 (shape 2^32, stride 2^36 elements: the product wraps an int64).
  const D huge(dev, x.data(), tj::DType::f32, {1LL << 32, 1, 16}, {1LL << 36, 16, 1}, {1, 8, 16});
  CHECK_THROWS_WITH_AS(k.launch(tj::Grid{1, 1}, huge, y.data()), doctest::Contains("spans more than 2^63 elements"), tj::InvalidArgument);
}

TEST_CASE("desc_rank3_batched_gemm_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  run_batched<64, 64>(dev, 3, 37, 50, 72, 2);  // M, N ragged; K = 72: the last K block half past K
  run_batched<64, 64>(dev, 2, 64, 64, 64, 1);
  run_batched<64, 64, true>(dev, 3, 37, 130, 72, 2);  // persistent: 3 x 3 tiles over 7 programs
}

TEST_CASE("desc_rank_n_codegen_tma_boxes_cp_async_slices_and_masked_loads") {
  using K = examples::MatmulBatched<128, 128, tj::bf16>;
  const tj::ir::Kernel ir = tj::trace(K{});
  const auto spec = testing::all_div16(ir);
  // sm_90a: 3-D TMA boxes into the ring, the store by a 3-D TMA store; the boxes re-encoded per rank at launch.
  const auto g = tj::codegen::generate(ir, spec, tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 3, .tma_store = true});
  CHECK(g.source.find("tj_tma_load_3d(tj_ring") != std::string::npos);
  CHECK(g.source.find("return tj_crd{{") != std::string::npos);
  CHECK(g.source.find("tj_tma_store_3d(&s") != std::string::npos);
  CHECK(g.tma_params == std::vector<int>{0, 1, 2});
  testing::compiles_for_sm90a_without_spills(g.source, "batched_sm90a");
  // Warp-specialised: the producer computes the batch coordinate too.
  const auto ws = tj::codegen::generate(ir, spec, tj::codegen::target_for("sm_90a"),
                                        {.num_warps = 8, .num_stages = 3, .warp_specialize = true, .tma_store = true});
  CHECK(testing::has_diagnostic(ws, "warp specialised"));
  testing::compiles_for_sm90a(ws.source, "batched_ws");
  // Persistent over the batch: the producer walks tiles of every batch (the count read from C's descriptor).
  const tj::ir::Kernel pir = tj::trace(examples::MatmulBatchedPersistent<128, 256, tj::bf16, tj::bf16>{});
  const auto pws = tj::codegen::generate(pir, testing::all_div16(pir), tj::codegen::target_for("sm_90a"),
                                         {.num_warps = 8, .num_stages = 4, .warp_specialize = true, .tma_store = true});
  CHECK(testing::has_diagnostic(pws, "warp specialised"));
  CHECK(pws.source.find("tj_tma_store_3d(&s") != std::string::npos);
  testing::compiles_for_sm90a_without_spills(pws.source, "batched_persistent_ws");
  // sm_80: the cp.async ring reads the 2-D slice at the batch coordinate; no tensor maps.
  const auto cp = tj::codegen::generate(ir, spec, tj::codegen::target_for("sm_80"), {.num_warps = 8, .num_stages = 3});
  CHECK(cp.source.find("tj_view_of(s") != std::string::npos);
  CHECK(cp.source.find("tj_tma_load") == std::string::npos);
  CHECK(cp.tma_params.empty());
  testing::compiles_for(cp.source, "sm_80", "batched_sm80");
  // Rank 4, rows along dim 1 (BSHD): a 4-D box whose coordinates are (0, row, head, batch).
  const tj::ir::Kernel sc = tj::trace(ScoresBshd{});
  const auto g4 = tj::codegen::generate(sc, spec, tj::codegen::target_for("sm_90a"), {.num_warps = 4, .num_stages = 2});
  CHECK(g4.source.find("tj_tma_load_4d(tj_ring") != std::string::npos);
  testing::compiles_for_sm90a(g4.source, "scores_bshd_sm90a");
  // gfx942 (and every kernel here): masked loads, compiled by hiprtc.
  for (const tj::ir::Kernel& k : {ir, sc, tj::trace(Bshd4{}), tj::trace(Rank5{}), tj::trace(RowsOuter{}), tj::trace(Gather3{})}) {
    CAPTURE(k.name);
    const auto h = tj::codegen::generate(k, {}, tj::codegen::target_for("gfx942"), {.num_warps = 4});
    CHECK(h.source.find("tj_view_of") == std::string::npos);
    testing::compiles_for_gfx942(h.source, k.name);
    const auto s80 = tj::codegen::generate(k, {}, tj::codegen::target_for("sm_80"), {.num_warps = 4});
    testing::compiles_for(s80.source, "sm_80", k.name);
  }
}

TEST_CASE("desc_rank_n_gpu_matches_reference") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 80) {
    MESSAGE("no NVIDIA GPU of sm_80 or newer: skipping");
    return;
  }
  const std::string plain = "sm_" + std::to_string(dev.compute_capability());  // no "a": cp.async / masked loads
  run_gather3(dev, false);
  run_gather3(dev, true);
  run_bshd4(dev);
  run_rank5_and_rows_outer(dev);
  run_rank1(dev, false);
  run_rank1(dev, true);
  run_batched<128, 128>(dev, 3, 300, 260, 200, 3, plain);  // the cp.async ring reading batch slices
  run_scores_bshd(dev, plain);
  if (dev.compute_capability() == 90) {  // TMA 3-D / 4-D boxes, the TMA store, warp specialisation
    run_batched<128, 128>(dev, 3, 300, 260, 200, 3, "sm_90a");
    run_batched<128, 128>(dev, 3, 300, 264, 200, 3, "sm_90a", true);  // N · 4 bytes a multiple of 16: the TMA store
    run_batched<128, 128>(dev, 4, 256, 256, 512, 4, "sm_90a", true, true);
    run_batched<64, 192>(dev, 2, 130, 200, 136, 2, "sm_90a");  // NPOT N
    run_batched<128, 256, true>(dev, 5, 700, 600, 304, 4, "sm_90a", false, true);  // persistent, producer warp group
    run_batched<128, 256, true>(dev, 3, 256, 512, 256, 4, "sm_90a", true, true);
    run_batched<128, 128, true>(dev, 2, 300, 260, 200, 3, plain);
    run_scores_bshd(dev, "sm_90a");
  }
}
