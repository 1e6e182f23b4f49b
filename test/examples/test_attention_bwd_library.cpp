// The library backward, `examples::Attention<T>::backward`: on compute
// capability 9.0 with 16-byte aligned q, k, v, d_o it runs flash_bwd_tma.hpp
// (FlashBwdKVTma + FlashBwdQTma with FlashBwdTmaConfig<D>, or with the fused
// schedule FlashBwdFusedTma + FlashBwdDqConvert), elsewhere flash_bwd.hpp's
// pointer kernels; off Hopper (set_mma_sync_path on a GPU) both schedules. Checked against the f64 gradients
// (test/common/attention_ref.hpp) on fresh random inputs for D = 64, 96 and
// 128, causal and full, grouped-query heads and S not a multiple of any block
// (blocks run into the next head's rows, or past the last row into TMA's zero
// fill); outputs are poisoned with NaN (every element must be written) and
// followed by a guard that must be left untouched (nothing written past S of
// the last head). A misaligned d_o takes the pointer kernels. Without a GPU:
// the same checks in the interpreter (pointer kernels), and every TMA kernel
// the library launches compiled by NVRTC for sm_90a.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "examples/attention/attention.hpp"
#include "examples/attention/flash_bwd_tma.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/codegen.hpp"
#include "test/common/text.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;

