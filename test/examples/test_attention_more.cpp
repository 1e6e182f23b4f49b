// Attention beyond the dense forward: variable-length batches, decode
// (flash-decoding: split + reduce), the backward pass, the library call's
// argument checks, and compiles for NVIDIA and AMD targets. The interpreter
// runs every kernel against f64 references on fresh random inputs; on a GPU
// the same cases run on the device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include <cmath>
#include <vector>

#include "examples/attention/attention.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/mirror.hpp"
#include "test/common/random.hpp"

namespace tj = tilejit;
using examples::AttnShape;

namespace {

/// Rows [row0, row0 + rows) of head `h` (of `heads`) from a [tokens, heads, D] tensor, as doubles.
template <class T>
std::vector<double> rows_of(const std::vector<T>& x, int heads, int h, int row0, int rows, int D) {
  std::vector<double> out(static_cast<std::size_t>(rows) * D);
  for (int r = 0; r < rows; ++r)
    for (int d = 0; d < D; ++d)
      out[static_cast<std::size_t>(r) * D + d] = static_cast<float>(x[(static_cast<std::size_t>(row0 + r) * heads + h) * D + d]);
  return out;
}

using testing::max_rel;


/// direct: FlashAttnFwdVarlenTma launched by hand (128 x 64 tiles, 8 warps) instead of the library's choice, its
/// descriptors over the rows the sequences use (cu_seqlens[B]), as the library builds them. spare: rows past the last
/// sequence (total_tokens > cu_seqlens[B], a buffer with room to spare), NaN in k and v: they must not reach any output.
template <class T>
void varlen_case(const tj::Device& dev, std::vector<std::int32_t> lens, int Hq, int Hkv, int D, bool causal, bool direct = false,
                 int spare = 0) {
  CAPTURE(spare);
  CAPTURE(direct);
  CAPTURE(D);
  CAPTURE(causal);
  CAPTURE(Hq);
  CAPTURE(Hkv);
  CAPTURE(testing::fresh_seed());
  std::vector<std::int32_t> cu{0};
  for (int l : lens) cu.push_back(cu.back() + l);
  const int used = cu.back(), total = used + spare, B = static_cast<int>(lens.size());
  const int max_len = *std::max_element(lens.begin(), lens.end());
  auto q = testing::random_tensor<T>(static_cast<std::size_t>(total) * Hq * D, 11), k = testing::random_tensor<T>(static_cast<std::size_t>(total) * Hkv * D, 12),
       v = testing::random_tensor<T>(static_cast<std::size_t>(total) * Hkv * D, 13);
  for (std::size_t i = static_cast<std::size_t>(used) * Hkv * D; i < k.size(); ++i) k[i] = v[i] = T(std::nanf(""));
  std::vector<T> o(q.size(), T(7.0f));
  std::vector<float> lse(static_cast<std::size_t>(total) * Hq, 7.0f);
  const AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = max_len, .head_dim = D, .causal = causal};
  {
    testing::Mirror m{dev, {}};
    auto *dq = m.up(q), *dk = m.up(k), *dv = m.up(v), *dout = m.up(o);
    auto* dl = m.up(lse);
    auto* dcu = m.up(cu);
    if (direct) {
      REQUIRE((D == 64 || D == 96 || D == 128));
      using Desc = tj::TensorDescriptor;
      const Desc qd(dev, dq, tj::dtype_v<T>, {used, Hq, D}, {Hq * D, D, 1}, {128, 1, D});
      const Desc kd(dev, dk, tj::dtype_v<T>, {used, Hkv, D}, {Hkv * D, D, 1}, {64, 1, D});
      const Desc vd(dev, dv, tj::dtype_v<T>, {used, Hkv, D}, {Hkv * D, D, 1}, {64, 1, D});
      const float sl2 = static_cast<float>(s.softmax_scale() * 1.4426950408889634);
      // D = 96 and 128 run block 0 before the key loop (kFa3PeelFirstBlock), D = 64 too when causal, full D = 64 in it.
      auto launch = [&]<int HD, bool C>() {
        tj::compile<examples::FlashAttnFwdVarlenTma<128, 64, HD, C, T>>(dev, {.num_warps = 8, .num_stages = 2})
            .launch(tj::Grid{tj::cdiv(max_len, 128), Hq, B}, qd, kd, vd, dout, dl, dcu, Hq, Hq / Hkv, sl2);
      };
      auto with_d = [&]<bool C>() {
        if (D == 64) launch.template operator()<64, C>();
        else if (D == 96) launch.template operator()<96, C>();
        else launch.template operator()<128, C>();
      };
      if (causal) with_d.template operator()<true>();
      else with_d.template operator()<false>();
    } else {
      examples::Attention<T> attn(dev);
      attn.forward_varlen(dq, dk, dv, dout, dl, dcu, total, s);
    }
    m.down();
  }
  const double scale = s.softmax_scale();
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h) {
      const int n = lens[static_cast<std::size_t>(b)], r0 = cu[static_cast<std::size_t>(b)];
      if (n == 0) continue;
      const auto ref = testing::attention_ref(rows_of(q, Hq, h, r0, n, D), rows_of(k, Hkv, h / (Hq / Hkv), r0, n, D),
                                              rows_of(v, Hkv, h / (Hq / Hkv), r0, n, D), n, n, D, causal, scale);
      CHECK(max_rel(rows_of(o, Hq, h, r0, n, D), ref.o) < 2e-2);
      for (int i = 0; i < n; ++i) CHECK(lse[static_cast<std::size_t>(r0 + i) * Hq + h] == doctest::Approx(ref.lse[static_cast<std::size_t>(i)]).epsilon(1e-3));
    }
  for (std::size_t i = static_cast<std::size_t>(used) * Hq * D; i < o.size(); ++i) CHECK(static_cast<float>(o[i]) == 7.0f);  // spare rows
}

