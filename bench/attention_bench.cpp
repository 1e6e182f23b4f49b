// Attention on the device, B=4, H=32, S=4096, bf16; TFLOP/s counts 4·B·H·S²·D
// for the forward (2.5x that for the backward: FlashAttention-2's convention),
// halved for causal (the convention of ../shared/ANCHORS.md). Baselines (torch
// SDPA flash and cuDNN backends, forward and backward) come from
// bench/attention_baselines.py in the same call.
//
//   BM_FlashFwd/D{64,96,128}/{full,causal}   examples/attention/flash_fwd.hpp
//   BM_FlashFwdTma/D{64,96,128}/{full,causal}/BN/stages   examples/attention/flash_fwd_tma.hpp (Hopper: TMA + wgmma)
//   BM_FlashFwdTmaPadded/D96/...             the same on heads zero-padded to 128
//   BM_FlashFwdTmaOverlap/...                FlashAttnFwdTmaOverlap: next scores in flight during the softmax
//   BM_FlashFwdPingPong[NoTurns]/...         FlashAttnFwdTmaPingPong (FlashAttention-3's order) with a producer warp
//                                            group and (NoTurns: without) the ping-pong named barriers
//   BM_FlashFwdTmaWs/...                     FlashAttnFwdTma with a producer warp group (warp_specialize)
//   BM_FlashFwdPingPongEvenN/...             FlashAttnFwdTmaPingPongEvenN: no key masked (S a multiple of BLOCK_N)
//   BM_FlashFwd{PingPong,Tma}Edge/...        FlashAttnFwdTma{PingPong,}Edge: only the edge key blocks masked
//   BM_FlashFwdPersistent[EvenN]/...         flash_fwd_persistent.hpp: PingPongEdge's body (EvenN: no key masked) in
//                                            one program per SM walking the (query block, head) items; causal
//                                            heaviest first in sections of heads sized for L2 (Sec1: one KV head
//                                            per section; SecAll: one section, global heaviest-first order;
//                                            Padded: D = 96 run by the D = 128 kernel on zero-padded heads)
//   BM_FlashFwdPadded/D96                    D = 96 run as the D = 128 kernel on zero-padded heads
//                                            (TFLOP/s still counts D = 96: the exact tile's gain is the time ratio)
//   BM_FlashBwd/D{64,128}/{full,causal}      flash_bwd.hpp, pointer loads (3 launches; the library's path off Hopper)
//   BM_FlashBwdTma/D{64,128}/{full,causal}   flash_bwd_tma.hpp (Hopper: TMA + wgmma) with FlashBwdTmaConfig<D>
//   BM_FlashBwdTma/D64/full/kv.../q...       a sweep of its dK/dV and dQ tiles and stages (per-launch ms counters)
//   BM_AttnForward/D{64,96,128}/{full,causal} examples::Attention<bf16>::forward, the library call
//   BM_AttnForward{per_item,persistent}/...  the same with FwdSchedule::per_item / ::persistent (the default,
//                                            automatic, takes persistent at D = 64 and for full D = 128)
//   BM_AttnBackward/D{64,128}/{full,causal}  examples::Attention<bf16>::backward, the library call
//   BM_AttnBackward{TwoPass,Fused,Sm80TwoPass,Sm80Fused}/...  the same with each BwdSchedule, on Hopper and on the
//                                            mma.sync path (set_mma_sync_path)
//   BM_FlashBwdFused[Sm80]/D.../kv...        FlashBwdFusedTma's tiles launched directly (dQ by atomics)
//   BM_Decode/{llama3_8b,phi3_mini}[/chunk]  one token per sequence against a 32K cache (the library's split, or a
//                                            fixed split size: the sweep that picks it); GB/s of K and V read and
//                                            its fraction of the copy bandwidth measured in the same run
//   BM_DecodePointer/..., BM_DecodeTma/.../s{3,4ws,5ws}  the decode kernels launched directly: the pointer
//                                            kernel (FlashDecodeSplit) and the Hopper one (FlashDecodeSplitTma)
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "examples/attention/attention.hpp"
#include "examples/attention/flash_fwd.hpp"
#include "examples/attention/flash_fwd_persistent.hpp"
#include "examples/attention/flash_bwd_tma.hpp"
#include "examples/attention/flash_fwd_tma.hpp"
#include "tilejit/tilejit.hpp"

