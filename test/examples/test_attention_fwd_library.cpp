// The library forward, examples::Attention<T>::forward, against an f64
// reference on fresh random inputs: on the interpreter (the pointer kernel)
// and, on a GPU, whatever configuration the call picks there — on an H200 the
// warp-specialised TMA kernels of flash_fwd_tma.hpp (docs/perf.md v0.5). Every
// configuration the call can pick on sm_90a is also compiled by NVRTC here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "examples/attention/attention.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;
using examples::AttnShape;

namespace {

using Schedule = examples::Attention<tj::bf16>::FwdSchedule;  // (the same enumerators for every T)

/// shared: run on this Attention object (its kernels and persistent schedule table kept from earlier calls) instead
/// of a fresh one. nan_kv_head >= 0: V's first row in that KV head (of B·Hkv) is NaN; the query heads that read it are
/// not checked, every other head must come out finite and right (no key block reads another head's rows).
/// ramp: key j scaled by 0.25 + 4·j / S, so a row's scores grow along the keys and its running max is raised many
/// times by more than kAttnRescaleThreshold (otherwise, with random keys, the first block's max mostly stands).
template <class T>
void forward_case(const tj::Device& dev, int B, int Hq, int Hkv, int S, int D, bool causal, double tol,
                  Schedule schedule_bf16 = Schedule::automatic, examples::Attention<T>* shared = nullptr, bool mma_sync = false,
                  int nan_kv_head = -1, bool ramp = false) {
  const auto schedule = static_cast<typename examples::Attention<T>::FwdSchedule>(schedule_bf16);
  CAPTURE(static_cast<int>(schedule));
  CAPTURE(D);
  CAPTURE(S);
  CAPTURE(causal);
  CAPTURE(Hq);
  CAPTURE(Hkv);
  CAPTURE(testing::fresh_seed());
  const std::size_t nq = static_cast<std::size_t>(B) * Hq * S * D, nk = static_cast<std::size_t>(B) * Hkv * S * D;
  auto q = testing::random_tensor<T>(nq, 41, -2, 2), k = testing::random_tensor<T>(nk, 42, -2, 2), v = testing::random_tensor<T>(nk, 43, -2, 2);
  CAPTURE(nan_kv_head);
  CAPTURE(ramp);
  if (ramp)
    for (std::size_t i = 0; i < nk; ++i)
      k[i] = T(static_cast<float>(k[i]) * (0.25f + 4.0f * static_cast<float>((i / static_cast<std::size_t>(D)) % static_cast<std::size_t>(S)) / static_cast<float>(S)));
  if (nan_kv_head >= 0)
    for (int d = 0; d < D; ++d) v[static_cast<std::size_t>(nan_kv_head) * S * D + static_cast<std::size_t>(d)] = T(std::nanf(""));
  std::vector<T> o(nq);
  std::memset(static_cast<void*>(o.data()), 0xff, o.size() * sizeof(T));  // poison: NaN
  std::vector<float> lse(static_cast<std::size_t>(B) * Hq * S, std::nanf(""));
  const AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = S, .head_dim = D, .causal = causal};
  {
    testing::Mirror m{dev, {}};
    auto *pq = m.up(q), *pk = m.up(k), *pv = m.up(v), *po = m.up(o);
    auto* pl = m.up(lse);
    std::optional<examples::Attention<T>> own;
    if (!shared) {
      own.emplace(dev);
      CHECK(own->forward_schedule() == examples::Attention<T>::FwdSchedule::automatic);
    }
    examples::Attention<T>& attn = shared ? *shared : *own;
    attn.set_forward_schedule(schedule);
    if (mma_sync) attn.set_mma_sync_path(true);
    attn.forward(pq, pk, pv, po, pl, s);
    m.down();
  }
  const int group = Hq / Hkv;
  auto head = [&](const std::vector<T>& x, int h) {
    std::vector<double> out(static_cast<std::size_t>(S) * D);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[static_cast<std::size_t>(h) * S * D + i]);
    return out;
  };
  std::vector<double> ref_o, ref_lse, got;
  std::vector<float> got_lse;
  double worst = 0, scale_ref = 0;
  for (int bh = 0; bh < B * Hq; ++bh) {
    if (bh / group == nan_kv_head) continue;  // reads the NaN row itself
    const auto r = testing::attention_ref(head(q, bh), head(k, bh / group), head(v, bh / group), S, S, D, causal, s.softmax_scale());
    ref_o.insert(ref_o.end(), r.o.begin(), r.o.end());
    ref_lse.insert(ref_lse.end(), r.lse.begin(), r.lse.end());
    for (std::size_t i = 0; i < r.o.size(); ++i) {
      got.push_back(static_cast<float>(o[static_cast<std::size_t>(bh) * S * D + i]));
      REQUIRE(std::isfinite(got.back()));  // every element written
      worst = std::max(worst, std::fabs(got.back() - r.o[i]));
      scale_ref = std::max(scale_ref, std::fabs(r.o[i]));
    }
    got_lse.insert(got_lse.end(), lse.begin() + static_cast<std::ptrdiff_t>(bh) * S, lse.begin() + static_cast<std::ptrdiff_t>(bh + 1) * S);
  }
  CHECK(worst / scale_ref < tol);
  CHECK(testing::rel_error(got, ref_o) < tol / 2);
  CHECK(testing::rel_error(got_lse, ref_lse) < 1e-3);
}

}  // namespace