/// Decode of `tokens` new query tokens per sequence against caches of lens[b] keys (the new tokens' included):
/// token t of sequence b sees keys [0, lens[b] − tokens + t]; none when that is negative (O = 0, lse = −1e30).
template <class T>
void decode_case(const tj::Device& dev, std::vector<std::int32_t> lens, int Hq, int Hkv, int D, int s_max, long long chunk,
                 int tokens = 1) {
  CAPTURE(D);
  CAPTURE(Hq);
  CAPTURE(Hkv);
  CAPTURE(chunk);
  CAPTURE(tokens);
  CAPTURE(testing::fresh_seed());
  const int B = static_cast<int>(lens.size());
  const std::size_t rows = static_cast<std::size_t>(B) * tokens * Hq;
  auto q = testing::random_tensor<T>(rows * D, 21);
  auto k = testing::random_tensor<T>(static_cast<std::size_t>(B) * Hkv * s_max * D, 22), v = testing::random_tensor<T>(static_cast<std::size_t>(B) * Hkv * s_max * D, 23);
  std::vector<T> o(q.size(), T(7.0f));
  std::vector<float> lse(rows, 7.0f);
  const AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = 1, .head_dim = D};
  {
    testing::Mirror m{dev, {}};
    auto *dq = m.up(q), *dk = m.up(k), *dv = m.up(v), *dout = m.up(o);
    auto* dl = m.up(lse);
    auto* dlen = m.up(lens);
    examples::Attention<T> attn(dev);
    attn.decode(dq, dk, dv, dlen, dout, dl, s, s_max, chunk, tokens);
    m.down();
  }
  const int group = Hq / Hkv;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < Hq; ++h) {
        CAPTURE(b);
        CAPTURE(t);
        CAPTURE(h);
        const std::size_t row = (static_cast<std::size_t>(b) * tokens + t) * Hq + h;
        const int n = std::max(0, lens[static_cast<std::size_t>(b)] - tokens + t + 1), kvh = b * Hkv + h / group;  // keys it sees
        std::vector<double> qd(static_cast<std::size_t>(D)), kd(static_cast<std::size_t>(n) * D), vd(static_cast<std::size_t>(n) * D);
        for (int d = 0; d < D; ++d) qd[static_cast<std::size_t>(d)] = static_cast<float>(q[row * D + d]);
        for (std::size_t i = 0; i < kd.size(); ++i) {
          kd[i] = static_cast<float>(k[static_cast<std::size_t>(kvh) * s_max * D + i]);
          vd[i] = static_cast<float>(v[static_cast<std::size_t>(kvh) * s_max * D + i]);
        }
        const auto ref = testing::attention_ref(qd, kd, vd, 1, n, D, false, s.softmax_scale());
        std::vector<double> got(static_cast<std::size_t>(D));
        for (int d = 0; d < D; ++d) got[static_cast<std::size_t>(d)] = static_cast<float>(o[row * D + d]);
        const float l = lse[row];
        if (n == 0) {  // no visible key (an empty cache): O = 0 and a defined LSE, never NaN
          for (double g : got) CHECK(g == 0.0);
          CHECK(l == -1e30f);
          continue;
        }
        CHECK(max_rel(got, ref.o) < 2e-2);
        CHECK(l == doctest::Approx(ref.lse[0]).epsilon(1e-3));
      }
}

