// GPU correctness: the example kernels on the real device against CPU
// references on fresh random data. Skips cleanly without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "examples/softmax.hpp"
#include "examples/vector_add.hpp"
#include "test/common/random.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;

namespace {
bool have_gpu() {
  auto d = tj::Device::best();
  if (d.backend() == tj::Backend::interpreter) {
    MESSAGE("no GPU: skipping device tests (", tj::Device::cuda_unavailable_reason(), ")");
    return false;
  }
  return true;
}

template <class T>
void gpu_vector_add(int n) {
  CAPTURE(n);
  CAPTURE(testing::fresh_seed());
  auto dev = tj::Device::best();
  auto xf = testing::random_floats(static_cast<std::size_t>(n), -4, 4, 11), yf = testing::random_floats(static_cast<std::size_t>(n), -4, 4, 12);
  std::vector<T> x(xf.begin(), xf.end()), y(yf.begin(), yf.end()), out(static_cast<std::size_t>(n));
  if constexpr (!std::is_same_v<T, float>)
    for (int i = 0; i < n; ++i) x[i] = T(xf[i]), y[i] = T(yf[i]);
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(T);
  auto* dx = static_cast<T*>(dev.alloc(bytes));
  auto* dy = static_cast<T*>(dev.alloc(bytes));
  auto* dout = static_cast<T*>(dev.alloc(bytes + 64));
  dev.copy_to_device(dx, x.data(), bytes);
  dev.copy_to_device(dy, y.data(), bytes);
  dev.memset(dout, 0x7f, bytes + 64);
  auto k = tj::compile<examples::VecAdd<96, T>>(dev, {.num_warps = 1});
  k.launch(tj::Grid{tj::cdiv(n, 96)}, dx, dy, dout, n);
  dev.copy_to_host(out.data(), dout, bytes);
  std::vector<unsigned char> tail(64);
  dev.copy_to_host(tail.data(), reinterpret_cast<char*>(dout) + bytes, 64);
  for (int i = 0; i < n; ++i)
    REQUIRE(static_cast<float>(out[i]) == static_cast<float>(T(static_cast<float>(x[i]) + static_cast<float>(y[i]))));
  for (auto b : tail) REQUIRE(b == 0x7f);  // nothing written past n
  dev.free(dx), dev.free(dy), dev.free(dout);
}

template <int BM, int W, int NW>
void gpu_softmax(int rows) {
  CAPTURE(W);
  CAPTURE(rows);
  CAPTURE(testing::fresh_seed());
  auto dev = tj::Device::best();
  auto x = testing::random_floats(static_cast<std::size_t>(rows) * W, -8, 8, W);
  std::vector<float> y(x.size());
  const std::size_t bytes = x.size() * sizeof(float);
  auto* dx = static_cast<float*>(dev.alloc(bytes));
  auto* dy = static_cast<float*>(dev.alloc(bytes));
  dev.copy_to_device(dx, x.data(), bytes);
  dev.memset(dy, 0xff, bytes);
  auto k = tj::compile<examples::Softmax<BM, W>>(dev, {.num_warps = NW});
  k.launch(tj::Grid{tj::cdiv(rows, BM)}, dx, dy, rows);
  dev.copy_to_host(y.data(), dy, bytes);
  std::vector<double> ref(x.size());
  for (int r = 0; r < rows; ++r) {
    const float* xr = &x[static_cast<std::size_t>(r) * W];
    double m = *std::max_element(xr, xr + W), s = 0;
    for (int c = 0; c < W; ++c) s += std::exp(xr[c] - m);
    for (int c = 0; c < W; ++c) ref[static_cast<std::size_t>(r) * W + c] = std::exp(xr[c] - m) / s;
  }
  for (float v : y) REQUIRE(!std::isnan(v));  // poison was NaN: every element written
  CHECK(testing::rel_error(y, ref) < 1e-5);
  dev.free(dx), dev.free(dy);
}
}  // namespace