namespace tj = tilejit;
namespace {

tj::Device& gpu() {
  static tj::Device d = tj::Device::best();
  return d;
}

/// Time `run` on the GPU (one warm-up, then one event-timed run per iteration) and report TFLOP/s for `flops`
/// floating-point operations per run.
template <class Run>
void time_tflops(benchmark::State& st, Run run, double flops) {
  run();
  gpu().synchronize();
  for (auto _ : st) st.SetIterationTime(gpu().time_ms({}, run) / 1e3);
  st.counters["TFLOP/s"] = benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

/// Whether the forward inputs are drawn from N(0, 1), as torch.randn draws bench/attention_baselines.py's (set
/// TJ_BENCH_INPUTS=normal), instead of uniformly from [-1, 1). The data moves the tensor cores' power draw and with it
/// the clock under sustained load: compare against a baseline run on the same distribution (docs/perf.md v0.34).
bool normal_inputs() {
  const char* e = std::getenv("TJ_BENCH_INPUTS");
  return e && std::string(e) == "normal";
}

/// Forward inputs, B=4, H=32, S=4096, bf16: q, k, v, o [B·H, S, DK] whose first D columns of each row are
/// random in [-1, 1) (or N(0, 1): normal_inputs) and the rest zero (DK > D: heads zero-padded to DK), and lse
/// [B·H, S]; freed on destruction. flops(): 4·B·H·S²·D, halved for causal (D, not DK: padding does no useful work).
template <int D, int DK = D>
struct FwdData {
  static constexpr int B = 4, H = 32, S = 4096;
  static constexpr std::size_t n = static_cast<std::size_t>(B) * H * S * DK;
  tj::bf16 *q, *k, *v, *o;
  float* lse;
  FwdData() {
    std::vector<tj::bf16> h(n, tj::bf16(0.0f));
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> u(-1, 1);
    std::normal_distribution<float> nd(0, 1);
    const bool normal = normal_inputs();
    for (std::size_t r = 0; r < n / DK; ++r)
      for (int d = 0; d < D; ++d) h[r * DK + d] = tj::bf16(normal ? nd(g) : u(g));
    auto up = [&] {
      auto* p = static_cast<tj::bf16*>(gpu().alloc(n * 2));
      gpu().copy_to_device(p, h.data(), n * 2);
      return p;
    };
    q = up(), k = up(), v = up(), o = up();
    lse = static_cast<float*>(gpu().alloc(static_cast<std::size_t>(B) * H * S * 4));
  }
  ~FwdData() { gpu().free(q), gpu().free(k), gpu().free(v), gpu().free(o), gpu().free(lse); }
  FwdData(const FwdData&) = delete;
  FwdData& operator=(const FwdData&) = delete;
  static double flops(bool causal) { return 4.0 * B * H * double(S) * S * D / (causal ? 2 : 1); }
};

/// The library call, `examples::Attention<bf16>::forward` (on the H200: the configuration it picks per head dim
/// and mask, docs/perf.md v0.5).
template <int D, bool CAUSAL, examples::Attention<tj::bf16>::FwdSchedule SCHEDULE = examples::Attention<tj::bf16>::FwdSchedule::automatic>
void BM_AttnForward(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D> x;
  constexpr int B = FwdData<D>::B, H = FwdData<D>::H, S = FwdData<D>::S;
  examples::Attention<tj::bf16> attn(gpu());
  attn.set_forward_schedule(SCHEDULE);
  const examples::AttnShape shape{.batch = B, .heads_q = H, .heads_kv = H, .seqlen = S, .head_dim = D, .causal = CAUSAL};
  time_tflops(st, [&] { attn.forward(x.q, x.k, x.v, x.o, x.lse, shape); }, x.flops(CAUSAL));
}

/// The library call REPS times back to back in one timed region: the host's work per call (descriptors, lookups,
/// the launch) overlaps the previous call's kernel, as in a model's forward pass.
template <int D, bool CAUSAL, int REPS = 10>
void BM_AttnForwardBackToBack(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D> x;
  constexpr int B = FwdData<D>::B, H = FwdData<D>::H, S = FwdData<D>::S;
  examples::Attention<tj::bf16> attn(gpu());
  const examples::AttnShape shape{.batch = B, .heads_q = H, .heads_kv = H, .seqlen = S, .head_dim = D, .causal = CAUSAL};
  time_tflops(st, [&] { for (int r = 0; r < REPS; ++r) attn.forward(x.q, x.k, x.v, x.o, x.lse, shape); }, REPS * x.flops(CAUSAL));
}

/// The forward at head dim D, run by the kernel for head dim DK >= D on heads zero-padded to DK
/// (DK = D: the exact kernel). TFLOP/s always counts D.
template <int D, bool CAUSAL, int DK = D>
void BM_FlashFwd(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D, DK> x;
  constexpr int B = FwdData<D, DK>::B, H = FwdData<D, DK>::H, S = FwdData<D, DK>::S;
  auto kern = tj::compile<examples::FlashAttnFwd<64, 64, DK, CAUSAL, tj::bf16>>(gpu(), {.num_warps = 4});
  const float scale = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  time_tflops(st, [&] { kern.launch(tj::Grid{S / 64, B * H}, x.q, x.k, x.v, x.o, x.lse, S, 1, scale); }, x.flops(CAUSAL));
}

/// The library's packed (varlen) forward, `Attention::forward_varlen`, over FwdData's buffers read as [16384, 32, D]:
/// 7 sequences of 4096, 1000, 3096, 2048, 512, 1536 and 4096 tokens (16384 in all). On the H200 FlashAttnFwdVarlenTma;
/// POINTER: the masked pointer kernel it ran before (set_mma_sync_path turns the Hopper path off). TFLOP/s counts
/// 4·H·len²·D per sequence, halved for causal.
template <int D, bool CAUSAL, bool POINTER = false>
void BM_AttnForwardVarlen(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D> x;
  constexpr int H = FwdData<D>::H;
  const std::vector<std::int32_t> lens{4096, 1000, 3096, 2048, 512, 1536, 4096};
  std::vector<std::int32_t> cu{0};
  double flops = 0;
  for (int l : lens) cu.push_back(cu.back() + l), flops += 4.0 * H * double(l) * l * D / (CAUSAL ? 2 : 1);
  auto* dcu = static_cast<std::int32_t*>(gpu().alloc(cu.size() * 4));
  gpu().copy_to_device(dcu, cu.data(), cu.size() * 4);
  examples::Attention<tj::bf16> attn(gpu());
  attn.set_mma_sync_path(POINTER);
  const examples::AttnShape shape{.batch = static_cast<long long>(lens.size()), .heads_q = H, .heads_kv = H, .seqlen = 4096,
                                  .head_dim = D, .causal = CAUSAL};
  time_tflops(st, [&] { attn.forward_varlen(x.q, x.k, x.v, x.o, x.lse, dcu, cu.back(), shape); }, flops);
  gpu().free(dcu);
}

/// The library call off Hopper's wgmma path (Attention::set_mma_sync_path: what an A100 runs, compiled for sm_90).
template <int D, bool CAUSAL>
void BM_AttnForwardMmaSync(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D> x;
  constexpr int B = FwdData<D>::B, H = FwdData<D>::H, S = FwdData<D>::S;
  examples::Attention<tj::bf16> attn(gpu());
  attn.set_mma_sync_path(true);
  const examples::AttnShape shape{.batch = B, .heads_q = H, .heads_kv = H, .seqlen = S, .head_dim = D, .causal = CAUSAL};
  time_tflops(st, [&] { attn.forward(x.q, x.k, x.v, x.o, x.lse, shape); }, x.flops(CAUSAL));
}

/// The Hopper forward (flash_fwd_tma.hpp: TMA, wgmma with P in registers): head dim D run by the kernel for
/// DK >= D on zero-padded heads (DK = D: exact); BLOCK_M = 16 x warps, BLOCK_N = BN, num_stages = STAGES.
/// WS: 1 = a producer warp (CompileOptions::warp_specialize), 2 = that and the ping-pong schedule.
template <int D, bool CAUSAL, int BM, int BN, int STAGES, int DK = D,
          template <int, int, int, bool, class> class Kernel = examples::FlashAttnFwdTma, int WS = 0, bool OVERLAP = true>
void BM_FlashFwdTma(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  constexpr int WARPS = BM / 16;  // one warp group per 64 query rows
  const FwdData<D, DK> x;
  constexpr int B = FwdData<D, DK>::B, H = FwdData<D, DK>::H, S = FwdData<D, DK>::S;
  using Desc = tj::TensorDescriptor;
  const long long rows = static_cast<long long>(B) * H * S;
  const Desc dq(gpu(), x.q, tj::DType::bf16, {rows, DK}, {DK, 1}, {BM, DK});
  const Desc dk(gpu(), x.k, tj::DType::bf16, {rows, DK}, {DK, 1}, {BN, DK});
  const Desc dv(gpu(), x.v, tj::DType::bf16, {rows, DK}, {DK, 1}, {BN, DK});
  auto kern = tj::compile<Kernel<BM, BN, DK, CAUSAL, tj::bf16>>(
      gpu(), {.num_warps = WARPS, .num_stages = STAGES, .warp_specialize = WS >= 1, .pingpong = WS == 2, .overlap_register_wgmma = OVERLAP});
  const float scale = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  time_tflops(st, [&] { kern.launch(tj::Grid{S / BM, B * H}, dq, dk, dv, x.o, x.lse, S, 1, scale); }, x.flops(CAUSAL));
  st.SetLabel(fmt::format("{}x{} stages {}{}{}{}", BM, BN, STAGES, DK != D ? fmt::format(", padded to {}", DK) : "",
                          WS == 2 ? ", producer warp + ping-pong" : WS == 1 ? ", producer warp" : "", OVERLAP ? "" : ", P.V waited at once"));
}

/// The forward off Hopper's wgmma path, compiled for "sm_90" (no "a") as for an A100: mma.sync everywhere.
/// CP: flash_fwd_tma.hpp, whose K and V blocks a cp.async ring of STAGES copies (ldmatrix reads K, ldmatrix .trans
/// V), BM x BN with WARPS warps; !CP: flash_fwd.hpp (pointer loads, 64 x 64, 4 warps — what the library runs off
/// Hopper). torch's flash backend (FlashAttention-2: mma.sync and cp.async on every GPU) is its baseline.
/// EDGE: FlashAttnFwdTmaEdge (only the last key block of a ragged S, or the diagonal ones, masked: the library's
/// full-attention kernel) instead of FlashAttnFwdTma (every block masked).
template <int D, bool CAUSAL, bool CP, int BM = 64, int BN = 64, int STAGES = 2, int WARPS = 4, bool EDGE = false>
void BM_FlashFwdSm80(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D> x;
  constexpr int B = FwdData<D>::B, H = FwdData<D>::H, S = FwdData<D>::S;
  const float scale = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  if constexpr (CP) {
    using Desc = tj::TensorDescriptor;
    const long long rows = static_cast<long long>(B) * H * S;
    const Desc dq(gpu(), x.q, tj::DType::bf16, {rows, D}, {D, 1}, {BM, D});
    const Desc dk(gpu(), x.k, tj::DType::bf16, {rows, D}, {D, 1}, {BN, D});
    const Desc dv(gpu(), x.v, tj::DType::bf16, {rows, D}, {D, 1}, {BN, D});
    using K = std::conditional_t<EDGE, examples::FlashAttnFwdTmaEdge<BM, BN, D, CAUSAL, tj::bf16>,
                                 examples::FlashAttnFwdTma<BM, BN, D, CAUSAL, tj::bf16>>;
    auto kern = tj::compile<K>(gpu(), {.num_warps = WARPS, .num_stages = STAGES, .arch = "sm_90"});
    time_tflops(st, [&] { kern.launch(tj::Grid{S / BM, B * H}, dq, dk, dv, x.o, x.lse, S, 1, scale); }, x.flops(CAUSAL));
    st.SetLabel(fmt::format("sm_90 mma.sync, cp.async ring: {}x{}, {} warps, {} stages{}", BM, BN, WARPS, STAGES,
                            EDGE ? ", edge blocks masked" : ""));
  } else {
    auto kern = tj::compile<examples::FlashAttnFwd<64, 64, D, CAUSAL, tj::bf16>>(gpu(), {.num_warps = 4, .arch = "sm_90"});
    time_tflops(st, [&] { kern.launch(tj::Grid{S / 64, B * H}, x.q, x.k, x.v, x.o, x.lse, S, 1, scale); }, x.flops(CAUSAL));
    st.SetLabel("sm_90 mma.sync, pointer loads: 64x64, 4 warps");
  }
}

/// The persistent Hopper forward (flash_fwd_persistent.hpp) at 128 x 128, 2 stages, a producer warp group, as
/// the library would run it: its schedule table for min(items, SMs) programs. MASK: edge_blocks or none (EvenN);
/// SECTION_MIB: the table's causal section size in MiB of K and V (0: the default, kFwdSectionBytes). DK > D: head dim D run
/// by the DK kernel on zero-padded heads (TFLOP/s counts D).
/// BM: query rows per item (192: three consumer warp groups, num_warps = 12). PP: the two consumer warp groups take
/// turns over their products (CompileOptions::pingpong), from item to item.
template <int D, bool CAUSAL, examples::KeyMask MASK = examples::KeyMask::edge_blocks, int SECTION_MIB = 0, int DK = D, int BM = 128,
          bool PP = false, int BN = 128, int STAGES = 2, int KV_RANK = 2>
void BM_FlashFwdPersistent(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const FwdData<D, DK> x;
  constexpr int B = FwdData<D, DK>::B, H = FwdData<D, DK>::H, S = FwdData<D, DK>::S;
  using Desc = tj::TensorDescriptor;
  const long long rows = static_cast<long long>(B) * H * S;
  const Desc dq(gpu(), x.q, tj::DType::bf16, {rows, DK}, {DK, 1}, {BM, DK});
  // KV_RANK 3: K and V as [B·H, S, DK] with bounds per head, as the library passes them.
  auto kv = [&](tj::bf16* p) {
    return KV_RANK == 3 ? Desc(gpu(), p, tj::DType::bf16, {B * H, S, DK}, {static_cast<long long>(S) * DK, DK, 1}, {1, BN, DK})
                        : Desc(gpu(), p, tj::DType::bf16, {rows, DK}, {DK, 1}, {BN, DK});
  };
  const Desc dk = kv(x.k), dv = kv(x.v);
  using K = examples::FlashAttnFwdTmaPersistent<BM, BN, DK, CAUSAL, tj::bf16, MASK, KV_RANK>;
  auto kern = tj::compile<K>(gpu(), {.num_warps = BM / 16, .num_stages = STAGES, .warp_specialize = true, .pingpong = PP});
  const auto table = examples::fwd_item_table({.seqlen = S, .heads_q = B * H, .head_dim = DK, .block_m = BM, .block_n = BN,
                                               .causal = CAUSAL, .programs = gpu().num_sms(),
                                               .section_bytes = SECTION_MIB > 0 ? (SECTION_MIB * 1LL) << 20 : examples::kFwdSectionBytes});
  const std::size_t bytes = table.data.size() * sizeof(std::int32_t);
  auto* items = static_cast<std::int32_t*>(gpu().alloc(bytes));
  gpu().copy_to_device(items, table.data.data(), bytes);
  const float scale = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  time_tflops(st, [&] { kern.launch(table.grid(), dq, dk, dv, x.o, x.lse, items, S, 1, scale); }, x.flops(CAUSAL));
  gpu().free(items);
  st.SetLabel(fmt::format("{}x{} stages {}, producer warp, {} programs{}", BM, BN, STAGES, table.programs, PP ? ", ping-pong" : ""));
}

/// Inputs of a backward run: random q, k, v, dO (B=4, H=32, S=4096, bf16), O and LSE from the forward, and
/// gradient / delta buffers; freed on destruction.
template <int D, bool CAUSAL>
struct BwdData {
  static constexpr int B = 4, H = 32, S = 4096;
  std::size_t n = static_cast<std::size_t>(B) * H * S * D, rows = static_cast<std::size_t>(B) * H * S;
  std::vector<tj::bf16*> bufs;
  tj::bf16 *q, *k, *v, *o, *d_o, *dq, *dk, *dv;
  float *lse, *delta;
  examples::AttnShape shape{.batch = B, .heads_q = H, .heads_kv = H, .seqlen = S, .head_dim = D, .causal = CAUSAL};
  BwdData() {
    std::vector<tj::bf16> h(n);
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& x : h) x = tj::bf16(u(g));
    auto up = [&] {
      auto* p = static_cast<tj::bf16*>(gpu().alloc(n * 2));
      gpu().copy_to_device(p, h.data(), n * 2);
      bufs.push_back(p);
      return p;
    };
    q = up(), k = up(), v = up(), o = up(), d_o = up(), dq = up(), dk = up(), dv = up();
    lse = static_cast<float*>(gpu().alloc(rows * 4));
    delta = static_cast<float*>(gpu().alloc(rows * 4));
    examples::Attention<tj::bf16>(gpu()).forward(q, k, v, o, lse, shape);
  }
  ~BwdData() {
    for (auto* p : bufs) gpu().free(p);
    gpu().free(lse), gpu().free(delta);
  }
  BwdData(const BwdData&) = delete;
  BwdData& operator=(const BwdData&) = delete;
  /// Time `run` and report TFLOP/s: 2.5x the forward's FLOPs (FlashAttention-2's convention), halved for causal.
  template <class Run>
  void time(benchmark::State& st, Run run) const {
    time_tflops(st, run, 2.5 * 4.0 * B * H * double(S) * S * D / (CAUSAL ? 2 : 1));
  }
};

/// The pointer-load backward (flash_bwd.hpp: delta, dK/dV and dQ with 64 x 64 blocks, 4 warps), what
/// `Attention::backward` runs off Hopper or with q, k, v, d_o not 16-byte aligned. TFLOP/s as BwdData::time.
/// SM80: compiled for "sm_90" (no "a": mma.sync, what an A100 runs).
template <int D, bool CAUSAL, bool SM80 = false>
void BM_FlashBwd(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const BwdData<D, CAUSAL> b;
  constexpr int B = BwdData<D, CAUSAL>::B, H = BwdData<D, CAUSAL>::H, S = BwdData<D, CAUSAL>::S;
  const std::string arch = SM80 ? "sm_90" : "";
  auto pre = tj::compile<examples::FlashBwdPreprocess<64, D, tj::bf16>>(gpu(), {.num_warps = 4, .arch = arch});
  auto kv = tj::compile<examples::FlashBwdKV<64, 64, D, CAUSAL, tj::bf16>>(gpu(), {.num_warps = 4, .arch = arch});
  auto qk = tj::compile<examples::FlashBwdQ<64, 64, D, CAUSAL, tj::bf16>>(gpu(), {.num_warps = 4, .arch = arch});
  const float sc = static_cast<float>(1.0 / std::sqrt(double(D))), sc2 = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  b.time(st, [&] {
    pre.launch(tj::Grid{S / 64, B * H}, b.o, b.d_o, b.delta, S);
    kv.launch(tj::Grid{S / 64, B * H}, b.q, b.k, b.v, b.d_o, b.lse, b.delta, b.dk, b.dv, S, 1, sc, sc2);
    qk.launch(tj::Grid{S / 64, B * H}, b.q, b.k, b.v, b.d_o, b.lse, b.delta, b.dq, S, 1, sc, sc2);
  });
}

/// The library call, `examples::Attention<bf16>::backward` (on the H200: flash_bwd_tma.hpp with
/// FlashBwdTmaConfig<D>; the argument checks and descriptor encodings are inside the timed call).
/// SCHED: the backward schedule (automatic, two_pass, fused); MMA_SYNC: the path of GPUs without wgmma
/// (set_mma_sync_path), what an A100 runs.
template <int D, bool CAUSAL, examples::Attention<tj::bf16>::BwdSchedule SCHED = examples::Attention<tj::bf16>::BwdSchedule::automatic,
          bool MMA_SYNC = false>
void BM_AttnBackward(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const BwdData<D, CAUSAL> b;
  examples::Attention<tj::bf16> attn(gpu());
  attn.set_backward_schedule(SCHED);
  attn.set_mma_sync_path(MMA_SYNC);
  b.time(st, [&] { attn.backward(b.q, b.k, b.v, b.o, b.d_o, b.lse, b.delta, b.dq, b.dk, b.dv, b.shape); });
  st.SetLabel(gpu().compute_capability() == 90 ? (MMA_SYNC ? "mma.sync + cp.async kernels" : "TMA kernels") : "pointer kernels");
}

/// The fused backward (FlashBwdFusedTma: dK, dV and dQ's atomics in one launch, KV_BN keys resident on KV_BN / 16
/// warps, KV_BM-row Q / dO blocks, KV_ST stages; WS: a producer warp group) with its delta, zeroing of the dQ
/// accumulator and rounding launch. SM80 / RES as BM_FlashBwdTma. Counter "kv ms": the fused launch alone.
template <int D, bool CAUSAL, int KV_BM, int KV_BN, int KV_ST, bool WS, bool SM80, bool RES>
void BM_FlashBwdFused(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const BwdData<D, CAUSAL> b;
  constexpr int B = BwdData<D, CAUSAL>::B, H = BwdData<D, CAUSAL>::H, S = BwdData<D, CAUSAL>::S;
  using Desc = tj::TensorDescriptor;
  const long long heads = static_cast<long long>(b.rows) / S;
  auto desc = [&](tj::bf16* p, int rows) { return Desc(gpu(), p, tj::DType::bf16, {heads, S, D}, {S * D, D, 1}, {1, rows, D}); };
  const Desc kv_k = desc(b.k, KV_BN), kv_v = desc(b.v, KV_BN), kv_q = desc(b.q, KV_BM), kv_do = desc(b.d_o, KV_BM);
  const std::string arch = SM80 ? "sm_90" : "";
  auto pre = tj::compile<examples::FlashBwdPreprocess<64, D, tj::bf16>>(gpu(), {.num_warps = 4, .arch = arch});
  auto fused = tj::compile<examples::FlashBwdFusedTma<KV_BM, KV_BN, D, CAUSAL, tj::bf16>>(
      gpu(), {.num_warps = KV_BN / 16, .num_stages = KV_ST, .arch = arch, .warp_specialize = WS, .cp_async_resident = RES});
  auto cvt = tj::compile<examples::FlashBwdDqConvert<KV_BM, D, tj::bf16>>(gpu(), {.num_warps = 4, .arch = arch});
  const float sc = static_cast<float>(1.0 / std::sqrt(double(D))), sc2 = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  const std::size_t acc_bytes = b.rows * D * 4;
  auto* acc = static_cast<float*>(gpu().alloc(acc_bytes));
  auto run_fused = [&] { fused.launch(tj::Grid{S / KV_BN, B * H}, kv_k, kv_v, kv_q, kv_do, b.lse, b.delta, b.dk, b.dv, acc, S, 1, sc, sc2); };
  b.time(st, [&] {
    pre.launch(tj::Grid{S / 64, B * H}, b.o, b.d_o, b.delta, S);
    gpu().memset(acc, 0, acc_bytes);
    run_fused();
    cvt.launch(tj::Grid{S / KV_BM, B * H}, acc, b.dq, S, sc);
  });
  double kv_ms = 0;
  for (int i = 0; i < 5; ++i) kv_ms += gpu().time_ms({}, run_fused) / 5;
  st.counters["kv ms"] = kv_ms;
  gpu().free(acc);
  st.SetLabel(fmt::format("fused kv {}x{} s{}{}{}{}", KV_BM, KV_BN, KV_ST, WS ? " ws" : "", SM80 ? ", sm_90 mma.sync + cp.async" : "",
                          RES ? ", resident blocks in shared memory" : ""));
}

/// The Hopper backward (flash_bwd_tma.hpp): delta, then dK/dV (KV_BN keys resident, KV_BN / 16 warps, KV_BM-row
/// Q / dO blocks, KV_ST stages) and dQ (Q_BM queries resident, Q_BM / 16 warps, Q_BN-row K / V blocks, Q_ST
/// stages); by default the library's FlashBwdTmaConfig<D>. TFLOP/s as BwdData::time; the counters "kv ms" and
/// "q ms" time each of the two launches alone (mean of 5 runs after the timed loop), so one run of the sweep
/// below finds the best dK/dV and the best dQ configuration separately.
template <int D, bool CAUSAL, int KV_BM = examples::FlashBwdTmaConfig<D>::kv_block_m, int KV_BN = examples::FlashBwdTmaConfig<D>::kv_block_n,
          int KV_ST = examples::FlashBwdTmaConfig<D>::kv_stages, int Q_BM = examples::FlashBwdTmaConfig<D>::q_block_m,
          int Q_BN = examples::FlashBwdTmaConfig<D>::q_block_n, int Q_ST = examples::FlashBwdTmaConfig<D>::q_stages, int WS = 0,
          bool SM80 = false, bool RES = false>
void BM_FlashBwdTma(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const BwdData<D, CAUSAL> b;
  constexpr int B = BwdData<D, CAUSAL>::B, H = BwdData<D, CAUSAL>::H, S = BwdData<D, CAUSAL>::S;
  using Desc = tj::TensorDescriptor;
  const long long heads = static_cast<long long>(b.rows) / S;  // rank 3: [B·H, S, D], bounds per head
  auto desc = [&](tj::bf16* p, int rows) { return Desc(gpu(), p, tj::DType::bf16, {heads, S, D}, {S * D, D, 1}, {1, rows, D}); };
  const Desc kv_k = desc(b.k, KV_BN), kv_v = desc(b.v, KV_BN), kv_q = desc(b.q, KV_BM), kv_do = desc(b.d_o, KV_BM);
  const Desc q_q = desc(b.q, Q_BM), q_do = desc(b.d_o, Q_BM), q_k = desc(b.k, Q_BN), q_v = desc(b.v, Q_BN);
  const std::string arch = SM80 ? "sm_90" : "";  // sm_90: the blocks through cp.async rings, mma.sync
  auto pre = tj::compile<examples::FlashBwdPreprocess<64, D, tj::bf16>>(gpu(), {.num_warps = 4, .arch = arch});
  auto kv = tj::compile<examples::FlashBwdKVTma<KV_BM, KV_BN, D, CAUSAL, tj::bf16>>(
      gpu(), {.num_warps = KV_BN / 16, .num_stages = KV_ST, .arch = arch, .warp_specialize = (WS & 1) != 0, .cp_async_resident = RES});
  auto qk = tj::compile<examples::FlashBwdQTma<Q_BM, Q_BN, D, CAUSAL, tj::bf16>>(
      gpu(), {.num_warps = Q_BM / 16, .num_stages = Q_ST, .arch = arch, .warp_specialize = (WS & 2) != 0, .cp_async_resident = RES});
  const float sc = static_cast<float>(1.0 / std::sqrt(double(D))), sc2 = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  auto run_kv = [&] { kv.launch(tj::Grid{S / KV_BN, B * H}, kv_k, kv_v, kv_q, kv_do, b.lse, b.delta, b.dk, b.dv, S, 1, sc, sc2); };
  auto run_q = [&] { qk.launch(tj::Grid{S / Q_BM, B * H}, q_q, q_do, q_k, q_v, b.lse, b.delta, b.dq, S, 1, sc, sc2); };
  b.time(st, [&] {
    pre.launch(tj::Grid{S / 64, B * H}, b.o, b.d_o, b.delta, S);
    run_kv();
    run_q();
  });
  double kv_ms = 0, q_ms = 0;
  for (int i = 0; i < 5; ++i) kv_ms += gpu().time_ms({}, run_kv) / 5, q_ms += gpu().time_ms({}, run_q) / 5;
  st.counters["kv ms"] = kv_ms;
  st.counters["q ms"] = q_ms;
  st.SetLabel(fmt::format("kv {}x{} s{}{}, q {}x{} s{}{}{}{}", KV_BM, KV_BN, KV_ST, (WS & 1) ? " ws" : "", Q_BM, Q_BN, Q_ST,
                          (WS & 2) ? " ws" : "", SM80 ? ", sm_90 mma.sync + cp.async" : "", RES ? ", resident blocks in shared memory" : ""));
}

/// Decode inputs: B sequences of `len` cached tokens (caches [B, Hkv, len, D], bf16, the same random values in
/// k and v), one query token each, and the copy bandwidth of this process (1 GiB device to device, bytes read +
/// written). Kept between rows of the same shape (the Phi-3-mini caches are 1.5 GB each), freed on a new shape.
struct DecodeData {
  long long Hq, Hkv, D, len, B;
  tj::bf16 *k = nullptr, *v = nullptr, *q = nullptr, *o = nullptr;
  float* lse = nullptr;
  std::int32_t* dlen = nullptr;
  std::size_t cache = 0;
  DecodeData(long long Hq_, long long Hkv_, long long D_, long long len_, long long B_) : Hq(Hq_), Hkv(Hkv_), D(D_), len(len_), B(B_) {
    cache = static_cast<std::size_t>(B * Hkv * len * D);
    // 16M random values, repeated over the caches (the values do not change the time).
    std::vector<tj::bf16> h(std::size_t(1) << 24);
    std::mt19937 g(std::random_device{}());
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& x : h) x = tj::bf16(u(g));
    k = static_cast<tj::bf16*>(gpu().alloc(cache * 2));
    v = static_cast<tj::bf16*>(gpu().alloc(cache * 2));
    for (std::size_t at = 0; at < cache; at += h.size()) {
      const std::size_t n = std::min(h.size(), cache - at);
      gpu().copy_to_device(k + at, h.data(), n * 2);
      gpu().copy_to_device(v + at, h.data(), n * 2);
    }
    q = static_cast<tj::bf16*>(gpu().alloc(static_cast<std::size_t>(B * Hq * D) * 2));
    o = static_cast<tj::bf16*>(gpu().alloc(static_cast<std::size_t>(B * Hq * D) * 2));
    gpu().copy_to_device(q, h.data(), static_cast<std::size_t>(B * Hq * D) * 2);
    lse = static_cast<float*>(gpu().alloc(static_cast<std::size_t>(B * Hq) * 4));
    std::vector<std::int32_t> lens(static_cast<std::size_t>(B), static_cast<std::int32_t>(len));
    dlen = static_cast<std::int32_t*>(gpu().alloc(lens.size() * 4));
    gpu().copy_to_device(dlen, lens.data(), lens.size() * 4);
  }
  ~DecodeData() { gpu().free(k), gpu().free(v), gpu().free(q), gpu().free(o), gpu().free(lse), gpu().free(dlen); }
  DecodeData(const DecodeData&) = delete;
  DecodeData& operator=(const DecodeData&) = delete;
  double kv_bytes() const { return 2.0 * double(cache) * 2; }
  /// The inputs of this shape (one shape kept at a time).
  static DecodeData& get(long long Hq, long long Hkv, long long D, long long len, long long B) {
    static std::unique_ptr<DecodeData> held;
    if (!held || held->Hq != Hq || held->Hkv != Hkv || held->D != D || held->len != len || held->B != B) {
      held.reset();
      held = std::make_unique<DecodeData>(Hq, Hkv, D, len, B);
    }
    return *held;
  }
  /// The copy ceiling, measured once in this process: 1 GiB device-to-device, bytes read + written.
  static double copy_tbs() {
    static const double tbs = [] {
      const std::size_t cb = std::size_t(1) << 30;
      void* a = gpu().alloc(cb);
      void* b = gpu().alloc(cb);
      gpu().time_copies(b, a, cb, 2);
      const double t = 2.0 * double(cb) / (gpu().time_copies(b, a, cb, 5) / 5 * 1e-3) / 1e12;
      gpu().free(a), gpu().free(b);
      return t;
    }();
    return tbs;
  }
};