template <class T>
void backward_case(const tj::Device& dev, int B, int Hq, int Hkv, int S, int D, bool causal) {
  CAPTURE(D);
  CAPTURE(S);
  CAPTURE(causal);
  CAPTURE(Hq);
  CAPTURE(Hkv);
  CAPTURE(testing::fresh_seed());
  const std::size_t nq = static_cast<std::size_t>(B) * Hq * S * D, nk = static_cast<std::size_t>(B) * Hkv * S * D;
  auto q = testing::random_tensor<T>(nq, 31), k = testing::random_tensor<T>(nk, 32), v = testing::random_tensor<T>(nk, 33), d_o = testing::random_tensor<T>(nq, 34);
  std::vector<T> o(nq), dq(nq, T(7.0f)), dk(nk, T(7.0f)), dv(nk, T(7.0f));
  std::vector<float> lse(static_cast<std::size_t>(B) * Hq * S), delta(lse.size());
  const AttnShape s{.batch = B, .heads_q = Hq, .heads_kv = Hkv, .seqlen = S, .head_dim = D, .causal = causal};
  {
    testing::Mirror m{dev, {}};
    auto *pq = m.up(q), *pk = m.up(k), *pv = m.up(v), *po = m.up(o), *pdo = m.up(d_o), *pdq = m.up(dq), *pdk = m.up(dk), *pdv = m.up(dv);
    auto *pl = m.up(lse), *pdl = m.up(delta);
    examples::Attention<T> attn(dev);
    attn.forward(pq, pk, pv, po, pl, s);
    attn.backward(pq, pk, pv, po, pdo, pl, pdl, pdq, pdk, pdv, s);
    m.down();
  }
  // Per (batch, KV head): sum the references of its query heads.
  const auto gg = testing::grouped_grads(q, k, v, d_o, dq, dk, dv, B * Hkv, Hq / Hkv, S, D, causal, s.softmax_scale());
  const auto &ref_dq = gg.ref_dq, &ref_dk = gg.ref_dk, &ref_dv = gg.ref_dv, &got_dq = gg.got_dq, &got_dk = gg.got_dk, &got_dv = gg.got_dv;
  CHECK(testing::rel_error(got_dq, ref_dq) < 5e-2);
  CHECK(testing::rel_error(got_dk, ref_dk) < 5e-2);
  CHECK(testing::rel_error(got_dv, ref_dv) < 5e-2);
}

}  // namespace

TEST_CASE("attention_varlen_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  varlen_case<tj::bf16>(dev, {37, 0, 64, 5}, 2, 1, 64, true);   // an empty sequence in the batch, ragged lengths
  varlen_case<tj::bf16>(dev, {70, 33}, 4, 2, 96, false);        // D = 96 exact, GQA
  // The Hopper kernel (FlashAttnFwdVarlenTma) run directly: key blocks past a sequence read the next one's tokens.
  varlen_case<tj::bf16>(dev, {37, 0, 130, 5}, 2, 1, 64, true, true);
  varlen_case<tj::f16>(dev, {70, 64}, 4, 2, 64, false, true);
  // Block 0 peeled (D = 96, 128): programs past their sequence's end (and the empty one's) still run block 0;
  // nothing of it may reach a stored row.
  varlen_case<tj::bf16>(dev, {37, 0, 130, 5}, 2, 1, 128, true, true);
  varlen_case<tj::bf16>(dev, {70, 0, 200}, 2, 2, 96, false, true);
  // Spare rows past the last sequence hold NaN in K and V (a buffer with room to spare, or never written): the
  // descriptors stop at cu_seqlens[B], so TMA reads zeros there (a break-it pass found them NaN-ing every sequence).
  varlen_case<tj::bf16>(dev, {10, 10}, 1, 1, 64, false, true, 20);
  varlen_case<tj::bf16>(dev, {37, 5}, 2, 1, 128, true, true, 61);
  // A max_seqlen far above the longest sequence: the grid follows the longest (review finding: 2^40 overflowed the
  // grid with an error naming grid.x, 2^31 launched millions of empty programs). Same output, bit for bit.
  const std::vector<std::int32_t> cu{0, 5, 12};
  const auto q = testing::random_tensor<tj::bf16>(12 * 2 * 64, 41), k = testing::random_tensor<tj::bf16>(12 * 64, 42),
             v = testing::random_tensor<tj::bf16>(12 * 64, 43);
  std::vector<tj::bf16> o_tight(q.size(), tj::bf16(7.0f)), o_loose(q.size(), tj::bf16(7.0f));
  std::vector<float> l_tight(24, 7.0f), l_loose(24, 7.0f);
  examples::Attention<tj::bf16> attn(dev);
  attn.forward_varlen(q.data(), k.data(), v.data(), o_tight.data(), l_tight.data(), cu.data(), 12,
                      {.batch = 2, .heads_q = 2, .heads_kv = 1, .seqlen = 7, .head_dim = 64, .causal = true});
  attn.forward_varlen(q.data(), k.data(), v.data(), o_loose.data(), l_loose.data(), cu.data(), 12,
                      {.batch = 2, .heads_q = 2, .heads_kv = 1, .seqlen = 1LL << 40, .head_dim = 64, .causal = true});
  CHECK(std::memcmp(o_tight.data(), o_loose.data(), o_tight.size() * sizeof(tj::bf16)) == 0);
  CHECK(l_tight == l_loose);
}