namespace {

constexpr unsigned char kGuard = 0x5a;      // bytes after each output
constexpr std::size_t kGuardBytes = 1024;

/// One tensor argument: `bytes` of payload at `offset` bytes into its allocation, then kGuardBytes of guard; on the
/// device when `dev` is a GPU, else in host memory (the interpreter reads host pointers).
class Buf {
 public:
  Buf(const tj::Device& dev, std::size_t bytes, std::size_t offset = 0)
      : dev_(dev), gpu_(dev.backend() != tj::Backend::interpreter), bytes_(bytes), offset_(offset),
        image_(offset + bytes + kGuardBytes, kGuard) {
    if (gpu_) dev_ptr_ = dev_.alloc(image_.size());
  }
  ~Buf() {
    if (dev_ptr_) dev_.free(dev_ptr_);
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <class E>
  E* ptr() {
    return reinterpret_cast<E*>((gpu_ ? static_cast<unsigned char*>(dev_ptr_) : image_.data()) + offset_);
  }
  /// Payload from `src` (or `fill` bytes when null) and the guard, to wherever the kernels read.
  void put(const void* src, unsigned char fill = 0) {
    if (src) std::memcpy(image_.data() + offset_, src, bytes_);
    else std::memset(image_.data() + offset_, fill, bytes_);
    if (gpu_) dev_.copy_to_device(dev_ptr_, image_.data(), image_.size());
  }
  /// The payload into `dst`; returns whether the guard after it is intact.
  bool get(void* dst) {
    if (gpu_) dev_.copy_to_host(image_.data(), dev_ptr_, image_.size());
    std::memcpy(dst, image_.data() + offset_, bytes_);
    for (std::size_t i = offset_ + bytes_; i < image_.size(); ++i)
      if (image_[i] != kGuard) return false;
    return true;
  }

 private:
  const tj::Device& dev_;
  bool gpu_;
  std::size_t bytes_, offset_;
  std::vector<unsigned char> image_;
  void* dev_ptr_ = nullptr;
};

using testing::max_rel;  // max |got − ref| / max |ref|: one wrong row shows here even where the Frobenius norm hides it

/// Forward (O, LSE) and backward through the library on fresh random q, k, v, dO; dQ, dK, dV against f64.
/// `misalign_do`: d_o sits one element past a 16-byte boundary (element-aligned, so accepted; not TMA's rule).
/// `nan_last_batch`: the first row of q, k, v and dO in the last batch is NaN; only the batches before it are checked
/// (their last head's blocks past S must not read the NaN batch's rows).
template <class T>
void library_backward_case(const tj::Device& dev, int B, int Hq, int Hkv, int S, int D, bool causal, bool misalign_do = false,
                           bool nan_last_batch = false, bool mma_sync = false,
                           typename examples::Attention<T>::BwdSchedule schedule = examples::Attention<T>::BwdSchedule::automatic,
                           examples::Attention<T>* shared = nullptr) {
  CAPTURE(static_cast<int>(schedule));
  CAPTURE(mma_sync);
  CAPTURE(nan_last_batch);
  CAPTURE(D);
  CAPTURE(S);
  CAPTURE(causal);
  CAPTURE(Hq);
  CAPTURE(Hkv);
  CAPTURE(misalign_do);
  CAPTURE(testing::fresh_seed());
  const std::size_t nq = static_cast<std::size_t>(B) * Hq * S * D, nk = static_cast<std::size_t>(B) * Hkv * S * D;
  const std::size_t rows = static_cast<std::size_t>(B) * Hq * S;
  auto q = testing::random_tensor<T>(nq, 51), k = testing::random_tensor<T>(nk, 52), v = testing::random_tensor<T>(nk, 53),
       d_o = testing::random_tensor<T>(nq, 54);
  const int checked = nan_last_batch ? B - 1 : B;  // batches compared with the reference
  if (nan_last_batch)
    for (auto* t : {&q, &k, &v, &d_o})
      for (int d = 0; d < D; ++d) (*t)[t->size() / static_cast<std::size_t>(B) * static_cast<std::size_t>(B - 1) + static_cast<std::size_t>(d)] = T(std::nanf(""));
  const examples::AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = S, .head_dim = D, .causal = causal};
  const std::size_t es = sizeof(T);
  Buf bq(dev, nq * es), bk(dev, nk * es), bv(dev, nk * es), bdo(dev, nq * es, misalign_do ? es : 0), bo(dev, nq * es);
  Buf blse(dev, rows * 4), bdelta(dev, rows * 4), bdq(dev, nq * es), bdk(dev, nk * es), bdv(dev, nk * es);
  bq.put(q.data()), bk.put(k.data()), bv.put(v.data()), bdo.put(d_o.data()), bo.put(nullptr), blse.put(nullptr), bdelta.put(nullptr);
  bdq.put(nullptr, 0xff), bdk.put(nullptr, 0xff), bdv.put(nullptr, 0xff);  // NaN in bf16 and f16
  {
    examples::Attention<T> own(dev);
    examples::Attention<T>& attn = shared ? *shared : own;  // `shared`: an object that has run other calls before
    if (mma_sync) attn.set_mma_sync_path(true);
    attn.set_backward_schedule(schedule);
    attn.forward(bq.ptr<T>(), bk.ptr<T>(), bv.ptr<T>(), bo.ptr<T>(), blse.ptr<float>(), s);
    attn.backward(bq.ptr<T>(), bk.ptr<T>(), bv.ptr<T>(), bo.ptr<T>(), bdo.ptr<T>(), blse.ptr<float>(), bdelta.ptr<float>(), bdq.ptr<T>(),
                  bdk.ptr<T>(), bdv.ptr<T>(), s);
  }
  std::vector<T> dq(nq), dk(nk), dv(nk);
  CHECK(bdq.get(dq.data()));  // nothing written past the last head's S rows
  CHECK(bdk.get(dk.data()));
  CHECK(bdv.get(dv.data()));
  auto first = [&](const std::vector<T>& x) {  // the checked batches
    return std::vector<T>(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(x.size() / static_cast<std::size_t>(B) * static_cast<std::size_t>(checked)));
  };
  const auto gg = testing::grouped_grads(first(q), first(k), first(v), first(d_o), first(dq), first(dk), first(dv), checked * Hkv, Hq / Hkv,
                                         S, D, causal, s.softmax_scale());
  CHECK(testing::rel_error(gg.got_dq, gg.ref_dq) < 5e-2);
  CHECK(testing::rel_error(gg.got_dk, gg.ref_dk) < 5e-2);
  CHECK(testing::rel_error(gg.got_dv, gg.ref_dv) < 5e-2);
  CHECK(max_rel(gg.got_dq, gg.ref_dq) < 5e-2);
  CHECK(max_rel(gg.got_dk, gg.ref_dk) < 5e-2);
  CHECK(max_rel(gg.got_dv, gg.ref_dv) < 5e-2);
}

/// One-token decode through `attn` against caches [B, Hkv, s_max, D] holding lens[b] keys (`chunk` keys per split,
/// 0: automatic); O and LSE checked against f64 on fresh random inputs.
template <class T>
void decode_through(const tj::Device& dev, examples::Attention<T>& attn, const std::vector<std::int32_t>& lens, int Hq, int Hkv, int D,
                    int s_max, long long chunk) {
  CAPTURE(chunk);
  CAPTURE(testing::fresh_seed());
  const int B = static_cast<int>(lens.size());
  auto q = testing::random_tensor<T>(static_cast<std::size_t>(B) * Hq * D, 61);
  auto k = testing::random_tensor<T>(static_cast<std::size_t>(B) * Hkv * s_max * D, 62);
  auto v = testing::random_tensor<T>(k.size(), 63);
  std::vector<T> o(q.size(), T(7.0f));
  std::vector<float> lse(static_cast<std::size_t>(B) * Hq, 7.0f);
  std::vector<std::int32_t> len = lens;
  const examples::AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = 1, .head_dim = D};
  {
    testing::Mirror m{dev, {}};
    auto *dq = m.up(q), *dk = m.up(k), *dv = m.up(v), *dout = m.up(o);
    auto* dl = m.up(lse);
    auto* dlen = m.up(len);
    attn.decode(dq, dk, dv, dlen, dout, dl, s, s_max, chunk);
    m.down();
  }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h) {
      CAPTURE(b);
      CAPTURE(h);
      const std::size_t row = static_cast<std::size_t>(b) * Hq + h, kv0 = (static_cast<std::size_t>(b) * Hkv + h / (Hq / Hkv)) * s_max * D;
      const std::size_t n = static_cast<std::size_t>(lens[static_cast<std::size_t>(b)]);
      auto f64 = [](const std::vector<T>& x, std::size_t at, std::size_t count) {
        std::vector<double> out(count);
        for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(x[at + i]);
        return out;
      };
      const std::size_t d = static_cast<std::size_t>(D);
      const auto ref = testing::attention_ref(f64(q, row * d, d), f64(k, kv0, n * d), f64(v, kv0, n * d), 1, static_cast<int>(n), D, false,
                                              s.softmax_scale());
      const auto got = f64(o, row * d, d);
      CHECK(max_rel(got, ref.o) < 2e-2);
      CHECK(lse[row] == doctest::Approx(ref.lse[0]).epsilon(1e-3));
    }
}