/// Time `run` (one decode) and report the K and V bytes read per second and their fraction of the copy bandwidth.
template <class Run>
void time_decode(benchmark::State& st, const DecodeData& d, Run run) {
  run();
  gpu().synchronize();
  const double copy = DecodeData::copy_tbs();
  double total_ms = 0;
  for (auto _ : st) {
    const double ms = gpu().time_ms({}, run);
    total_ms += ms;
    st.SetIterationTime(ms / 1e3);
  }
  const double tbs = d.kv_bytes() / (total_ms / double(st.iterations()) * 1e-3) / 1e12;
  st.counters["KV TB/s"] = tbs;
  st.counters["of copy"] = tbs / copy;
}

/// Decode through the library call (examples::Attention<bf16>::decode: FlashDecodeSplitTma on an H200): B
/// sequences of `len` cached tokens, one query token each; Hq / Hkv / D of the model; `chunk` keys per split
/// (0: the library's choice).
void BM_Decode(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long long Hq = st.range(0), Hkv = st.range(1), D = st.range(2), len = st.range(3), B = st.range(4), chunk = st.range(5);
  auto& d = DecodeData::get(Hq, Hkv, D, len, B);
  examples::Attention<tj::bf16> attn(gpu());
  const examples::AttnShape shape{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = 1, .head_dim = D};
  time_decode(st, d, [&] { attn.decode(d.q, d.k, d.v, d.dlen, d.o, d.lse, shape, len, chunk); });
}