TEST_CASE("attention_varlen_tma_compiles_for_sm90a") {
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  // What Attention::forward_varlen launches on compute capability 9.0: 128 x 128 tiles (128 x 64 at D = 256), two
  // stages, a producer warp group; Q resident, K and V through the ring as 3-D boxes.
  const tj::CompileOptions ws{.num_warps = 8, .num_stages = 2, .warp_specialize = true};
  const auto g = tj::codegen::generate(tj::trace(examples::FlashAttnFwdVarlenTma<128, 128, 128, true, tj::bf16>{}), {},
                                       tj::codegen::target_for("sm_90a"), {.num_warps = 8, .num_stages = 2, .warp_specialize = true});
  CHECK(g.source.find("tj_tma_load_3d(tj_ring") != std::string::npos);
  CHECK(g.source.find("tj_tma_load_3d(tj_res") != std::string::npos);
  bool ws_applied = false;
  for (const auto& d : g.diagnostics) ws_applied |= d.find("warp specialised") != std::string::npos;
  CHECK(ws_applied);
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdVarlenTma<128, 128, 64, false, tj::bf16>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdVarlenTma<128, 128, 96, true, tj::f16>>("sm_90a", ws));
  CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdVarlenTma<128, 64, 256, true, tj::bf16>>("sm_90a", ws));
}

TEST_CASE("attention_decode_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  decode_case<tj::bf16>(dev, {300, 137, 0}, 8, 2, 128, 320, 128);  // Llama-3-8B-like GQA (group 4), 3 splits, an empty cache
  decode_case<tj::bf16>(dev, {97, 64}, 4, 4, 96, 128, 64);         // Phi-3-mini-like MHA (group 1), D = 96
  decode_case<tj::f16>(dev, {200}, 4, 1, 64, 256, 0);              // automatic split
  // A few tokens per sequence (causal among them): 4 draft tokens at group 4 (16 rows), 3 tokens across a chunk
  // boundary, 20 tokens at group 2 (40 rows: the 64-row pointer kernel), and a cache shorter than the tokens.
  decode_case<tj::bf16>(dev, {300, 137, 2}, 8, 2, 128, 320, 128, 4);
  decode_case<tj::bf16>(dev, {129, 64}, 4, 4, 96, 192, 64, 3);
  decode_case<tj::f16>(dev, {200, 21}, 4, 2, 64, 256, 0, 20);
  // One token, more than 16 query heads per KV head (a review found heads 16.. left uncomputed: the one-token
  // kernel had 16 rows): groups 17, 48 (D = 96) and 64.
  decode_case<tj::bf16>(dev, {40}, 17, 1, 64, 64, 0);
  decode_case<tj::bf16>(dev, {70, 5}, 96, 2, 96, 128, 64);
  decode_case<tj::f16>(dev, {33}, 64, 1, 64, 64, 0);
  // A chunk past s_max is one split of the whole cache (it reached the kernel's i32 parameter as 2^31 before).
  decode_case<tj::bf16>(dev, {50, 64}, 4, 2, 64, 64, 1LL << 31);
}