TEST_CASE("gpu_vector_add_f32_f16_bf16") {
  if (!have_gpu()) return;
  gpu_vector_add<float>(1'000'003);
  gpu_vector_add<tj::f16>(100'001);
  gpu_vector_add<tj::bf16>(100'001);
}

TEST_CASE("gpu_softmax_every_width") {
  if (!have_gpu()) return;
  gpu_softmax<32, 96, 4>(1001);
  gpu_softmax<4, 768, 4>(333);
  gpu_softmax<2, 3072, 8>(77);
  gpu_softmax<1, 12288, 16>(19);
  gpu_softmax<1, 96, 4>(5);   // a tile smaller than the program: warps hold copies
  gpu_softmax<8, 100, 4>(9);  // radix-5 digits
}

#include "test/common/kernels.hpp"

namespace {
/// Run AllOps on the GPU and in the interpreter on the same random input;
/// the interpreter is the reference semantics.
template <int M, int N, int NW, class T>
void gpu_matches_interpreter(int rows, double tol) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(NW);
  CAPTURE(testing::fresh_seed());
  auto gpu = tj::Device::best();
  const int programs = (rows + M - 1) / M;
  auto xf = testing::random_floats(static_cast<std::size_t>(programs) * M * N, -3, 3, 7);
  std::vector<T> x(xf.size());
  for (std::size_t i = 0; i < xf.size(); ++i) x[i] = T(xf[i]);
  const std::size_t n_out = x.size(), n_row = static_cast<std::size_t>(programs) * M * 3,
                    n_col = static_cast<std::size_t>(programs) * N, n_tot = static_cast<std::size_t>(programs);
  // Reference: the interpreter on host memory.
  std::vector<T> out_ref(n_out, T(-9.f));
  std::vector<float> row_ref(n_row, -9.f), col_ref(n_col, -9.f), tot_ref(n_tot, -9.f);
  auto ki = tj::compile<testing::AllOps<M, N, T>>(tj::Device::interpreter(), {.num_warps = NW});
  ki.launch(tj::Grid{programs}, x.data(), out_ref.data(), row_ref.data(), col_ref.data(), tot_ref.data(), rows);
  // The GPU.
  auto* dx = static_cast<T*>(gpu.alloc(n_out * sizeof(T)));
  auto* dout = static_cast<T*>(gpu.alloc(n_out * sizeof(T)));
  auto* drow = static_cast<float*>(gpu.alloc(n_row * 4));
  auto* dcol = static_cast<float*>(gpu.alloc(n_col * 4));
  auto* dtot = static_cast<float*>(gpu.alloc(n_tot * 4));
  gpu.copy_to_device(dx, x.data(), n_out * sizeof(T));
  gpu.copy_to_device(dout, out_ref.data(), n_out * sizeof(T));  // poison outside the mask equals the reference's
  std::vector<float> poison_row(n_row, -9.f), poison_col(n_col, -9.f), poison_tot(n_tot, -9.f);
  gpu.copy_to_device(drow, poison_row.data(), n_row * 4);
  gpu.copy_to_device(dcol, poison_col.data(), n_col * 4);
  gpu.copy_to_device(dtot, poison_tot.data(), n_tot * 4);
  auto kg = tj::compile<testing::AllOps<M, N, T>>(gpu, {.num_warps = NW});
  kg.launch(tj::Grid{programs}, dx, dout, drow, dcol, dtot, rows);
  std::vector<T> out(n_out);
  std::vector<float> row(n_row), col(n_col), tot(n_tot);
  gpu.copy_to_host(out.data(), dout, n_out * sizeof(T));
  gpu.copy_to_host(row.data(), drow, n_row * 4);
  gpu.copy_to_host(col.data(), dcol, n_col * 4);
  gpu.copy_to_host(tot.data(), dtot, n_tot * 4);
  std::vector<double> a(n_out), b(n_out);
  for (std::size_t i = 0; i < n_out; ++i) a[i] = static_cast<float>(out[i]), b[i] = static_cast<float>(out_ref[i]);
  CHECK(testing::rel_error(a, b) < tol);
  CHECK(testing::rel_error(row, row_ref) < tol);
  CHECK(testing::rel_error(col, col_ref) < tol);
  CHECK(testing::rel_error(tot, tot_ref) < tol);
  for (float v : row) REQUIRE(!std::isnan(v));
  gpu.free(dx), gpu.free(dout), gpu.free(drow), gpu.free(dcol), gpu.free(dtot);
}
}  // namespace

TEST_CASE("gpu_all_ops_match_the_interpreter") {
  if (!have_gpu()) return;
  gpu_matches_interpreter<8, 96, 4, float>(61, 1e-5);
  gpu_matches_interpreter<32, 64, 8, float>(100, 1e-5);    // warps along both dims: axis-0 reduction through shared memory
  gpu_matches_interpreter<4, 768, 4, float>(9, 1e-5);
  gpu_matches_interpreter<16, 48, 2, tj::f16>(40, 2e-3);
  gpu_matches_interpreter<16, 96, 4, tj::bf16>(40, 1e-2);
  gpu_matches_interpreter<2, 12, 4, float>(5, 1e-5);       // tile smaller than the program: lane and warp copies
}

#include "test/common/loop_kernels.hpp"

TEST_CASE("gpu_loops_match_the_interpreter") {
  if (!have_gpu()) return;
  auto gpu = tj::Device::best();
  const int rows = 77, cols = 1000;
  CAPTURE(testing::fresh_seed());
  auto x = testing::random_floats(static_cast<std::size_t>(rows) * cols, -5, 5, 9);
  const int programs = (rows + 7) / 8;
  std::vector<float> ref(static_cast<std::size_t>(rows) * 2), got(ref.size());
  std::vector<std::int32_t> ref_chunks(static_cast<std::size_t>(programs)), got_chunks(ref_chunks.size());
  tj::compile<testing::RowStatsLoop<8, 96>>(tj::Device::interpreter())
      .launch(tj::Grid{programs}, x.data(), ref.data(), ref_chunks.data(), rows, cols);
  auto* dx = static_cast<float*>(gpu.alloc(x.size() * 4));
  auto* dout = static_cast<float*>(gpu.alloc(ref.size() * 4));
  auto* dch = static_cast<std::int32_t*>(gpu.alloc(ref_chunks.size() * 4));
  gpu.copy_to_device(dx, x.data(), x.size() * 4);
  gpu.memset(dout, 0xff, ref.size() * 4);
  tj::compile<testing::RowStatsLoop<8, 96>>(gpu).launch(tj::Grid{programs}, dx, dout, dch, rows, cols);
  gpu.copy_to_host(got.data(), dout, ref.size() * 4);
  gpu.copy_to_host(got_chunks.data(), dch, ref_chunks.size() * 4);
  CHECK(testing::rel_error(got, ref) < 1e-5);
  CHECK(got_chunks == ref_chunks);
  std::vector<float> nested(96), nested_ref(96);
  auto* dn = static_cast<float*>(gpu.alloc(96 * 4));
  tj::compile<testing::NestedLoops>(gpu, {.num_warps = 1}).launch(tj::Grid{1}, dn, 7, 9);
  tj::compile<testing::NestedLoops>(tj::Device::interpreter(), {.num_warps = 1}).launch(tj::Grid{1}, nested_ref.data(), 7, 9);
  gpu.copy_to_host(nested.data(), dn, 96 * 4);
  CHECK(nested == nested_ref);
  gpu.free(dx), gpu.free(dout), gpu.free(dch), gpu.free(dn);
}

namespace {
/// maximum / minimum of two [4, 32] tiles and the row max / min: NaN in, NaN out (the semantics of torch and Triton,
/// one max.NaN / min.NaN instruction on sm_80+).
struct NanMaxMin {
  void operator()(tj::Ptr<float> x, tj::Ptr<float> y, tj::Ptr<float> mx, tj::Ptr<float> mn, tj::Ptr<float> rmax, tj::Ptr<float> rmin) const {
    auto r = tj::arange<4>();
    auto offs = tj::expand_dims<1>(r) * 32 + tj::expand_dims<0>(tj::arange<32>());
    auto a = tj::load(x + offs), b = tj::load(y + offs);
    tj::store(mx + offs, tj::maximum(a, b));
    tj::store(mn + offs, tj::minimum(a, b));
    tj::store(rmax + r, tj::max<1>(a));
    tj::store(rmin + r, tj::min<1>(a));
  }
};

/// Runs NanMaxMin on `dev` and checks every output against the rule: NaN if an input is NaN, else std::max/min.
void check_nan_max_min(const tj::Device& dev) {
  auto x = testing::random_floats(128, -4, 4, 71), y = testing::random_floats(128, -4, 4, 72);
  const float nan = std::nanf("");
  x[3] = nan, y[40] = nan, x[70] = y[70] = nan;  // rows 0 and 2 hold a NaN of x; rows 1 and 3 none
  std::vector<float> mx(128), mn(128), rmax(4), rmin(4);
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  auto up = [&](std::vector<float>& h) {
    if (!gpu) return h.data();
    auto* p = static_cast<float*>(dev.alloc(h.size() * 4));
    dev.copy_to_device(p, h.data(), h.size() * 4);
    return p;
  };
  float *dx = up(x), *dy = up(y), *dmx = up(mx), *dmn = up(mn), *drmax = up(rmax), *drmin = up(rmin);
  tj::compile<NanMaxMin>(dev, {.num_warps = 2}).launch(tj::Grid{1}, dx, dy, dmx, dmn, drmax, drmin);
  if (gpu) {
    dev.copy_to_host(mx.data(), dmx, 512), dev.copy_to_host(mn.data(), dmn, 512);
    dev.copy_to_host(rmax.data(), drmax, 16), dev.copy_to_host(rmin.data(), drmin, 16);
    for (float* p : {dx, dy, dmx, dmn, drmax, drmin}) dev.free(p);
  }
  for (int i = 0; i < 128; ++i) {
    CAPTURE(i);
    const bool has_nan = std::isnan(x[i]) || std::isnan(y[i]);
    CHECK(std::isnan(mx[i]) == has_nan);
    CHECK(std::isnan(mn[i]) == has_nan);
    if (!has_nan) CHECK(mx[i] == std::max(x[i], y[i]));
    if (!has_nan) CHECK(mn[i] == std::min(x[i], y[i]));
  }
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    const bool has_nan = std::any_of(x.begin() + 32 * r, x.begin() + 32 * r + 32, [](float v) { return std::isnan(v); });
    CHECK(std::isnan(rmax[r]) == has_nan);
    CHECK(std::isnan(rmin[r]) == has_nan);
    if (!has_nan) CHECK(rmax[r] == *std::max_element(x.begin() + 32 * r, x.begin() + 32 * r + 32));
    if (!has_nan) CHECK(rmin[r] == *std::min_element(x.begin() + 32 * r, x.begin() + 32 * r + 32));
  }
}
}  // namespace

TEST_CASE("maximum_minimum_propagate_nan_interpreter") { check_nan_max_min(tj::Device::interpreter()); }

TEST_CASE("gpu_maximum_minimum_propagate_nan") {
  if (!have_gpu()) return;
  check_nan_max_min(tj::Device::best());
}