TEST_CASE("attention_library_forward_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  forward_case<tj::bf16>(dev, 1, 2, 1, 70, 96, true, 2e-2);
  forward_case<tj::f16>(dev, 1, 4, 2, 65, 64, false, 1e-2);
  forward_case<tj::bf16>(dev, 1, 2, 1, 45, 256, true, 2e-2);  // D = 256 (flash_fwd.hpp's 64 x 32 tiles), GQA, ragged S
  forward_case<tj::f16>(dev, 1, 1, 1, 33, 256, false, 1e-2);
  // Scores growing along the keys: the running max raised past the rescale threshold block after block.
  forward_case<tj::bf16>(dev, 1, 2, 1, 200, 64, false, 2e-2, Schedule::automatic, nullptr, false, -1, true);
  forward_case<tj::f16>(dev, 1, 2, 2, 150, 96, true, 1e-2, Schedule::automatic, nullptr, false, -1, true);
}

TEST_CASE("attention_library_forward_d256_compiles_for_every_target") {
  // D = 256 runs flash_fwd.hpp's pointer kernel everywhere (64 x 32 tiles, 4 warps: Attention::forward).
  for (const char* arch : {"sm_90a", "sm_80", "gfx942"}) {
    CAPTURE(arch);
    const auto c = std::string(arch) == "gfx942" ? tj::runtime::Compiler::hiprtc : tj::runtime::Compiler::nvrtc;
    std::string why;
    if (!tj::runtime::compiler_available(c, &why)) {
      MESSAGE("skipping ", arch, ": ", why);
      continue;
    }
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwd<64, 32, 256, true, tj::bf16>>(arch, {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwd<64, 32, 256, false, tj::f16>>(arch, {.num_warps = 4}));
  }
}

template <int BM, int BN, int D, bool C, class T>
using PersistentEdge = examples::FlashAttnFwdTmaPersistent<BM, BN, D, C, T, examples::KeyMask::edge_blocks, 3>;

TEST_CASE("attention_library_forward_configs_compile_for_sm90a") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  // What Attention::forward picks on compute capability 9.0 (attention.hpp): a producer warp group, 128 x 128
  // tiles in FlashAttention-3's order with only the edge key blocks masked (none for full attention with S a
  // multiple of 128).
  // K and V through rank-3 descriptors (KV_RANK = 3), as the library passes them.
  const tj::CompileOptions ws{.num_warps = 8, .num_stages = 2, .warp_specialize = true};
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEdge<128, 128, 96, false, tj::bf16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEdge<128, 128, 96, true, tj::bf16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, true, tj::f16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEdge<128, 128, 64, false, tj::bf16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEvenN<128, 128, 128, false, tj::f16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEdge<128, 128, 64, true, tj::bf16, 3>>("sm_90a", ws));
  // FwdSchedule::persistent (and automatic's choice except full D = 96): flash_fwd_persistent.hpp, same tiles and options.
  CHECK_NOTHROW(tj::compile_for_arch<PersistentEdge<128, 128, 64, true, tj::bf16>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<PersistentEdge<128, 128, 96, false, tj::bf16>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<PersistentEdge<128, 128, 128, true, tj::f16>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<
                examples::FlashAttnFwdTmaPersistent<128, 128, 128, false, tj::bf16, examples::KeyMask::none, 3>>("sm_90a", ws));
  // D = 64 from S = 1024: items of 192 rows over 12 consumer warps (full: K and V through the rank-2 view).
  const tj::CompileOptions ws12{.num_warps = 12, .num_stages = 2, .warp_specialize = true};
  CHECK_NOTHROW(tj::compile_for_arch<PersistentEdge<192, 96, 64, true, tj::f16>>("sm_90a", ws12));
  CHECK_NOTHROW(tj::compile_for_arch<
                examples::FlashAttnFwdTmaPersistent<192, 128, 64, false, tj::bf16, examples::KeyMask::none, 2>>("sm_90a", ws12));
  // D = 256: 64-key blocks (227 KiB of shared memory with two stages).
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEdge<128, 64, 256, true, tj::bf16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdTmaPingPongEvenN<128, 64, 256, false, tj::f16, 3>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<PersistentEdge<128, 64, 256, true, tj::bf16>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<
                examples::FlashAttnFwdTmaPersistent<128, 64, 256, false, tj::bf16, examples::KeyMask::none, 3>>("sm_90a", ws));
}