TEST_CASE("attention_decode_rejects_a_chunk_that_needs_more_than_65535_splits") {
  const auto dev = tj::Device::interpreter();
  std::vector<tj::bf16> x(64, tj::bf16(1.0f)), xo(64);  // xo: the output, apart from the inputs
  std::vector<float> l(1, 0.0f);
  std::vector<std::int32_t> lens{1};
  examples::Attention<tj::bf16> attn(dev);
  const AttnShape s{.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 1, .head_dim = 64};
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), xo.data(), l.data(), s, 70000, 1),
                       doctest::Contains("chunk = 1 splits s_max = 70000 into 70000 chunks: at most 65535"), tj::InvalidArgument);
}

TEST_CASE("attention_decode_rejects_bad_tokens") {
  const auto dev = tj::Device::interpreter();
  examples::Attention<tj::bf16> attn(dev);
  std::vector<tj::bf16> x(64 * 1024), xo(64 * 1024);  // xo: the output, apart from the inputs
  std::vector<std::int32_t> lens{4};
  std::vector<float> l(64);
  const AttnShape s{.batch = 1, .heads_q = 8, .heads_kv = 1, .seqlen = 1, .head_dim = 64};
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), xo.data(), l.data(), s, 8, 0, 0),
                       "attention decode: tokens = 0: must be >= 1", tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), xo.data(), l.data(), s, 8, 0, 9),
                       "attention decode: 8 query heads per KV head x 9 tokens = 72 rows: at most 64 (one tile of rows)",
                       tj::InvalidArgument);
}

TEST_CASE("attention_backward_interpreter_matches_f64") {
  const auto dev = tj::Device::interpreter();
  backward_case<tj::bf16>(dev, 1, 2, 1, 80, 64, false);  // ragged S
  backward_case<tj::bf16>(dev, 1, 2, 2, 70, 96, true);   // D = 96 exact, causal
  backward_case<tj::f16>(dev, 1, 4, 2, 64, 64, true);    // GQA: dK, dV summed over the group
}