/// Every (D, causal) backward the library can launch on Hopper, through `f.template operator()<D, C>()`.
template <class F>
void for_each_dim(F&& f) {
  f.template operator()<64, false>(), f.template operator()<64, true>();
  f.template operator()<96, false>(), f.template operator()<96, true>();
  f.template operator()<128, false>(), f.template operator()<128, true>();
}

}  // namespace

TEST_CASE("attention_backward_library_interpreter_matches_f64_with_poison_and_guards") {
  const auto dev = tj::Device::interpreter();
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 70, 64, false);        // GQA, ragged S
  library_backward_case<tj::bf16>(dev, 1, 2, 2, 45, 96, true, true);   // D = 96 exact, causal, d_o off 16 bytes
  library_backward_case<tj::bf16>(dev, 2, 2, 1, 40, 64, true, false, true);  // NaN in the last batch's first rows
}

TEST_CASE("attention_backward_library_tma_kernels_compile_for_sm90a") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping NVRTC: ", why);
    return;
  }
  for_each_dim([]<int D, bool C>() {
    CAPTURE(D);
    CAPTURE(C);
    using Cfg = examples::FlashBwdTmaConfig<D>;
    using KV = examples::FlashBwdKVTma<Cfg::kv_block_m, Cfg::kv_block_n, D, C, tj::bf16>;
    using Q = examples::FlashBwdQTma<Cfg::q_block_m, Cfg::q_block_n, D, C, tj::bf16>;
    const auto kv =
        tj::compile_for_arch<KV>("sm_90a", {.num_warps = Cfg::kv_warps, .num_stages = Cfg::kv_stages, .warp_specialize = Cfg::kv_ws});
    const auto qk =
        tj::compile_for_arch<Q>("sm_90a", {.num_warps = Cfg::q_warps, .num_stages = Cfg::q_stages, .warp_specialize = Cfg::q_ws});
    CHECK(!kv.binary.bytes.empty());
    CHECK(!qk.binary.bytes.empty());
    // The fused schedule: the dK/dV tiles with dQ's atomics.
    using F = examples::FlashBwdFusedTma<Cfg::kv_block_m, Cfg::kv_block_n, D, C, tj::bf16>;
    CHECK(!tj::compile_for_arch<F>("sm_90a", {.num_warps = Cfg::kv_warps, .num_stages = Cfg::kv_stages, .warp_specialize = Cfg::kv_ws})
               .binary.bytes.empty());
  });
  // f16 shares the code path; one config is enough to show it compiles.
  using Cfg = examples::FlashBwdTmaConfig<128>;
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashBwdKVTma<Cfg::kv_block_m, Cfg::kv_block_n, 128, true, tj::f16>>(
      "sm_90a", {.num_warps = Cfg::kv_warps, .num_stages = Cfg::kv_stages, .warp_specialize = Cfg::kv_ws}));
}