/// BM_Decode with `tokens` new query tokens per sequence (the 7th argument: speculative decoding's draft tokens,
/// causal among themselves); the KV bytes counted are the same (every key is read once per program).
void BM_DecodeTokens(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long long Hq = st.range(0), Hkv = st.range(1), D = st.range(2), len = st.range(3), B = st.range(4), chunk = st.range(5),
                  tokens = st.range(6);
  auto& d = DecodeData::get(Hq, Hkv, D, len, B);
  const std::size_t n = static_cast<std::size_t>(B * tokens * Hq * D);
  std::vector<tj::bf16> h(n);
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : h) x = tj::bf16(u(g));
  auto* q = static_cast<tj::bf16*>(gpu().alloc(n * 2));
  auto* o = static_cast<tj::bf16*>(gpu().alloc(n * 2));
  auto* lse = static_cast<float*>(gpu().alloc(static_cast<std::size_t>(B * tokens * Hq) * 4));
  gpu().copy_to_device(q, h.data(), n * 2);
  examples::Attention<tj::bf16> attn(gpu());
  const examples::AttnShape shape{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = 1, .head_dim = D};
  time_decode(st, d, [&] { attn.decode(q, d.k, d.v, d.dlen, o, lse, shape, len, chunk, tokens); });
  gpu().free(q), gpu().free(o), gpu().free(lse);
  st.SetLabel(fmt::format("{} tokens", tokens));
}