TEST_CASE("attention_library_rejects_outputs_that_alias_inputs") {
  // A break-it pass found o = k, o = v, lse over k's bytes, dk = k and delta = lse accepted and wrong (or NaN) on
  // the interpreter; every call now refuses an output overlapping an input or another output before any launch.
  using T = tj::bf16;
  examples::Attention<T> attn(tj::Device::interpreter());
  const int B = 1, H = 2, S = 64, D = 64;
  const std::size_t n = static_cast<std::size_t>(B) * H * S * D;
  std::vector<T> q(n), k(n), v(n), o(n), d_o(n), dq(n), dk(n), dv(n);
  std::vector<float> lse(static_cast<std::size_t>(B) * H * S), delta(lse.size());
  const examples::AttnShape s{.batch = B, .heads_q = H, .heads_kv = H, .seqlen = S, .head_dim = D, .causal = true};
  auto* lse_in_k = reinterpret_cast<float*>(k.data() + n / 2);
  CHECK_THROWS_WITH_AS(attn.forward(q.data(), k.data(), v.data(), k.data(), lse.data(), s), doctest::Contains("o ("), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.forward(q.data(), k.data(), v.data(), v.data() + 1, lse.data(), s),
                       doctest::Contains("overlaps input v"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.forward(q.data(), k.data(), v.data(), q.data(), lse.data(), s), doctest::Contains("overlaps input q"),
                       tj::InvalidArgument);  // in place: refused too
  CHECK_THROWS_WITH_AS(attn.forward(q.data(), k.data(), v.data(), o.data(), lse_in_k, s), doctest::Contains("lse"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.forward(q.data(), k.data(), v.data(), o.data(), reinterpret_cast<float*>(o.data() + 8), s),
                       doctest::Contains("outputs o"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.backward(q.data(), k.data(), v.data(), o.data(), d_o.data(), lse.data(), delta.data(), dq.data(), k.data(), dv.data(), s),
                       doctest::Contains("dk ("), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.backward(q.data(), k.data(), v.data(), o.data(), d_o.data(), lse.data(), lse.data(), dq.data(), dk.data(), dv.data(), s),
                       doctest::Contains("overlaps input lse"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.backward(q.data(), k.data(), v.data(), o.data(), d_o.data(), lse.data(), delta.data(), dq.data(), dk.data(), dk.data(), s),
                       doctest::Contains("outputs dk"), tj::InvalidArgument);
  // Buffers that only touch (one ends where the next begins) are fine: o right after q in one allocation.
  std::vector<T> qo(2 * n);
  const std::vector<T> q_rand = testing::random_tensor<T>(n, 5), k_rand = testing::random_tensor<T>(n, 6), v_rand = testing::random_tensor<T>(n, 7);
  std::copy(q_rand.begin(), q_rand.end(), qo.begin());
  CHECK_NOTHROW(attn.forward(qo.data(), k_rand.data(), v_rand.data(), qo.data() + n, lse.data(), s));
  CHECK(std::memcmp(q_rand.data(), qo.data(), n * sizeof(T)) == 0);  // q untouched
  // Varlen and decode take the same rule.
  std::vector<std::int32_t> cu{0, S};
  CHECK_THROWS_WITH_AS(attn.forward_varlen(q.data(), k.data(), v.data(), v.data(), lse.data(), cu.data(), S, {.batch = 1, .heads_q = H, .heads_kv = H, .seqlen = S, .head_dim = D}),
                       doctest::Contains("overlaps input v"), tj::InvalidArgument);
  std::vector<std::int32_t> lens{S};
  CHECK_THROWS_WITH_AS(attn.decode(q.data(), k.data(), v.data(), lens.data(), o.data(), reinterpret_cast<float*>(lens.data()),
                                   {.batch = 1, .heads_q = H, .heads_kv = H, .seqlen = 1, .head_dim = D}, S),
                       doctest::Contains("overlaps input seqlens"), tj::InvalidArgument);
}

TEST_CASE("attention_library_checks_its_arguments") {
  using A = examples::Attention<tj::bf16>;
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 32, .heads_kv = 6, .seqlen = 8, .head_dim = 64}),
                       doctest::Contains("heads_q = 32 is not a multiple of heads_kv = 6"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 8, .heads_kv = 8, .seqlen = 8, .head_dim = 80}),
                       doctest::Contains("head_dim = 80 is not supported"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check({.batch = 0}), doctest::Contains("batch = 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check_cu_seqlens({0, 12, 10}, 100, 64), doctest::Contains("cu_seqlens[2] = 10 < cu_seqlens[1] = 12"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check_cu_seqlens({1, 12}, 100, 64), doctest::Contains("cu_seqlens[0] = 1"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check_cu_seqlens({0, 12, 120}, 100, 128), doctest::Contains("exceeds the buffer of 100 tokens"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check_cu_seqlens({0, 12, 90}, 100, 64), doctest::Contains("longer than max_seqlen = 64"), tj::InvalidArgument);
  CHECK(A::check_cu_seqlens({0, 12, 12, 90}, 100, 78) == 78);
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = -1}),
                       doctest::Contains("scale = -1"), tj::InvalidArgument);
  // Finite as a double but not as the f32 the kernels take (review finding: NaN outputs, or a zero scale).
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 1e39}),
                       doctest::Contains("must be in [1e-20, 1e20]"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 1e-50}),
                       doctest::Contains("must be in [1e-20, 1e20]"), tj::InvalidArgument);
  // Outside [1e-20, 1e20] the -1e30 mask sentinel meets real scores (review finding: 1e-30 let causal rows see future
  // keys, 1e31 zeroed rows): refused, naming the rule; the bounds themselves pass.
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 1e-30}),
                       doctest::Contains("must be in [1e-20, 1e20]"), tj::InvalidArgument);
  CHECK_THROWS_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 1e31}), tj::InvalidArgument);
  CHECK_NOTHROW(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 1e-20}));
  CHECK_NOTHROW(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = 1e20}));
  CHECK_THROWS_WITH_AS(A::check({.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 8, .head_dim = 64, .scale = std::nan("")}),
                       doctest::Contains("must be > 0"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::fits_i32(64LL * 8 * 32768 * 128, "the KV cache"), doctest::Contains("32-bit offsets"), tj::InvalidArgument);
  // One program row per (batch, query head): at most 65535 of them, checked before any launch (forward, backward),
  // and 65535 query heads in a varlen call.
  CHECK_THROWS_WITH_AS(A::fits_grid_y(4096, 16, "batch x heads_q"), doctest::Contains("batch x heads_q = 4096 x 16: at most 65535"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(A::fits_grid_y(1LL << 40, 1LL << 40, "batch x heads_q"), doctest::Contains("at most 65535"), tj::InvalidArgument);
  CHECK_NOTHROW(A::fits_grid_y(4095, 16, "batch x heads_q"));
  {
    const auto idev = tj::Device::interpreter();
    A attn(idev);
    std::vector<tj::bf16> x(64);
    std::vector<float> l(8);
    const AttnShape wide{.batch = 4096, .heads_q = 16, .heads_kv = 16, .seqlen = 1, .head_dim = 64};
    CHECK_THROWS_WITH_AS(attn.forward(x.data(), x.data(), x.data(), x.data(), l.data(), wide), doctest::Contains("grid's y extent"),
                         tj::InvalidArgument);
    CHECK_THROWS_WITH_AS(attn.backward(x.data(), x.data(), x.data(), x.data(), x.data(), l.data(), l.data(), x.data(), x.data(),
                                       x.data(), wide),
                         doctest::Contains("grid's y extent"), tj::InvalidArgument);
    // Every sequence empty, max_seqlen larger: nothing to do, nothing written (on Hopper it used to build a descriptor
    // of 0 tokens and throw).
    std::vector<std::int32_t> cu{0, 0, 0};
    std::vector<tj::bf16> o(64, tj::bf16(7.0f));
    CHECK_NOTHROW(attn.forward_varlen(x.data(), x.data(), x.data(), o.data(), l.data(), cu.data(), 0,
                                      {.batch = 2, .heads_q = 1, .heads_kv = 1, .seqlen = 4, .head_dim = 64}));
    for (auto e : o) CHECK(static_cast<float>(e) == 7.0f);
  }
  const auto dev = tj::Device::interpreter();
  A attn(dev);
  std::vector<tj::bf16> x(4 * 64), xo(4 * 64);  // xo: the output, apart from the inputs
  std::vector<float> l(4);
  std::vector<std::int32_t> lens{5};
  const AttnShape s{.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 1, .head_dim = 64};
  CHECK_THROWS_WITH_AS(attn.forward(x.data(), nullptr, x.data(), x.data(), l.data(), s), doctest::Contains("k is a null pointer"),
                       tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), xo.data(), l.data(), s, 4),
                       doctest::Contains("seqlens[0] = 5: must be in [0, s_max = 4]"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), xo.data(), l.data(), s, -5),
                       doctest::Contains("s_max = -5: must be >= 1"), tj::InvalidArgument);
  CHECK_THROWS_WITH_AS(attn.decode(x.data(), x.data(), x.data(), lens.data(), xo.data(), l.data(), s, 8, -1),
                       doctest::Contains("chunk = -1"), tj::InvalidArgument);
  // A misaligned tensor is refused by name before any launch: dk keeps its contents.
  {
    std::vector<tj::bf16> buf(4 * 64 + 1), dk(4 * 64, tj::bf16(7.0f)), dv(4 * 64);
    std::vector<float> d(4);
    auto* dq_bad = reinterpret_cast<tj::bf16*>(reinterpret_cast<char*>(buf.data()) + 1);
    CHECK_THROWS_WITH_AS(attn.backward(x.data(), x.data(), x.data(), x.data(), x.data(), l.data(), d.data(), dq_bad, dk.data(), dv.data(), s),
                         doctest::Contains("dq = 0x"), tj::InvalidArgument);
    CHECK_THROWS_WITH_AS(attn.backward(x.data(), x.data(), x.data(), x.data(), x.data(), l.data(), d.data(), dq_bad, dk.data(), dv.data(), s),
                         doctest::Contains("is not aligned to its element size (2 bytes)"), tj::InvalidArgument);
    CHECK(float(dk[0]) == 7.0f);
    auto* lse_bad = reinterpret_cast<float*>(reinterpret_cast<char*>(d.data()) + 2);
    CHECK_THROWS_WITH_AS(attn.forward(x.data(), x.data(), x.data(), x.data(), lse_bad, s), doctest::Contains("lse = 0x"), tj::InvalidArgument);
  }
  // varlen with every sequence empty: nothing to compute, no error, nothing written.
  std::vector<std::int32_t> cu{0, 0};
  std::vector<tj::bf16> o(4 * 64, tj::bf16(7.0f));
  attn.forward_varlen(x.data(), x.data(), x.data(), o.data(), l.data(), cu.data(), 0,
                      {.batch = 1, .heads_q = 1, .heads_kv = 1, .seqlen = 0, .head_dim = 64});
  CHECK(float(o[0]) == 7.0f);
}