TEST_CASE("attention_library_forward_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  // The default (automatic: persistent except full D = 96) and one program per item everywhere.
  for (Schedule sched : {Schedule::automatic, Schedule::per_item})
    for (bool causal : {false, true}) {
      forward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, causal, 2e-2, sched);    // ragged S: blocks run into the next head
      forward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, causal, 2e-2, sched);    // D = 96 exact, GQA
      forward_case<tj::bf16>(dev, 2, 4, 4, 1000, 128, causal, 2e-2, sched);  // MQA
      forward_case<tj::f16>(dev, 1, 2, 1, 129, 128, causal, 1e-2, sched);
      forward_case<tj::bf16>(dev, 1, 2, 1, 1, 96, causal, 2e-2, sched);      // one token
      forward_case<tj::bf16>(dev, 1, 4, 1, 512, 64, causal, 2e-2, sched);    // S a multiple of 128 (full: no block masked)
      forward_case<tj::f16>(dev, 2, 2, 2, 384, 128, causal, 1e-2, sched);
      forward_case<tj::bf16>(dev, 1, 4, 2, 200, 256, causal, 2e-2, sched);   // D = 256: 64-key blocks
      forward_case<tj::f16>(dev, 1, 2, 1, 256, 256, causal, 1e-2, sched);    // S a multiple of 64
      forward_case<tj::bf16>(dev, 2, 4, 2, 256, 256, causal, 2e-2, sched, nullptr, false, 1);  // and NaN next door
      // NaN in the next KV head's first V row: the last key block of the heads before it (S ragged) must not see it.
      forward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, causal, 2e-2, sched, nullptr, false, 1);
      forward_case<tj::bf16>(dev, 1, 4, 4, 300, 64, causal, 2e-2, sched, nullptr, false, 2);
      forward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, causal, 2e-2, sched, nullptr, false, 1);
      // Scores growing along the keys (the running max raised past the rescale threshold again and again).
      forward_case<tj::bf16>(dev, 1, 4, 2, 1000, 128, causal, 2e-2, sched, nullptr, false, -1, true);
      forward_case<tj::f16>(dev, 1, 2, 1, 700, 64, causal, 1e-2, sched, nullptr, false, -1, true);
      forward_case<tj::bf16>(dev, 1, 2, 2, 600, 256, causal, 2e-2, sched, nullptr, false, -1, true);
      forward_case<tj::bf16>(dev, 1, 2, 1, 513, 96, causal, 2e-2, sched, nullptr, false, -1, true);
      // D = 64 from S = 1024 (kTallItemsMinSeqlen): persistent items of 192 rows — 128-key blocks unmasked (full, S a
      // multiple of 128), 96-key blocks (causal); a ragged full S keeps 128-row items.
      forward_case<tj::bf16>(dev, 1, 4, 2, 1024, 64, causal, 2e-2, sched);
      forward_case<tj::f16>(dev, 1, 2, 1, 1280, 64, causal, 1e-2, sched, nullptr, false, -1, true);
      forward_case<tj::bf16>(dev, 1, 2, 2, 1100, 64, causal, 2e-2, sched, nullptr, false, 1);
      // NaN in the next KV head's first V row, S a multiple of 128: full attention reads K and V through the rank-2
      // view there (no key block passes S), causal through rank 3.
      forward_case<tj::bf16>(dev, 2, 4, 2, 1024, 64, causal, 2e-2, sched, nullptr, false, 1);
    }
}