TEST_CASE("attention_backward_library_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  MESSAGE("compute capability ", dev.compute_capability(), ": ",
          dev.compute_capability() == 90 ? "the TMA kernels (flash_bwd_tma.hpp)" : "the pointer kernels (flash_bwd.hpp)");
  library_backward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, false);   // GQA group 4
  library_backward_case<tj::bf16>(dev, 2, 2, 2, 200, 64, true);
  library_backward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, false);   // D = 96 exact, GQA
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 130, 96, true);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 100, 128, false);  // 100 key rows in all: less than one 128-row box
  library_backward_case<tj::bf16>(dev, 2, 4, 2, 333, 128, true);
  library_backward_case<tj::f16>(dev, 1, 4, 2, 190, 128, true);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 150, 64, true, true);  // d_o not 16-byte aligned: the pointer kernels
  // NaN in the next batch's first rows of q, k, v and dO: the last head before it (S ragged) must not read them.
  library_backward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, true, false, true);
  library_backward_case<tj::bf16>(dev, 2, 2, 1, 300, 64, false, false, true);
  library_backward_case<tj::bf16>(dev, 2, 2, 2, 130, 96, true, false, true);
  // The fused schedule (automatic takes it only for full D = 64 on Hopper) and two-pass where automatic is fused.
  using Sched = examples::Attention<tj::bf16>::BwdSchedule;
  library_backward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, false, false, false, false, Sched::two_pass);
  library_backward_case<tj::bf16>(dev, 2, 2, 2, 200, 64, true, false, false, false, Sched::fused);
  library_backward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, true, false, true, false, Sched::fused);
  library_backward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, false, false, false, false, Sched::fused);
}

TEST_CASE("attention_library_decode_and_fused_backward_share_one_workspace_gpu") {
  // Decode's split partials and the fused backward's dQ accumulator live in one workspace of the Attention object:
  // each call must find it sized and laid out for itself whatever ran before — a small decode, then a fused backward
  // that grows it, then a decode with many splits (which may grow it again), then the backward once more.
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  using Sched = examples::Attention<tj::bf16>::BwdSchedule;
  examples::Attention<tj::bf16> attn(dev);
  decode_through<tj::bf16>(dev, attn, {300, 77}, 8, 2, 64, 320, 64);
  library_backward_case<tj::bf16>(dev, 2, 4, 2, 333, 128, true, false, false, false, Sched::fused, &attn);
  decode_through<tj::bf16>(dev, attn, {4000, 2500, 1}, 32, 8, 128, 4096, 64);  // 64 splits x 96 rows: 3.2 MB, the largest
  library_backward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, false, false, false, false, Sched::fused, &attn);
  attn.set_mma_sync_path(true);  // the off-Hopper kernels share it too
  decode_through<tj::bf16>(dev, attn, {1000, 33}, 4, 4, 96, 1024, 64);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 200, 128, true, false, false, true, Sched::fused, &attn);
}

TEST_CASE("attention_backward_library_off_hopper_gpu_matches_f64") {
  // The path of GPUs without wgmma (sm_80 .. sm_89), on Hopper through set_mma_sync_path: flash_bwd_tma.hpp's
  // kernels compiled without wgmma, their blocks through cp.async rings; the pointer kernels when d_o is unaligned.
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 80) {
    MESSAGE("no NVIDIA GPU of sm_80 or newer: skipping");
    return;
  }
  library_backward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, false, false, false, true);  // GQA group 4
  library_backward_case<tj::bf16>(dev, 2, 2, 2, 200, 64, true, false, false, true);
  library_backward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, false, false, false, true);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 130, 96, true, false, false, true);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 100, 128, false, false, false, true);
  library_backward_case<tj::f16>(dev, 2, 4, 2, 333, 128, true, false, false, true);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 64, 128, true, false, false, true);   // one key block
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 150, 64, true, true, false, true);    // d_o unaligned: pointer kernels
  library_backward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, true, false, true, true);   // NaN in the next batch
  // The schedules automatic does not take (fused_by_default: fused for full D = 64 and causal D = 128).
  using Sched = examples::Attention<tj::bf16>::BwdSchedule;
  library_backward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, false, false, false, true, Sched::two_pass);
  library_backward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, true, false, true, true, Sched::two_pass);
  library_backward_case<tj::bf16>(dev, 2, 2, 2, 200, 64, true, false, false, true, Sched::fused);
  library_backward_case<tj::bf16>(dev, 1, 2, 1, 130, 96, true, false, false, true, Sched::fused);
  library_backward_case<tj::f16>(dev, 1, 4, 2, 257, 128, false, false, false, true, examples::Attention<tj::f16>::BwdSchedule::fused);
}