TEST_CASE("attention_variants_compile_for_nvidia_and_amd") {
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdVarlen<128, 64, 96, true, tj::bf16>>("sm_90a", {.num_warps = 8}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashDecodeSplit<64, 128, tj::bf16>>("sm_90a", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashDecodeReduce<128, tj::bf16>>("sm_90a", {.num_warps = 1}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashBwdPreprocess<64, 128, tj::bf16>>("sm_90a", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashBwdKV<64, 64, 96, true, tj::bf16>>("sm_90a", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashBwdQ<64, 64, 128, false, tj::bf16>>("sm_80", {.num_warps = 4}));
  } else {
    MESSAGE("skipping NVRTC: ", why);
  }
  if (tj::runtime::compiler_available(tj::runtime::Compiler::hiprtc, &why)) {
    // MFMA on gfx942 (compiled, never run here).
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwd<64, 64, 128, true, tj::bf16>>("gfx942", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashAttnFwdVarlen<64, 64, 96, false, tj::f16>>("gfx942", {.num_warps = 4}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashDecodeSplit<64, 128, tj::bf16>>("gfx942", {.num_warps = 1}));
    CHECK_NOTHROW(tj::compile_for_arch<examples::FlashBwdKV<64, 64, 64, true, tj::bf16>>("gfx942", {.num_warps = 4}));
  } else {
    MESSAGE("skipping HIP: ", why);
  }
}

TEST_CASE("attention_more_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  varlen_case<tj::bf16>(dev, {300, 0, 129, 512}, 4, 2, 128, true);
  // On an H200 the library runs FlashAttnFwdVarlenTma: every head dim, both masks, one-token and empty sequences.
  for (bool causal : {false, true}) {
    varlen_case<tj::bf16>(dev, {1000, 1, 0, 257, 128}, 8, 2, 64, causal);
    varlen_case<tj::f16>(dev, {333, 700}, 4, 4, 96, causal);
    varlen_case<tj::bf16>(dev, {129, 4000, 64}, 4, 1, 128, causal);
    varlen_case<tj::bf16>(dev, {300, 77}, 2, 1, 256, causal);
    varlen_case<tj::bf16>(dev, {37, 0, 130, 5}, 2, 1, 64, causal, true);  // the kernel by hand, 128 x 64 tiles
  }
  {  // every sequence empty, max_seqlen larger: nothing written (the Hopper path built a 0-token descriptor before)
    testing::Mirror m{dev, {}};
    std::vector<tj::bf16> x(64, tj::bf16(1.0f)), o(64, tj::bf16(7.0f));
    std::vector<float> l(8, 7.0f);
    std::vector<std::int32_t> cu{0, 0, 0};
    auto *dx = m.up(x), *dout = m.up(o);
    auto* dl = m.up(l);
    auto* dcu = m.up(cu);
    examples::Attention<tj::bf16> attn(dev);
    CHECK_NOTHROW(attn.forward_varlen(dx, dx, dx, dout, dl, dcu, 0, {.batch = 2, .heads_q = 1, .heads_kv = 1, .seqlen = 4, .head_dim = 64}));
    m.down();
    for (auto e : o) CHECK(static_cast<float>(e) == 7.0f);
  }
  decode_case<tj::bf16>(dev, {4096, 1000, 0}, 32, 8, 128, 4096, 0);
  decode_case<tj::bf16>(dev, {3000, 17}, 32, 1, 256, 4096, 0);  // D = 256 (pointer kernel) with a group of 32
  decode_case<tj::bf16>(dev, {2000}, 48, 1, 96, 2048, 0);       // the TMA kernel, 48 heads per KV head
  decode_case<tj::bf16>(dev, {4096, 1000, 3}, 32, 8, 128, 4096, 0, 5);   // 5 draft tokens (20 rows)
  decode_case<tj::bf16>(dev, {2000, 63}, 8, 1, 96, 2048, 0, 8);           // 64 rows; a cache one key short of a block
  backward_case<tj::bf16>(dev, 1, 4, 2, 300, 128, true);
  backward_case<tj::bf16>(dev, 1, 2, 2, 256, 64, false);
}