TEST_CASE("attention_library_forward_off_hopper_gpu_matches_f64") {
  // The path of GPUs without wgmma (sm_80 .. sm_89), on Hopper through set_mma_sync_path: flash_fwd_tma.hpp with a
  // cp.async ring for D <= 128, flash_fwd.hpp at D = 256.
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda || dev.compute_capability() < 80) {
    MESSAGE("no NVIDIA GPU of sm_80 or newer: skipping");
    return;
  }
  for (bool causal : {false, true}) {
    forward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, causal, 2e-2, Schedule::automatic, nullptr, true);
    forward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, causal, 2e-2, Schedule::automatic, nullptr, true);
    forward_case<tj::bf16>(dev, 2, 4, 4, 1000, 128, causal, 2e-2, Schedule::automatic, nullptr, true);
    forward_case<tj::f16>(dev, 1, 2, 1, 129, 128, causal, 1e-2, Schedule::automatic, nullptr, true);
    forward_case<tj::bf16>(dev, 1, 2, 1, 1, 96, causal, 2e-2, Schedule::automatic, nullptr, true);
    forward_case<tj::bf16>(dev, 1, 4, 2, 200, 256, causal, 2e-2, Schedule::automatic, nullptr, true);
    forward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, causal, 2e-2, Schedule::automatic, nullptr, true, 1);  // NaN next door
    forward_case<tj::bf16>(dev, 1, 4, 1, 512, 64, causal, 2e-2, Schedule::automatic, nullptr, true);  // S a multiple of 64
    forward_case<tj::f16>(dev, 1, 2, 1, 64, 128, causal, 1e-2, Schedule::automatic, nullptr, true);   // one key block
  }
}

TEST_CASE("attention_library_forward_off_hopper_configs_compile_for_sm80") {
  // What Attention::forward runs on sm_80 .. sm_89: FlashAttnFwdTmaEdge (full and causal) with rank-3 K and V,
  // 4 warps, a cp.async ring of 2 stages refilled at the top of each iteration; 128 x 64 tiles for full attention
  // at D = 64, 64 x 64 otherwise.
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  auto mentions = [](const std::vector<std::string>& diags, const std::string& text) {
    return std::any_of(diags.begin(), diags.end(), [&](const std::string& d) { return d.find(text) != std::string::npos; });
  };
  for (const char* arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    auto compiles = [&, arch = arch]<class K>(int head_dim) {
      const auto r = tj::compile_for_arch<K>(arch, {.num_warps = 4, .num_stages = 2});
      CHECK(!r.binary.bytes.empty());
      CHECK(mentions(r.diagnostics, "cp.async pipeline of 2 stage(s)"));
      // Shared memory: two stages of a K and a V block (64 rows in 128-byte slabs) and 1 KiB of scratch — 33 KiB
      // at D = 64, 65 KiB above, so an A100 SM (164 KiB) holds the two programs its registers allow.
      CHECK(r.dynamic_shared_bytes == 2 * 2 * 64 * ((2 * head_dim + 127) / 128 * 128) + 1024);
    };
    compiles.template operator()<examples::FlashAttnFwdTmaEdge<128, 64, 64, false, tj::bf16, 3>>(64);
    compiles.template operator()<examples::FlashAttnFwdTmaEdge<64, 64, 64, true, tj::bf16, 3>>(64);
    compiles.template operator()<examples::FlashAttnFwdTmaEdge<64, 64, 96, false, tj::bf16, 3>>(96);
    compiles.template operator()<examples::FlashAttnFwdTmaEdge<64, 64, 96, true, tj::f16, 3>>(96);
    compiles.template operator()<examples::FlashAttnFwdTmaEdge<64, 64, 128, false, tj::f16, 3>>(128);
    compiles.template operator()<examples::FlashAttnFwdTmaEdge<64, 64, 128, true, tj::bf16, 3>>(128);
  }
}