/// The two decode launches without the library: the split kernel (FlashDecodeSplit, the pointer path: STAGES = 0;
/// else FlashDecodeSplitTma<64, D> with STAGES stages and, WS, a producer warp group), then FlashDecodeReduce.
/// `chunk` 0: the library's choice for that path (two programs per SM for the pointer kernel, one for TMA).
template <int D, int STAGES, bool WS>
void BM_DecodeKernels(benchmark::State& st) {
  if (gpu().backend() != tj::Backend::cuda) return st.SkipWithError("no GPU");
  const long long Hq = st.range(0), Hkv = st.range(1), len = st.range(3), B = st.range(4);
  long long chunk = st.range(5);
  auto& d = DecodeData::get(Hq, Hkv, D, len, B);
  const long long programs = B * Hkv;
  if (chunk <= 0) {
    const long long splits = STAGES ? std::max<long long>(1, std::min<long long>(64, gpu().num_sms() / programs))
                                    : std::max<long long>(1, std::min<long long>(64, tj::cdiv(2LL * gpu().num_sms(), programs)));
    chunk = std::max<long long>(64, tj::cdiv(tj::cdiv(len, splits), 64) * 64);
  }
  const long long splits = tj::cdiv(len, chunk);
  auto* ws = static_cast<float*>(gpu().alloc(static_cast<std::size_t>(splits * B * Hq * (D + 2)) * 4));
  float *o_part = ws, *ml_part = ws + splits * B * Hq * D;
  const float sl2 = static_cast<float>(1.4426950408889634 / std::sqrt(double(D)));
  auto reduce = tj::compile<examples::FlashDecodeReduce<D, tj::bf16>>(gpu(), {.num_warps = 1});
  const tj::Grid grid{programs, splits};
  if constexpr (STAGES == 0) {
    auto split = tj::compile<examples::FlashDecodeSplit<64, D, tj::bf16>>(gpu(), {.num_warps = 4});
    time_decode(st, d, [&] {
      split.launch(grid, d.q, d.k, d.v, d.dlen, o_part, ml_part, Hq, Hq / Hkv, len, chunk, 1, sl2);
      reduce.launch(tj::Grid{B * Hq}, o_part, ml_part, d.o, d.lse, splits);
    });
  } else {
    const tj::TensorDescriptor dk(gpu(), d.k, tj::DType::bf16, {B * Hkv * len, D}, {D, 1}, {64, D});
    const tj::TensorDescriptor dv(gpu(), d.v, tj::DType::bf16, {B * Hkv * len, D}, {D, 1}, {64, D});
    auto split = tj::compile<examples::FlashDecodeSplitTma<64, D, tj::bf16, 64, false>>(
        gpu(), {.num_warps = 4, .num_stages = STAGES, .warp_specialize = WS});
    time_decode(st, d, [&] {
      split.launch(grid, d.q, dk, dv, d.v, d.dlen, o_part, ml_part, Hq, Hq / Hkv, len, chunk, 1, sl2);
      reduce.launch(tj::Grid{B * Hq}, o_part, ml_part, d.o, d.lse, splits);
    });
  }
  st.SetLabel(fmt::format("chunk {} ({} splits)", chunk, splits));
  gpu().free(ws);
}

}  // namespace