TEST_CASE("attention_backward_library_off_hopper_kernels_compile_for_sm80") {
  // What Attention::backward runs on sm_80 .. sm_89 with aligned operands: FlashBwdKVTma and FlashBwdQTma, 64 x 64,
  // 4 warps, each loop's blocks through a 2-stage cp.async ring and the blocks loaded once in shared memory, all
  // read by mma.sync (no tensor maps, no wgmma).
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto check = [&]<class K>(int warps = 4) {
    const auto r = tj::compile_for_arch<K>("sm_80", {.num_warps = warps, .num_stages = 2, .cp_async_resident = true});
    CHECK(!r.binary.bytes.empty());
    auto said = [&](const std::string& text) {
      return std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [&](const std::string& d) { return d.find(text) != std::string::npos; });
    };
    CHECK(said("cp.async pipeline of 2 stage(s)"));
    CHECK(said("copied once by cp.async"));  // the blocks loaded once, outside the loops
  };
  check.template operator()<examples::FlashBwdKVTma<64, 64, 64, false, tj::bf16>>();
  check.template operator()<examples::FlashBwdQTma<64, 64, 64, true, tj::bf16>>();
  check.template operator()<examples::FlashBwdKVTma<64, 64, 96, true, tj::f16>>();
  check.template operator()<examples::FlashBwdQTma<64, 64, 96, false, tj::bf16>>();
  check.template operator()<examples::FlashBwdKVTma<64, 64, 128, true, tj::bf16>>();
  check.template operator()<examples::FlashBwdQTma<64, 64, 128, false, tj::f16>>();
  // The fused schedule's dK/dV + dQ kernels (64 x 128 on 8 warps at D = 64, 32 x 128 above).
  check.template operator()<examples::FlashBwdFusedTma<64, 128, 64, true, tj::bf16>>(8);
  check.template operator()<examples::FlashBwdFusedTma<32, 128, 96, false, tj::f16>>(8);
  check.template operator()<examples::FlashBwdFusedTma<32, 128, 128, true, tj::bf16>>(8);
}

TEST_CASE("attention_backward_off_hopper_resident_blocks_go_to_shared_memory") {
  // CompileOptions::cp_async_resident (what the library's off-Hopper backward sets): dK/dV's K and V, loaded once
  // outside the loops, are copied once by cp.async and read by ldmatrix at each use instead of living in registers
  // beside the accumulators — at D = 128 (sm_80) that takes ptxas's spill stores from 2180 bytes to 500.
  using K = examples::FlashBwdKVTma<64, 64, 128, false, tj::bf16>;
  const auto ir = tj::trace(K{});
  auto gen = [&](bool resident) {
    return tj::codegen::generate(ir, {}, tj::codegen::target_for("sm_80"),
                                 tj::codegen_options({.num_warps = 4, .num_stages = 2, .cp_async_resident = resident}));
  };
  const auto on = gen(true), off = gen(false);
  CHECK(testing::occurrences(on.source, "copied once by cp.async") == 2);
  CHECK(on.source.find("= tj_res") != std::string::npos);  // an ldmatrix base in the resident region
  CHECK(testing::has_diagnostic(on, "copied once by cp.async into 16384 bytes"));
  CHECK(on.dynamic_shared_bytes > off.dynamic_shared_bytes);
  CHECK(off.source.find("copied once by cp.async") == std::string::npos);
  auto spill = [](const std::optional<tj::runtime::JitResult>& r) {
    std::smatch m;
    REQUIRE(std::regex_search(r->log, m, std::regex(R"((\d+) bytes spill stores)")));
    return std::stoi(m[1]);
  };
  const auto a = testing::compile_for(on.source, "sm_80", "kv128_resident.cu", {"--ptxas-options=-v"});
  const auto b = testing::compile_for(off.source, "sm_80", "kv128_registers.cu", {"--ptxas-options=-v"});
  if (!a || !b) return;  // no NVRTC
  MESSAGE("dK/dV D = 128 spill stores: ", spill(b), " bytes in registers, ", spill(a), " resident");
  CHECK(spill(a) < 1024);
  CHECK(spill(a) * 3 < spill(b));
}