TEST_CASE("attention_library_forward_schedule_by_default") {
  // automatic: persistent where it measured faster on the H200 (causal attention, full D = 64, 128 and 256), one
  // program per item for full D = 96.
  using A = examples::Attention<tj::bf16>;
  CHECK(A::persistent_by_default(64, false));
  CHECK(A::persistent_by_default(64, true));
  CHECK(!A::persistent_by_default(96, false));
  CHECK(A::persistent_by_default(96, true));
  CHECK(A::persistent_by_default(128, false));
  CHECK(A::persistent_by_default(128, true));
  CHECK(A::persistent_by_default(256, false));
  CHECK(A::persistent_by_default(256, true));
  A attn(tj::Device::interpreter());
  CHECK(attn.forward_schedule() == A::FwdSchedule::automatic);
  attn.set_forward_schedule(A::FwdSchedule::per_item);
  CHECK(attn.forward_schedule() == A::FwdSchedule::per_item);
}

TEST_CASE("attention_library_persistent_forward_gpu_matches_f64") {
  // The same cases with FwdSchedule::persistent: on an H200 flash_fwd_persistent.hpp, one program per SM.
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  for (bool causal : {false, true}) {
    forward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, causal, 2e-2, Schedule::persistent);
    forward_case<tj::bf16>(dev, 1, 4, 2, 257, 96, causal, 2e-2, Schedule::persistent);
    forward_case<tj::bf16>(dev, 2, 4, 4, 1000, 128, causal, 2e-2, Schedule::persistent);
    forward_case<tj::f16>(dev, 1, 2, 1, 129, 128, causal, 1e-2, Schedule::persistent);
    forward_case<tj::bf16>(dev, 1, 2, 1, 1, 96, causal, 2e-2, Schedule::persistent);
    forward_case<tj::bf16>(dev, 1, 4, 1, 512, 64, causal, 2e-2, Schedule::persistent);
    forward_case<tj::f16>(dev, 2, 2, 2, 384, 128, causal, 1e-2, Schedule::persistent);
    forward_case<tj::bf16>(dev, 2, 16, 8, 640, 64, causal, 2e-2, Schedule::persistent);  // 160 items: more than one per SM
    forward_case<tj::bf16>(dev, 1, 4, 2, 200, 256, causal, 2e-2, Schedule::persistent);   // D = 256: 64-key blocks
    forward_case<tj::f16>(dev, 1, 2, 1, 256, 256, causal, 1e-2, Schedule::persistent);    // S a multiple of 64
    forward_case<tj::bf16>(dev, 2, 4, 2, 200, 128, causal, 2e-2, Schedule::persistent, nullptr, false, 1);  // NaN next door
    forward_case<tj::bf16>(dev, 2, 16, 8, 300, 64, causal, 2e-2, Schedule::persistent, nullptr, false, 5);
  }
  // One object across shapes: its schedule table is rebuilt for each new shape (items, sections, causal), kept for
  // a repeated one.
  examples::Attention<tj::bf16> attn(dev);
  for (int round = 0; round < 2; ++round)
    for (bool causal : {true, false}) {
      forward_case<tj::bf16>(dev, 2, 16, 8, 640, 64, causal, 2e-2, Schedule::persistent, &attn);
      forward_case<tj::bf16>(dev, 1, 4, 1, 300, 64, causal, 2e-2, Schedule::persistent, &attn);
      forward_case<tj::bf16>(dev, 1, 8, 2, 1024, 64, causal, 2e-2, Schedule::persistent, &attn);
    }
}