BENCHMARK(BM_FlashFwd<96, false, 128>)->Name("BM_FlashFwdPadded/D96")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardMmaSync<64, false>)->Name("BM_AttnForwardMmaSync/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardMmaSync<64, true>)->Name("BM_AttnForwardMmaSync/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardMmaSync<96, false>)->Name("BM_AttnForwardMmaSync/D96/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardMmaSync<96, true>)->Name("BM_AttnForwardMmaSync/D96/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardMmaSync<128, false>)->Name("BM_AttnForwardMmaSync/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardMmaSync<128, true>)->Name("BM_AttnForwardMmaSync/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, false>)->Name("BM_FlashFwdSm80/D64/full/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true>)->Name("BM_FlashFwdSm80/D64/full/cp.async")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true, 128, 64, 2, 8>)->Name("BM_FlashFwdSm80/D64/full/cp.async/128x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, false>)->Name("BM_FlashFwdSm80/D128/full/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true>)->Name("BM_FlashFwdSm80/D128/full/cp.async")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 128, 64, 2, 8>)->Name("BM_FlashFwdSm80/D128/full/cp.async/128x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, false>)->Name("BM_FlashFwdSm80/D128/causal/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, true>)->Name("BM_FlashFwdSm80/D128/causal/cp.async")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true, 128, 64, 2, 4>)->Name("BM_FlashFwdSm80/D64/full/cp.async/128x64/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true, 128, 128, 2, 4>)->Name("BM_FlashFwdSm80/D64/full/cp.async/128x128/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 128, 64, 2, 4>)->Name("BM_FlashFwdSm80/D128/full/cp.async/128x64/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, true, 128, 64, 2, 8>)->Name("BM_FlashFwdSm80/D128/causal/cp.async/128x64/8w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, true, 128, 64, 2, 4>)->Name("BM_FlashFwdSm80/D128/causal/cp.async/128x64/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 64, 64, 2, 4>)->Name("BM_FlashFwdSm80/D96/full/cp.async/64x64/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 2, 8>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/8w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 2, 4>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 64, 64, 2, 4>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/64x64/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 128, 64, 2, 8>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/128x64/8w")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 64, 128, 2, 4>)->Name("BM_FlashFwdSm80/D96/full/cp.async/64x128/4w")->UseManualTime()->Unit(benchmark::kMillisecond);
// Deeper cp.async rings (v0.23): with 2 stages the refill of iteration i + 1 is issued at the end of iteration i
// and waited for at the start of i + 1, so only other programs on the SM hide its latency.
BENCHMARK(BM_FlashFwdSm80<64, false, true, 64, 64, 3, 4>)->Name("BM_FlashFwdSm80/D64/full/cp.async/64x64/4w/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, true, true, 64, 64, 3, 4>)->Name("BM_FlashFwdSm80/D64/causal/cp.async/64x64/4w/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 3, 8>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/8w/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 4, 8>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/8w/4st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 64, 64, 3, 4>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/64x64/4w/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 64, 64, 4, 4>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/64x64/4w/4st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 128, 64, 3, 8>)->Name("BM_FlashFwdSm80/D128/full/cp.async/128x64/8w/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, true, 64, 64, 3, 4>)->Name("BM_FlashFwdSm80/D128/causal/cp.async/64x64/4w/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true, 64, 64, 3, 4, true>)->Name("BM_FlashFwdSm80/D64/full/cp.async/64x64/4w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true, 128, 64, 3, 4, true>)->Name("BM_FlashFwdSm80/D64/full/cp.async/128x64/4w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 3, 8, true>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/8w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 3, 4, true>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/4w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 64, 64, 3, 4, true>)->Name("BM_FlashFwdSm80/D96/full/cp.async/64x64/4w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 128, 64, 3, 8, true>)->Name("BM_FlashFwdSm80/D128/full/cp.async/128x64/8w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 64, 64, 3, 4, true>)->Name("BM_FlashFwdSm80/D128/full/cp.async/64x64/4w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 128, 64, 3, 4, true>)->Name("BM_FlashFwdSm80/D128/full/cp.async/128x64/4w/3st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
// Two stages refilled at the top of the iteration (codegen top_refill, v0.23): the tiles again.
BENCHMARK(BM_FlashFwdSm80<64, false, true, 64, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D64/full/cp.async/64x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, false, true, 128, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D64/full/cp.async/128x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 2, 8, true>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/8w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 128, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D96/full/cp.async/128x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, false, true, 64, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D96/full/cp.async/64x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 64, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D128/full/cp.async/64x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, false, true, 128, 64, 2, 8, true>)->Name("BM_FlashFwdSm80/D128/full/cp.async/128x64/8w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, true, true, 64, 64, 2, 4>)->Name("BM_FlashFwdSm80/D64/causal/cp.async/64x64/4w/2st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, true, true, 128, 64, 2, 4>)->Name("BM_FlashFwdSm80/D64/causal/cp.async/128x64/4w/2st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 64, 64, 2, 4>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/64x64/4w/2st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 128, 64, 2, 4>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/128x64/4w/2st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, true, 64, 64, 2, 4>)->Name("BM_FlashFwdSm80/D128/causal/cp.async/64x64/4w/2st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<64, true, true, 64, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D64/causal/cp.async/64x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<96, true, true, 64, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D96/causal/cp.async/64x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdSm80<128, true, true, 64, 64, 2, 4, true>)->Name("BM_FlashFwdSm80/D128/causal/cp.async/64x64/4w/2st/edge")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<64, false>)->Name("BM_FlashBwd/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<64, true>)->Name("BM_FlashBwd/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<128, false>)->Name("BM_FlashBwd/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<128, true>)->Name("BM_FlashBwd/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, false>)->Name("BM_FlashBwdTma/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, true>)->Name("BM_FlashBwdTma/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, false>)->Name("BM_FlashBwdTma/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, true>)->Name("BM_FlashBwdTma/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
// Off Hopper (compiled for sm_90, no "a"): the pointer kernels the library runs there, and flash_bwd_tma.hpp's
// kernels with their blocks through cp.async rings (v0.23).
BENCHMARK(BM_FlashBwd<64, false, true>)->Name("BM_FlashBwdSm80/D64/full/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<128, false, true>)->Name("BM_FlashBwdSm80/D128/full/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, false, 64, 64, 2, 64, 64, 2, 0, true>)->Name("BM_FlashBwdSm80/D64/full/ring/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, false, 64, 64, 2, 128, 64, 2, 0, true>)->Name("BM_FlashBwdSm80/D64/full/ring/kv64x64/q128x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, false, 64, 64, 2, 64, 64, 2, 0, true>)->Name("BM_FlashBwdSm80/D128/full/ring/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<64, true, true>)->Name("BM_FlashBwdSm80/D64/causal/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwd<128, true, true>)->Name("BM_FlashBwdSm80/D128/causal/pointer")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, true, 64, 64, 2, 64, 64, 2, 0, true>)->Name("BM_FlashBwdSm80/D64/causal/ring/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, true, 64, 64, 2, 128, 64, 2, 0, true>)->Name("BM_FlashBwdSm80/D64/causal/ring/kv64x64/q128x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, true, 64, 64, 2, 64, 64, 2, 0, true>)->Name("BM_FlashBwdSm80/D128/causal/ring/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
// The same with the blocks read once (K, V of dK/dV; Q, dO of dQ) copied to shared memory once (cp_async_resident:
// what Attention::backward runs off Hopper) instead of held in registers.
BENCHMARK(BM_FlashBwdTma<64, false, 64, 64, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D64/full/resident/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, false, 64, 64, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D128/full/resident/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, true, 64, 64, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D64/causal/resident/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, true, 64, 64, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D128/causal/resident/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, false, 64, 64, 2, 128, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D128/full/resident/kv64x64/q128x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, false, 64, 128, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D128/full/resident/kv64x128/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<64, false, 32, 128, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D64/full/resident/kv32x128/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<96, false, 64, 64, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D96/full/resident/kv64x64/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<96, false, 32, 128, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D96/full/resident/kv32x128/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdTma<128, false, 32, 128, 2, 64, 64, 2, 0, true, true>)->Name("BM_FlashBwdSm80/D128/full/resident/kv32x128/q64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
#define TJ_VARLEN(D, C, NAME)                                                                                        \
  BENCHMARK(BM_AttnForwardVarlen<D, C>)->Name("BM_AttnForwardVarlen/D" #D "/" NAME)->UseManualTime()->Unit(benchmark::kMillisecond); \
  BENCHMARK(BM_AttnForwardVarlen<D, C, true>)->Name("BM_AttnForwardVarlenPointer/D" #D "/" NAME)->UseManualTime()->Unit(benchmark::kMillisecond)
TJ_VARLEN(64, false, "full");
TJ_VARLEN(64, true, "causal");
TJ_VARLEN(128, false, "full");
TJ_VARLEN(128, true, "causal");
BENCHMARK(BM_AttnForward<64, false>)->Name("BM_AttnForward/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<64, true>)->Name("BM_AttnForward/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<96, false>)->Name("BM_AttnForward/D96/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<96, true>)->Name("BM_AttnForward/D96/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<128, false>)->Name("BM_AttnForward/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<128, true>)->Name("BM_AttnForward/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<256, false>)->Name("BM_AttnForward/D256/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForward<256, true>)->Name("BM_AttnForward/D256/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
#define TJ_ATTN_SCHEDULE(D, C, NAME, SCHED)                                                                    \
  BENCHMARK(BM_AttnForward<D, C, examples::Attention<tj::bf16>::FwdSchedule::SCHED>)                              \
      ->Name("BM_AttnForward" #SCHED "/D" #D "/" NAME)                                                           \
      ->UseManualTime()                                                                                          \
      ->Unit(benchmark::kMillisecond)
#define TJ_ATTN_SCHEDULES(D, C, NAME)     \
  TJ_ATTN_SCHEDULE(D, C, NAME, per_item); \
  TJ_ATTN_SCHEDULE(D, C, NAME, persistent)
TJ_ATTN_SCHEDULES(64, false, "full");
TJ_ATTN_SCHEDULES(64, true, "causal");
TJ_ATTN_SCHEDULES(96, false, "full");
TJ_ATTN_SCHEDULES(96, true, "causal");
TJ_ATTN_SCHEDULES(128, false, "full");
TJ_ATTN_SCHEDULES(128, true, "causal");
TJ_ATTN_SCHEDULES(256, false, "full");
TJ_ATTN_SCHEDULES(256, true, "causal");
// The persistent forward beside BM_FlashFwdPingPongEdge (same body, one program per item); EvenN: no key masked;
// causal section sizes: one KV head (Sec1: LPT within each head, as the one-program-per-item grid orders its
// blocks) and one section for all heads (SecAll: global LPT, no L2 grouping).
#define TJ_PERSISTENT(D, C, NAME, KNAME, ...)                                                                    \
  BENCHMARK(BM_FlashFwdPersistent<D, C __VA_OPT__(, ) __VA_ARGS__>)                                              \
      ->Name("BM_FlashFwdPersistent" KNAME "/D" #D "/" NAME "/128x128/2")                                        \
      ->UseManualTime()                                                                                          \
      ->Unit(benchmark::kMillisecond)
TJ_PERSISTENT(64, false, "full", "");
TJ_PERSISTENT(64, true, "causal", "");
TJ_PERSISTENT(96, false, "full", "");
TJ_PERSISTENT(96, true, "causal", "");
TJ_PERSISTENT(128, false, "full", "");
TJ_PERSISTENT(128, true, "causal", "");
TJ_PERSISTENT(64, false, "full", "EvenN", examples::KeyMask::none);
TJ_PERSISTENT(96, false, "full", "EvenN", examples::KeyMask::none);
TJ_PERSISTENT(128, false, "full", "EvenN", examples::KeyMask::none);
TJ_PERSISTENT(64, true, "causal", "Sec1", examples::KeyMask::edge_blocks, 1);
TJ_PERSISTENT(128, true, "causal", "Sec1", examples::KeyMask::edge_blocks, 1);
TJ_PERSISTENT(64, true, "causal", "SecAll", examples::KeyMask::edge_blocks, 1 << 30);
TJ_PERSISTENT(128, true, "causal", "SecAll", examples::KeyMask::edge_blocks, 1 << 30);
TJ_PERSISTENT(96, false, "full", "Padded", examples::KeyMask::edge_blocks, 0, 128);
TJ_PERSISTENT(96, true, "causal", "Padded", examples::KeyMask::edge_blocks, 0, 128);
// The two consumer warp groups taking turns over their products (ping-pong), continuing from item to item.
TJ_PERSISTENT(64, true, "causal", "PP", examples::KeyMask::edge_blocks, 0, 64, 128, true);
TJ_PERSISTENT(96, true, "causal", "PP", examples::KeyMask::edge_blocks, 0, 96, 128, true);
TJ_PERSISTENT(128, true, "causal", "PP", examples::KeyMask::edge_blocks, 0, 128, 128, true);
TJ_PERSISTENT(64, false, "full", "EvenNPP", examples::KeyMask::none, 0, 64, 128, true);
TJ_PERSISTENT(96, false, "full", "EvenNPP", examples::KeyMask::none, 0, 96, 128, true);
TJ_PERSISTENT(128, false, "full", "EvenNPP", examples::KeyMask::none, 0, 128, 128, true);
// FlashAttention-3 takes 128 x 176 at D = 128 (full): a wider key block amortises each step's rescale and waits.
// 176 = 16 x 11 is no radix we have; 144 = 16 x 9 fits the shared memory (160 does not, with the last V's buffer).
BENCHMARK(BM_FlashFwdPersistent<128, false, examples::KeyMask::edge_blocks, 0, 128, 128, false, 144>)
    ->Name("BM_FlashFwdPersistent/D128/full/128x144/2")->UseManualTime()->Unit(benchmark::kMillisecond);
// 192-row items: three consumer warp groups (num_warps = 12, a radix-3 warp digit), FlashAttention-3's D = 64 tile.
BENCHMARK(BM_FlashFwdPersistent<64, false, examples::KeyMask::none, 0, 64, 192>)->Name("BM_FlashFwdPersistentEvenN/D64/full/192x128/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<64, true, examples::KeyMask::edge_blocks, 0, 64, 192>)->Name("BM_FlashFwdPersistent/D64/causal/192x128/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, false, examples::KeyMask::none, 0, 96, 192>)->Name("BM_FlashFwdPersistentEvenN/D96/full/192x128/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, true, examples::KeyMask::edge_blocks, 0, 96, 192>)->Name("BM_FlashFwdPersistent/D96/causal/192x128/2")->UseManualTime()->Unit(benchmark::kMillisecond);
// The same with 96-key blocks: no spill at D = 64 (both masks) nor at D = 96 full with 3 stages (ptxas gives the
// consumers the 160 registers setmaxnreg asks for; 128-key blocks spill 72 bytes at D = 64 causal).
BENCHMARK(BM_FlashFwdPersistent<64, false, examples::KeyMask::edge_blocks, 0, 64, 192, false, 96>)->Name("BM_FlashFwdPersistent/D64/full/192x96/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<64, true, examples::KeyMask::edge_blocks, 0, 64, 192, false, 96>)->Name("BM_FlashFwdPersistent/D64/causal/192x96/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, false, examples::KeyMask::edge_blocks, 0, 96, 192, false, 96, 3>)->Name("BM_FlashFwdPersistent/D96/full/192x96/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, true, examples::KeyMask::edge_blocks, 0, 96, 192, false, 96, 3>)->Name("BM_FlashFwdPersistent/D96/causal/192x96/3")->UseManualTime()->Unit(benchmark::kMillisecond);
// v0.30: the library's D = 64 kernels with rank-3 K and V (as the library passes them), and the library called back to
// back (host work overlapped).
BENCHMARK(BM_FlashFwdPersistent<64, false, examples::KeyMask::none, 0, 64, 192, false, 128, 2, 3>)->Name("BM_FlashFwdPersistentEvenN/D64/full/192x128/2/rank3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<64, false, examples::KeyMask::none, 0, 64, 128, false, 128, 2, 3>)->Name("BM_FlashFwdPersistentEvenN/D64/full/128x128/2/rank3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardBackToBack<64, false>)->Name("BM_AttnForwardBackToBack/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardBackToBack<64, true>)->Name("BM_AttnForwardBackToBack/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnForwardBackToBack<128, false>)->Name("BM_AttnForwardBackToBack/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
// v0.30: 192-row items with 64-key blocks at D = 96 and 128 (S 48 and P 24 registers per consumer thread: no spill at
// 160 registers since v0.29's descriptors left the vector registers).
BENCHMARK(BM_FlashFwdPersistent<128, false, examples::KeyMask::none, 0, 128, 192, false, 64>)->Name("BM_FlashFwdPersistentEvenN/D128/full/192x64/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<128, true, examples::KeyMask::edge_blocks, 0, 128, 192, false, 64>)->Name("BM_FlashFwdPersistent/D128/causal/192x64/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, false, examples::KeyMask::none, 0, 96, 192, false, 64, 3>)->Name("BM_FlashFwdPersistentEvenN/D96/full/192x64/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, true, examples::KeyMask::edge_blocks, 0, 96, 192, false, 64, 3>)->Name("BM_FlashFwdPersistent/D96/causal/192x64/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnBackward<64, false>)->Name("BM_AttnBackward/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnBackward<64, true>)->Name("BM_AttnBackward/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnBackward<128, false>)->Name("BM_AttnBackward/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttnBackward<128, true>)->Name("BM_AttnBackward/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
// The library's two backward schedules on both paths (Hopper; mma.sync, what an A100 runs).
#define TJ_BWD_SCHED(D, C, NAME)                                                                                                  \
  BENCHMARK(BM_AttnBackward<D, C, examples::Attention<tj::bf16>::BwdSchedule::two_pass>)                                          \
      ->Name("BM_AttnBackwardTwoPass/D" #D "/" NAME)->UseManualTime()->Unit(benchmark::kMillisecond);                             \
  BENCHMARK(BM_AttnBackward<D, C, examples::Attention<tj::bf16>::BwdSchedule::fused>)                                             \
      ->Name("BM_AttnBackwardFused/D" #D "/" NAME)->UseManualTime()->Unit(benchmark::kMillisecond);                               \
  BENCHMARK(BM_AttnBackward<D, C, examples::Attention<tj::bf16>::BwdSchedule::two_pass, true>)                                    \
      ->Name("BM_AttnBackwardSm80TwoPass/D" #D "/" NAME)->UseManualTime()->Unit(benchmark::kMillisecond);                         \
  BENCHMARK(BM_AttnBackward<D, C, examples::Attention<tj::bf16>::BwdSchedule::fused, true>)                                       \
      ->Name("BM_AttnBackwardSm80Fused/D" #D "/" NAME)->UseManualTime()->Unit(benchmark::kMillisecond)
TJ_BWD_SCHED(64, false, "full");
TJ_BWD_SCHED(64, true, "causal");
TJ_BWD_SCHED(128, false, "full");
TJ_BWD_SCHED(128, true, "causal");
// Fused tiles: off Hopper (sm_90 without "a": mma.sync, cp.async, resident K and V) and on Hopper.
// Hopper: at D = 128 dQ's share [64, 128] is split between the two consumer warp groups along D (m64n64 each).
BENCHMARK(BM_FlashBwdFused<128, false, 64, 128, 2, true, false, false>)->Name("BM_FlashBwdFused/D128/full/kv64x128/ws")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, true, 64, 128, 2, true, false, false>)->Name("BM_FlashBwdFused/D128/causal/kv64x128/ws")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, false, 64, 128, 2, false, false, false>)->Name("BM_FlashBwdFused/D128/full/kv64x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, false, 64, 128, 3, true, false, false>)->Name("BM_FlashBwdFused/D128/full/kv64x128/ws/3st")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<64, false, 64, 64, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D64/full/kv64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<64, false, 64, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D64/full/kv64x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, false, 64, 64, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D128/full/kv64x64")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, false, 64, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D128/full/kv64x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<64, false, 32, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D64/full/kv32x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<96, false, 32, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D96/full/kv32x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, false, 32, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D128/full/kv32x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<64, true, 64, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D64/causal/kv64x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<64, true, 32, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D64/causal/kv32x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, true, 32, 128, 2, false, true, true>)->Name("BM_FlashBwdFusedSm80/D128/causal/kv32x128")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<64, false, 64, 64, 3, false, false, false>)->Name("BM_FlashBwdFused/D64/full/kv64x64/s3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashBwdFused<128, false, 64, 128, 2, true, false, false>)->Name("BM_FlashBwdFused/D128/full/kv64x128/s2ws")->UseManualTime()->Unit(benchmark::kMillisecond);
// With a producer warp group (warp_specialize) for dK/dV (WS 1), dQ (2) or both (3), the library's tiles.
#define TJ_BWD_WS(D, C, NAME, WS)                                                                                   \
  BENCHMARK(BM_FlashBwdTma<D, C, examples::FlashBwdTmaConfig<D>::kv_block_m, examples::FlashBwdTmaConfig<D>::kv_block_n, \
                           examples::FlashBwdTmaConfig<D>::kv_stages, examples::FlashBwdTmaConfig<D>::q_block_m,            \
                           examples::FlashBwdTmaConfig<D>::q_block_n, examples::FlashBwdTmaConfig<D>::q_stages, WS>)         \
      ->Name("BM_FlashBwdTmaWs" #WS "/D" #D "/" NAME)                                                             \
      ->UseManualTime()                                                                                           \
      ->Unit(benchmark::kMillisecond)
TJ_BWD_WS(64, false, "full", 1);
TJ_BWD_WS(64, false, "full", 2);
TJ_BWD_WS(64, false, "full", 3);
TJ_BWD_WS(64, true, "causal", 3);
TJ_BWD_WS(128, false, "full", 1);
TJ_BWD_WS(128, false, "full", 2);
TJ_BWD_WS(128, false, "full", 3);
TJ_BWD_WS(128, true, "causal", 3);
// D = 64 full, the one shape below torch flash (240.6 vs 258.0 TFLOP/s): dK/dV and dQ configurations around the
// first library config (kv 64x128 s2, q 128x64 s2), each varied with the other kept (the winners, kv 64x64 s3 and
// q s3, are now FlashBwdTmaConfig<64>); "kv ms" / "q ms" pick each launch's best.
// Left out: kv 128x128 (255 registers and 128-byte spills in the specialisation this run compiles).
#define TJ_BWD_SWEEP(D, KV_BM, KV_BN, KV_ST, Q_BM, Q_BN, Q_ST)                                                       \
  BENCHMARK(BM_FlashBwdTma<D, false, KV_BM, KV_BN, KV_ST, Q_BM, Q_BN, Q_ST>)                                        \
      ->Name("BM_FlashBwdTma/D" #D "/full/kv" #KV_BM "x" #KV_BN "s" #KV_ST "/q" #Q_BM "x" #Q_BN "s" #Q_ST)          \
      ->UseManualTime()                                                                                           \
      ->Unit(benchmark::kMillisecond)
TJ_BWD_SWEEP(64, 64, 128, 3, 128, 64, 2);
TJ_BWD_SWEEP(64, 64, 64, 2, 128, 64, 2);
TJ_BWD_SWEEP(64, 64, 64, 3, 128, 64, 2);
TJ_BWD_SWEEP(64, 64, 128, 2, 128, 128, 2);
TJ_BWD_SWEEP(64, 64, 128, 2, 128, 64, 3);
TJ_BWD_SWEEP(64, 64, 128, 2, 64, 64, 2);
TJ_BWD_SWEEP(64, 64, 128, 2, 64, 128, 2);
// D = 128: the D = 64 winners (kv 64x64 s3, q s3) against the first library tiles (247 / 189 registers, no spills).
TJ_BWD_SWEEP(128, 64, 64, 3, 128, 64, 3);
TJ_BWD_SWEEP(128, 64, 128, 2, 128, 64, 3);
TJ_BWD_SWEEP(128, 64, 64, 3, 128, 64, 2);
// Llama-3-8B (32 query heads over 8 KV heads, D 128) and Phi-3-mini (32 heads, D 96), 32K cached tokens, 8 sequences.
// The last argument is the split size in keys (0: the library's choice). BM_Decode is the library call (on an
// H200: FlashDecodeSplitTma with FlashDecodeTmaConfig, about one program per SM); BM_DecodePointer the pointer
// kernel it takes elsewhere (two programs per SM); BM_DecodeTma/sN[ws] the TMA kernel with N stages and
// (ws) a producer warp group, at the library's split (the library runs s4ws).
// Rows of one shape run together (their inputs are kept between rows).
#define TJ_DECODE(NAME, ...) BENCHMARK(__VA_ARGS__)->Name(NAME)->UseManualTime()->Unit(benchmark::kMillisecond)
#define TJ_DECODE_ROWS(MODEL, D, ...)                                                                           \
  TJ_DECODE("BM_Decode/" MODEL, BM_Decode)->Args({__VA_ARGS__, 0});                                             \
  TJ_DECODE("BM_DecodePointer/" MODEL, BM_DecodeKernels<D, 0, false>)->Args({__VA_ARGS__, 0});                  \
  TJ_DECODE("BM_DecodeTma/" MODEL "/s3", BM_DecodeKernels<D, 3, false>)->Args({__VA_ARGS__, 0});                \
  TJ_DECODE("BM_DecodeTma/" MODEL "/s4ws", BM_DecodeKernels<D, 4, true>)->Args({__VA_ARGS__, 0});               \
  TJ_DECODE("BM_DecodeTma/" MODEL "/s5ws", BM_DecodeKernels<D, 5, true>)->Args({__VA_ARGS__, 0})
// The split size through the library (the TMA kernel on an H200, whose own choice on 132 SMs is 16384 keys for
// Llama-3-8B and 32768 for Phi-3-mini).
TJ_DECODE_ROWS("llama3_8b", 128, 32, 8, 128, 32768, 8);
// A few query tokens per sequence (1, 4 and 16: 4 to 64 rows of the group's tile), Llama-3-8B.
BENCHMARK(BM_DecodeTokens)
    ->Name("BM_DecodeTokens/llama3_8b")
    ->Args({32, 8, 128, 32768, 8, 0, 1})
    ->Args({32, 8, 128, 32768, 8, 0, 4})
    ->Args({32, 8, 128, 32768, 8, 0, 16})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Decode)
    ->Name("BM_Decode/llama3_8b/chunk")
    ->Args({32, 8, 128, 32768, 8, 4096})
    ->Args({32, 8, 128, 32768, 8, 1024})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
TJ_DECODE_ROWS("phi3_mini", 96, 32, 32, 96, 32768, 8);
BENCHMARK(BM_Decode)
    ->Name("BM_Decode/phi3_mini/chunk")
    ->Args({32, 32, 96, 32768, 8, 8192})
    ->Args({32, 32, 96, 32768, 8, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<64, false>)->Name("BM_FlashFwd/D64/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<64, true>)->Name("BM_FlashFwd/D64/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<96, false>)->Name("BM_FlashFwd/D96/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<96, true>)->Name("BM_FlashFwd/D96/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<128, false>)->Name("BM_FlashFwd/D128/full")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwd<128, true>)->Name("BM_FlashFwd/D128/causal")->UseManualTime()->Unit(benchmark::kMillisecond);
#define TJ_TMA(D, C, BM, BN, ST, NAME)                                                                          \
  BENCHMARK(BM_FlashFwdTma<D, C, BM, BN, ST>)                                                                     \
      ->Name("BM_FlashFwdTma/D" #D "/" NAME "/" #BM "x" #BN "/" #ST)                                              \
      ->UseManualTime()                                                                                           \
      ->Unit(benchmark::kMillisecond)
TJ_TMA(64, false, 128, 64, 3, "full");
TJ_TMA(64, false, 64, 64, 3, "full");
TJ_TMA(64, false, 64, 128, 2, "full");
TJ_TMA(64, true, 64, 64, 3, "causal");
TJ_TMA(96, false, 128, 64, 3, "full");
TJ_TMA(96, false, 64, 64, 3, "full");
TJ_TMA(96, false, 64, 128, 2, "full");
TJ_TMA(96, true, 64, 64, 3, "causal");
TJ_TMA(128, false, 128, 64, 3, "full");
TJ_TMA(128, false, 64, 64, 3, "full");
TJ_TMA(128, false, 64, 64, 2, "full");
TJ_TMA(128, false, 64, 128, 2, "full");
TJ_TMA(128, true, 64, 64, 3, "causal");
#define TJ_TMA_OVERLAP(D, C, BM, BN, ST, NAME)                                                                  \
  BENCHMARK(BM_FlashFwdTma<D, C, BM, BN, ST, D, examples::FlashAttnFwdTmaOverlap>)                                \
      ->Name("BM_FlashFwdTmaOverlap/D" #D "/" NAME "/" #BM "x" #BN "/" #ST)                                       \
      ->UseManualTime()                                                                                           \
      ->Unit(benchmark::kMillisecond)
TJ_TMA_OVERLAP(64, false, 128, 64, 3, "full");
TJ_TMA_OVERLAP(96, false, 128, 64, 3, "full");
TJ_TMA_OVERLAP(128, false, 128, 64, 3, "full");
TJ_TMA_OVERLAP(128, true, 128, 64, 3, "causal");
TJ_TMA(128, true, 128, 64, 3, "causal");
TJ_TMA(128, false, 128, 128, 2, "full");
#define TJ_TMA_WS(D, C, BM, BN, ST, NAME, K, WS, KNAME)                                                        \
  BENCHMARK(BM_FlashFwdTma<D, C, BM, BN, ST, D, K, WS>)                                                           \
      ->Name("BM_FlashFwd" KNAME "/D" #D "/" NAME "/" #BM "x" #BN "/" #ST)                                        \
      ->UseManualTime()                                                                                           \
      ->Unit(benchmark::kMillisecond)
// FlashAttention-3's schedule (flash_fwd_tma.hpp FlashAttnFwdTmaPingPong): producer warp + ping-pong.
TJ_TMA_WS(64, false, 128, 64, 2, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(64, true, 128, 64, 2, "causal", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(96, false, 128, 64, 2, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(96, true, 128, 64, 2, "causal", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(128, false, 128, 64, 2, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(128, false, 128, 64, 3, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(128, true, 128, 64, 2, "causal", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(128, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(64, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(64, false, 128, 64, 3, "full", examples::FlashAttnFwdTmaPingPong, 2, "PingPong");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
TJ_TMA_WS(128, false, 128, 64, 2, "full", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
TJ_TMA_WS(128, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
TJ_TMA_WS(96, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
TJ_TMA_WS(64, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
TJ_TMA_WS(64, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPong, 1, "PingPongNoTurns");
// No key masked (S = 4096 is a multiple of BLOCK_N): FlashAttnFwdTmaPingPongEvenN, producer warp group.
TJ_TMA_WS(64, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEvenN, 1, "PingPongEvenN");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEvenN, 1, "PingPongEvenN");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEvenN, 1, "PingPongEvenN");
// Only the edge blocks masked (the diagonal block for causal, the last block of a ragged S): FlashAttention-3's
// order (PingPongEdge) and the plain order (TmaEdge), producer warp group, no ping-pong turns.
TJ_TMA_WS(64, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(64, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(96, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(64, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(64, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(96, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(128, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
// D = 256: the library's 64-key blocks beside 80-key ones (16 x 5, FlashAttention-3's tile at D = 256), which fit
// the shared memory only in the plain order (FA3's order keeps the last V block apart: 40 KiB more).
TJ_TMA_WS(256, false, 128, 64, 2, "full", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(256, true, 128, 64, 2, "causal", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(256, false, 128, 80, 2, "full", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(256, true, 128, 80, 2, "causal", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
TJ_TMA_WS(256, false, 128, 64, 2, "full", examples::FlashAttnFwdTmaPingPongEvenN, 1, "PingPongEvenN");
TJ_TMA_WS(256, true, 128, 64, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
// The same with P_{j-1}.V_{j-1} waited for at once (overlap_register_wgmma = false: v0.5's code), and with the
// ping-pong turns; D = 96 on heads zero-padded to 128 (the exact tile's gain is the time ratio).
#define TJ_TMA_NOOVERLAP(D, C, NAME)                                                                            \
  BENCHMARK(BM_FlashFwdTma<D, C, 128, 128, 2, D, examples::FlashAttnFwdTmaPingPongEdge, 1, false>)                \
      ->Name("BM_FlashFwdPingPongEdgeNoOverlap/D" #D "/" NAME "/128x128/2")                                       \
      ->UseManualTime()                                                                                           \
      ->Unit(benchmark::kMillisecond)
TJ_TMA_NOOVERLAP(64, false, "full");
TJ_TMA_NOOVERLAP(64, true, "causal");
TJ_TMA_NOOVERLAP(96, false, "full");
TJ_TMA_NOOVERLAP(96, true, "causal");
TJ_TMA_NOOVERLAP(128, false, "full");
TJ_TMA_NOOVERLAP(128, true, "causal");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 2, "PingPongEdgeTurns");
TJ_TMA_WS(96, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 2, "PingPongEdgeTurns");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 2, "PingPongEdgeTurns");
TJ_TMA_WS(128, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 2, "PingPongEdgeTurns");
BENCHMARK(BM_FlashFwdTma<96, false, 128, 128, 2, 128, examples::FlashAttnFwdTmaPingPongEdge, 1>)->Name("BM_FlashFwdPingPongEdgePadded/D96/full/128x128/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdTma<96, true, 128, 128, 2, 128, examples::FlashAttnFwdTmaPingPongEdge, 1>)->Name("BM_FlashFwdPingPongEdgePadded/D96/causal/128x128/2")->UseManualTime()->Unit(benchmark::kMillisecond);
// Wider key blocks now that P is carried packed (32 registers at 128 x 128, not 64): BLOCK_N = 192 (64 x 3) at
// D = 64 cuts the per-iteration overhead (row max and sum, waits, stage hand-offs) per key by a third. (At D = 96
// they fit since v0.16's 64-byte slabs: rows below.)
TJ_TMA_WS(64, false, 128, 192, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(64, true, 128, 192, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(64, false, 128, 192, 3, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
// D = 128 with BLOCK_N = 96 (32 x 3) and 112 (16 x 7): exact mixed-radix tiles; the S and P registers shrink
// from 64 to 48 / 56 per thread, so P.V can stay in flight without spilling (128 x 128 spills 28-44 bytes).
TJ_TMA_WS(128, false, 128, 96, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, true, 128, 96, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, false, 128, 96, 3, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, true, 128, 96, 3, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, false, 128, 112, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, false, 128, 144, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");  // 16 x 9
TJ_TMA_WS(128, true, 128, 112, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(128, false, 128, 112, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 2, "PingPongEdgeTurns");
TJ_TMA_WS(128, false, 128, 96, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 2, "PingPongEdgeTurns");
TJ_TMA_WS(96, true, 128, 96, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(96, false, 128, 96, 3, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
// D = 64 causal (the library's weakest case): edge-masked kernels at BLOCK_N = 64, with and without a producer warp.
TJ_TMA_WS(64, true, 128, 64, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(64, true, 128, 64, 3, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(64, true, 128, 64, 3, "causal", examples::FlashAttnFwdTmaEdge, 0, "TmaEdgeNoWs");
TJ_TMA_WS(64, true, 128, 128, 2, "causal", examples::FlashAttnFwdTmaEdge, 0, "TmaEdgeNoWs");
TJ_TMA_WS(64, true, 128, 64, 3, "causal", examples::FlashAttnFwdTmaEdge, 1, "TmaEdge");
// The plain order (flash_fwd_tma.hpp FlashAttnFwdTma) with a producer warp group; BLOCK_N = 192 = 64 x 3 is exact.
TJ_TMA_WS(64, false, 128, 128, 2, "full", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(64, false, 128, 192, 2, "full", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(96, false, 128, 128, 2, "full", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(96, true, 128, 128, 2, "causal", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(128, false, 128, 128, 2, "full", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(128, false, 128, 192, 2, "full", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(128, true, 128, 128, 2, "causal", examples::FlashAttnFwdTma, 1, "TmaWs");
TJ_TMA_WS(128, false, 128, 64, 3, "full", examples::FlashAttnFwdTma, 1, "TmaWs");
BENCHMARK(BM_FlashFwdTma<96, false, 128, 64, 2, 128, examples::FlashAttnFwdTmaPingPong, 2>)->Name("BM_FlashFwdPingPongPadded/D96/full/128x64/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdTma<96, false, 128, 64, 3, 128>)->Name("BM_FlashFwdTmaPadded/D96/full/128x64/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdTma<96, false, 64, 64, 3, 128>)->Name("BM_FlashFwdTmaPadded/D96/full/64x64/3")->UseManualTime()->Unit(benchmark::kMillisecond);
// D = 96 held exactly in shared memory (three 64-byte slabs per row, the 64B swizzle; v0.16): 48 KiB per stage of
// K and V at BLOCK_N = 128 instead of 64, so a third stage or wider key blocks now fit (192 = 64 x 3: 204 KiB).
TJ_TMA_WS(96, false, 128, 128, 3, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(96, true, 128, 128, 3, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
TJ_TMA_WS(96, false, 128, 128, 3, "full", examples::FlashAttnFwdTmaPingPongEvenN, 1, "PingPongEvenN");
TJ_TMA_WS(96, false, 128, 144, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");  // 16 x 9
TJ_TMA_WS(96, false, 128, 160, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");  // 32 x 5
TJ_TMA_WS(96, false, 128, 192, 2, "full", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");  // 64 x 3
TJ_TMA_WS(96, true, 128, 192, 2, "causal", examples::FlashAttnFwdTmaPingPongEdge, 1, "PingPongEdge");
BENCHMARK(BM_FlashFwdPersistent<96, true, examples::KeyMask::edge_blocks, 0, 96, 128, false, 128, 3>)
    ->Name("BM_FlashFwdPersistent/D96/causal/128x128/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, true, examples::KeyMask::edge_blocks, 0, 96, 128, false, 192, 2>)
    ->Name("BM_FlashFwdPersistent/D96/causal/128x192/2")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FlashFwdPersistent<96, false, examples::KeyMask::none, 0, 96, 128, false, 128, 3>)
    ->Name("BM_FlashFwdPersistentEvenN/D96/full/128x128/3")->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
