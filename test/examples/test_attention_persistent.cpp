// The persistent Hopper forward (examples/attention/flash_fwd_persistent.hpp):
// its schedule table (every (query block, head) once, balanced; causal heaviest
// first within equal sections of heads), the interpreter against f64 (ragged S, causal and full,
// D 64 and 96, GQA, more items than programs and more programs than items),
// the sm_90a code (the item loop's Q and last-V blocks copied once per item by
// the producer, released after their last reader; no spills at D 64 / 96 / 128)
// and, on a GPU, the kernel against f64 with poisoned outputs.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <regex>
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "examples/attention/flash_fwd_persistent.hpp"
#include "test/common/attention_ref.hpp"
#include "test/common/codegen.hpp"
#include "test/common/random.hpp"
#include "test/common/text.hpp"

namespace tj = tilejit;
using D = tj::TensorDescriptor;
using bf = tj::bf16;
using examples::KeyMask;

namespace {

constexpr double kLog2e = 1.4426950408889634;

template <int BM, int BN, int HD, bool C, class T>
using Persistent = examples::FlashAttnFwdTmaPersistent<BM, BN, HD, C, T>;
template <int BM, int BN, int HD, bool C, class T>
using PersistentEvenN = examples::FlashAttnFwdTmaPersistent<BM, BN, HD, C, T, KeyMask::none>;
/// Edge masks with K and V through rank-3 descriptors, as Attention::forward passes them.
template <int BM, int BN, int HD, bool C, class T>
using PersistentRank3 = examples::FlashAttnFwdTmaPersistent<BM, BN, HD, C, T, KeyMask::edge_blocks, 3>;

/// Device buffers for the GPU, host pointers for the interpreter.
template <class X>
X* on(const tj::Device& dev, std::vector<X>& host) {
  if (dev.backend() == tj::Backend::interpreter) return host.data();
  auto* p = static_cast<X*>(dev.alloc(host.size() * sizeof(X)));
  dev.copy_to_device(p, host.data(), host.size() * sizeof(X));
  return p;
}

struct Case {
  int B = 1, Hq = 2, group = 1, S = 64;
  int programs = 0;   // 0: the device's SM count (the library's table)
  long long section_bytes = examples::kFwdSectionBytes;  // K and V bytes of a causal section
  int stages = 2;
  bool ws = false;
  bool pingpong = false;  // the consumer warp groups take turns over their wgmma (CompileOptions::pingpong)
  double tol = 2e-2;
  int nan_v_head = -1;  // >= 0: V of this KV head is NaN in its last BLOCK_N rows (read by no other head)
};

/// The persistent kernel on `dev` against the f64 reference, per query head: outputs poisoned (NaN) first, every
/// element must be written; max error / max |O| < tol, relative Frobenius < tol / 2, LSE relative < 1e-3. With
/// nan_v_head, that head's rows are not compared (its own output is NaN) and every other head's must be finite.
template <int BM, int BN, int HD, bool CAUSAL, class T, template <int, int, int, bool, class> class Kernel = Persistent>
void check_persistent(const tj::Device& dev, const Case& c) {
  CAPTURE(HD);
  CAPTURE(CAUSAL);
  CAPTURE(c.S);
  CAPTURE(c.B);
  CAPTURE(c.Hq);
  CAPTURE(c.group);
  CAPTURE(c.programs);
  CAPTURE(c.ws);
  CAPTURE(c.pingpong);
  CAPTURE(BM);
  CAPTURE(BN);
  CAPTURE(testing::fresh_seed());
  const int S = c.S, BH = c.B * c.Hq, BHkv = c.B * (c.Hq / c.group);
  auto gen = [&](int n, unsigned salt) { return testing::random_tensor<T>(static_cast<std::size_t>(n), salt, -2, 2); };
  auto q = gen(BH * S * HD, 21), k = gen(BHkv * S * HD, 22), v = gen(BHkv * S * HD, 23);
  if (c.nan_v_head >= 0)
    for (int r = S - BN; r < S; ++r)
      for (int d = 0; d < HD; ++d) v[(static_cast<std::size_t>(c.nan_v_head) * S + r) * HD + d] = T(std::nanf(""));
  const double scale = 1.0 / std::sqrt(static_cast<double>(HD));
  std::vector<T> o(q.size());
  std::vector<float> lse(static_cast<std::size_t>(BH) * S, std::nanf(""));
  std::memset(static_cast<void*>(o.data()), 0xff, o.size() * sizeof(T));  // poison: NaN in bf16 / f16
  const bool gpu = dev.backend() != tj::Backend::interpreter;
  T *dq = on(dev, q), *dk = on(dev, k), *dv = on(dev, v), *dout = on(dev, o);
  float* dl = on(dev, lse);
  const tj::DType dt = tj::dtype_v<T>;
  const long long rows_q = static_cast<long long>(BH) * S, rows_kv = static_cast<long long>(BHkv) * S;
  D dqd(dev, dq, dt, {rows_q, HD}, {HD, 1}, {BM, HD});
  D dkd(dev, dk, dt, {rows_kv, HD}, {HD, 1}, {BN, HD});
  D dvd(dev, dv, dt, {rows_kv, HD}, {HD, 1}, {BN, HD});
  auto kern = tj::compile<Kernel<BM, BN, HD, CAUSAL, T>>(
      dev, {.num_warps = BM / 16, .num_stages = c.stages, .warp_specialize = c.ws, .pingpong = c.pingpong});
  auto table = examples::fwd_item_table({.seqlen = S, .heads_q = BH, .group = c.group, .head_dim = HD, .block_m = BM, .block_n = BN,
                                         .elem_bytes = sizeof(T), .causal = CAUSAL,
                                         .programs = c.programs > 0 ? c.programs : dev.num_sms(), .section_bytes = c.section_bytes});
  std::int32_t* items = on(dev, table.data);
  CAPTURE(table.programs);
  kern.launch(table.grid(), dqd, dkd, dvd, dout, dl, items, S, c.group, static_cast<float>(scale * kLog2e));
  if (gpu) {
    dev.copy_to_host(o.data(), dout, o.size() * sizeof(T));
    dev.copy_to_host(lse.data(), dl, lse.size() * 4);
    dev.free(dq), dev.free(dk), dev.free(dv), dev.free(dout), dev.free(dl), dev.free(items);
  }
  auto head = [&](const std::vector<T>& x, int h) {
    std::vector<double> out(static_cast<std::size_t>(S) * HD);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(x[static_cast<std::size_t>(h) * S * HD + i]);
    return out;
  };
  for (int bh = 0; bh < BH; ++bh) {
    CAPTURE(bh);
    if (bh / c.group == c.nan_v_head) continue;
    const auto r = testing::attention_ref(head(q, bh), head(k, bh / c.group), head(v, bh / c.group), S, S, HD, CAUSAL, scale);
    std::vector<double> got(r.o.size()), got_lse(static_cast<std::size_t>(S));
    double worst = 0, peak = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      got[i] = static_cast<float>(o[static_cast<std::size_t>(bh) * S * HD + i]);
      REQUIRE(std::isfinite(got[i]));  // written (the poison is NaN), and no NaN from another head's V
      worst = std::max(worst, std::fabs(got[i] - r.o[i]));
      peak = std::max(peak, std::fabs(r.o[i]));
    }
    for (int i = 0; i < S; ++i) got_lse[static_cast<std::size_t>(i)] = lse[static_cast<std::size_t>(bh) * S + i];
    CHECK(worst / peak < c.tol);
    CHECK(testing::rel_error(got, r.o) < c.tol / 2);
    CHECK(testing::rel_error(got_lse, r.lse) < 1e-3);
  }
}

tj::codegen::Generated sm90(auto kernel, int warps, int stages, bool ws, bool pingpong = false) {
  return tj::codegen::generate(tj::trace(decltype(kernel){}), {}, tj::codegen::target_for("sm_90a"),
                               {.num_warps = warps, .num_stages = stages, .warp_specialize = ws, .pingpong = pingpong});
}

/// The text of the `{ ... }` block whose opening brace is the first one at or after `at`.
std::string block_from(const std::string& s, std::size_t at) {
  const std::size_t open = s.find('{', at);
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    depth += s[i] == '{' ? 1 : s[i] == '}' ? -1 : 0;
    if (depth == 0) return s.substr(at, i + 1 - at);
  }
  return s.substr(at);
}

using testing::has_diagnostic;
using testing::occurrences;

}  // namespace

TEST_CASE("attention_persistent_item_table_covers_every_block_once_balanced_heaviest_first") {
  // Every (query block, head) exactly once over the programs; causal: the list runs in equal sections of whole
  // groups (section_bytes = K and V of 2 KV heads at S = 300: sections of at most 2 · group query heads), each from
  // the longest key range down, head by head at each block; full: head by head. Each program's items are in list
  // order, and the assignment is greedy: no program's work (key blocks + 1 per item) exceeds the least-loaded
  // program's by more than one item's.
  for (auto [heads, S, group, programs] : {std::tuple{5, 300, 1, 3}, std::tuple{6, 300, 2, 4}, std::tuple{6, 128, 2, 2},
                                           std::tuple{4, 64, 1, 7}, std::tuple{3, 1, 1, 2}, std::tuple{128, 4096, 1, 132},
                                           std::tuple{10, 256, 2, 3}}) {
    for (bool causal : {false, true}) {
      CAPTURE(heads);
      CAPTURE(S);
      CAPTURE(group);
      CAPTURE(programs);
      CAPTURE(causal);
      const examples::FwdItemShape shape{.seqlen = S, .heads_q = heads, .group = group, .head_dim = 64, .block_m = 64, .block_n = 64,
                                         .causal = causal, .programs = programs, .section_bytes = 2LL * 2 * 300 * 64 * 2};
      const auto t = examples::fwd_item_table(shape);
      const int num_m = (S + 63) / 64, count = num_m * heads;
      REQUIRE(t.num_m == num_m);
      REQUIRE(t.programs == std::min(count, programs));
      REQUIRE(t.data.size() == static_cast<std::size_t>(t.programs + 1 + count));
      CHECK(t.data[0] == 0);
      CHECK(t.data[static_cast<std::size_t>(t.programs)] == count);
      // The list position of an item, as the builder orders it.
      const long long sec = causal ? t.heads_per_section : heads;
      if (causal) {
        const long long most = std::max(2LL * 2 * 300 * 64 * 2 / (2LL * S * 64 * 2), 1LL) * group;
        CHECK(sec % group == 0);
        CHECK(sec <= std::max<long long>(most, group));
        // Equal sections of a size the builder tries: from the bound down to half of it.
        long long bound = most;
        while (bound >= group && 2 * bound >= most) {
          const long long n = (heads + bound - 1) / bound;
          if (((heads + n - 1) / n + group - 1) / group * group == sec) break;
          bound -= group;
        }
        CHECK(bound >= group);
        CHECK(2 * bound >= most);
      }
      auto position = [&](int item) {
        const long long m = item % num_m, h = item / num_m;
        if (!causal) return static_cast<long long>(item);
        const long long first = h / sec * sec, n = std::min<long long>(heads - first, sec);
        return first * num_m + (num_m - 1 - m) * n + (h - first);
      };
      std::set<int> seen;
      std::vector<long long> work(static_cast<std::size_t>(t.programs), 0);
      long long heaviest = 0;
      for (int p = 0; p < t.programs; ++p) {
        CAPTURE(p);
        REQUIRE(t.data[static_cast<std::size_t>(p)] <= t.data[static_cast<std::size_t>(p) + 1]);
        long long prev = -1;
        for (int j = t.data[static_cast<std::size_t>(p)]; j < t.data[static_cast<std::size_t>(p) + 1]; ++j) {
          const int item = t.data[static_cast<std::size_t>(t.programs + 1 + j)];
          REQUIRE(item >= 0);
          REQUIRE(item < count);
          CHECK(seen.insert(item).second);
          CHECK(position(item) > prev);  // in list order
          prev = position(item);
          const long long m = item % num_m;
          const long long blocks = ((causal ? std::min<long long>(S, (m + 1) * 64) : S) + 63) / 64 + 1;
          CHECK(blocks - 1 == examples::FwdItemTable::key_blocks(shape, m));
          work[static_cast<std::size_t>(p)] += blocks;
          heaviest = std::max(heaviest, blocks);
        }
      }
      CHECK(seen.size() == static_cast<std::size_t>(count));
      const auto [lo, hi] = std::minmax_element(work.begin(), work.end());
      CHECK(*hi - *lo <= heaviest);
      if (!causal) CHECK(*hi - *lo <= (S + 63) / 64 + 1);  // equal items: counts differ by at most one
    }
  }
  // The paper case: B·H = 128, S = 4096, 132 programs, causal at D 64 / 96 / 128 (and D = 64's 192 x 96 items) —
  // the busiest program within 1.5% of the average (round robin over the old list: 3% at D 64 / 128, 10% at D 96),
  // in sections of at most 8 MiB of K and V (4 heads at D = 128: the sizing that reads them from DRAM once).
  for (auto [d, bm, bn] : {std::tuple{64, 128, 128}, std::tuple{96, 128, 128}, std::tuple{128, 128, 128}, std::tuple{64, 192, 96}}) {
    CAPTURE(d);
    CAPTURE(bm);
    const examples::FwdItemShape shape{.seqlen = 4096, .heads_q = 128, .head_dim = d, .block_m = bm, .block_n = bn, .causal = true,
                                       .programs = 132};
    const auto t = examples::fwd_item_table(shape);
    CHECK(t.heads_per_section * 2 * 4096 * d * 2 <= examples::kFwdSectionBytes);
    std::vector<long long> work(132, 0);
    long long total = 0;
    for (int p = 0; p < 132; ++p)
      for (int j = t.data[static_cast<std::size_t>(p)]; j < t.data[static_cast<std::size_t>(p) + 1]; ++j) {
        const long long w = examples::FwdItemTable::key_blocks(shape, t.data[static_cast<std::size_t>(133 + j)] % t.num_m) + 1;
        work[static_cast<std::size_t>(p)] += w;
        total += w;
      }
    CHECK(static_cast<double>(*std::max_element(work.begin(), work.end())) / (static_cast<double>(total) / 132) < 1.015);
  }
}

TEST_CASE("attention_persistent_item_table_rejects_bad_shapes") {
  auto bad = [](examples::FwdItemShape s, const char* text) {
    CAPTURE(text);
    try {
      (void)examples::fwd_item_table(s);
      FAIL("no error");
    } catch (const tj::InvalidArgument& e) {
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  bad({.seqlen = 0}, "seqlen = 0");
  bad({.programs = 0}, "programs = 0");
  bad({.heads_q = 6, .group = 4}, "heads_q = 6 is not a multiple of group = 4");
  bad({.seqlen = 1LL << 30, .heads_q = 1LL << 20, .block_m = 1}, "at most 2^31 - 1");
}

TEST_CASE("attention_persistent_interpreter_matches_f64") {
  auto dev = tj::Device::interpreter();
  // Ragged S (blocks run into the next head), 6 items over 4 programs (some take two), full and causal.
  check_persistent<64, 64, 64, false, bf>(dev, {.B = 1, .Hq = 3, .S = 100, .programs = 4});
  check_persistent<64, 64, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 130, .programs = 4});
  // D = 96 exact, GQA, BLOCK_M > BLOCK_N (two masked blocks on the diagonal), f16; one program takes every item.
  check_persistent<64, 32, 96, true, tj::f16>(dev, {.B = 1, .Hq = 4, .group = 2, .S = 70, .programs = 1, .tol = 1e-2});
  check_persistent<64, 32, 96, false, bf>(dev, {.B = 2, .Hq = 2, .group = 2, .S = 75, .programs = 3});
  // More programs than items (programs with no item), and a single key.
  check_persistent<64, 64, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 64, .programs = 5});
  check_persistent<64, 64, 64, true, bf>(dev, {.B = 1, .Hq = 1, .S = 1, .programs = 2});
  // 192-row items over 12 warps (three warp groups; the interpreter runs the IR, the layouts are the GPU case's).
  check_persistent<192, 128, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 300, .programs = 2});
  // No key masked (S a multiple of BLOCK_N, full attention).
  check_persistent<64, 64, 64, false, bf, PersistentEvenN>(dev, {.B = 1, .Hq = 2, .group = 2, .S = 128, .programs = 3});
  // The grid of the library: min(items, SMs) with the interpreter's "SMs" (its threads).
  check_persistent<64, 64, 128, true, bf>(dev, {.B = 2, .Hq = 2, .S = 150});
  // D = 256 with the library's 64-key blocks (rows of 512 bytes: four 128-byte TMA boxes per block).
  check_persistent<64, 64, 256, true, bf>(dev, {.B = 1, .Hq = 2, .group = 2, .S = 90, .programs = 2});
  // Causal sections of 4 KV heads at S = 256: 10 query heads in equal sections of 6 and 4 (group 2).
  check_persistent<64, 64, 64, true, bf>(dev, {.B = 1, .Hq = 10, .group = 2, .S = 256, .programs = 3, .section_bytes = 4LL * 2 * 256 * 64 * 2});
}

TEST_CASE("attention_persistent_reads_no_v_row_of_another_head_when_s_is_a_multiple_of_block_n") {
  // V of KV head 0 is NaN in its last block; head 1's items (and the items after them in a program) must stay finite.
  auto dev = tj::Device::interpreter();
  check_persistent<64, 64, 64, false, bf>(dev, {.B = 1, .Hq = 2, .S = 128, .programs = 1, .nan_v_head = 0});
  check_persistent<64, 64, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 128, .programs = 3, .nan_v_head = 0});
}

TEST_CASE("attention_persistent_sm90a_code_copies_q_the_first_k_and_the_last_v_once_per_item") {
  // Warp-specialised: the producer walks the item loop; per item it copies Q (after the consumers released the
  // previous item's Q) and the first K block (fa3_keys peels block 0: no P·V with P = 0), the key loop's K / V ring
  // (one counter across items), then the last V block. The consumers wait for the item's phase before reading,
  // release the first K block once S_0 is complete and before the key loop, Q after the key loop and the last V
  // after its product, and count items (tj_oit).
  const auto g = sm90(Persistent<128, 128, 128, true, bf>{}, 8, 2, true);
  const std::string& src = g.source;
  CHECK(has_diagnostic(g, "warp specialised: 8 consumer warp(s)"));
  CHECK(has_diagnostic(g, "warp specialised: the producer walks loop %"));
  std::smatch m;
  const std::regex item_diag(R"(desc_load %(\d+): copied by TMA once per iteration of loop %(\d+) into one buffer of 32768 bytes)");
  std::vector<int> blocks;
  int outer = -1;
  for (const auto& d : g.diagnostics)
    if (std::regex_search(d, m, item_diag)) {
      blocks.push_back(std::stoi(m[1]));
      outer = std::stoi(m[2]);
    }
  REQUIRE(blocks.size() == 3);  // Q, the first K block and the last V block
  const int q = blocks[0], k0 = blocks[1], vl = blocks[2];
  CHECK(occurrences(src, "copied once by TMA") == 0);  // nothing resident: every block is per item or pipelined
  const std::size_t prod = src.find("if (tj_warp >= 8) {");
  REQUIRE(prod != std::string::npos);
  const std::string P = block_from(src, prod), C = src.substr(prod + P.size());
  // The producer: Q before the key loop's walk, the last V after it, each after the previous item's release.
  const std::string issue_q = fmt::format("if (tj_oit{0} > 0u) tj_mbar_wait(tj_ibar{1} + 8u, (tj_oit{0} - 1u) & 1u); tj_mbar_expect_tx(tj_ibar{1}, 32768u);", outer, q);
  const std::string issue_v = fmt::format("if (tj_oit{0} > 0u) tj_mbar_wait(tj_ibar{1} + 8u, (tj_oit{0} - 1u) & 1u); tj_mbar_expect_tx(tj_ibar{1}, 32768u);", outer, vl);
  const std::string issue_k0 = fmt::format("if (tj_oit{0} > 0u) tj_mbar_wait(tj_ibar{1} + 8u, (tj_oit{0} - 1u) & 1u); tj_mbar_expect_tx(tj_ibar{1}, 32768u);", outer, k0);
  const std::size_t pq = P.find(issue_q), pk0 = P.find(issue_k0), pv = P.find(issue_v), pwalk = P.find("tj_issue");
  REQUIRE(pq != std::string::npos);
  REQUIRE(pk0 != std::string::npos);
  CHECK(pk0 < P.find("for (int s", P.find(fmt::format("for (int s{} = ", outer)) + 10));  // the first K before the key loop
  REQUIRE(pv != std::string::npos);
  REQUIRE(pwalk != std::string::npos);
  CHECK(pq < P.find("for (int s", P.find(fmt::format("for (int s{} = ", outer)) + 10));  // Q before the key loop
  CHECK(pv > P.rfind("tj_issue"));                                                     // the last V after it
  CHECK(occurrences(P, "tj_tma_load_2d(tj_item") == 3 * 2);                            // 2 slabs each
  CHECK(P.find(fmt::format("unsigned tj_oit{} = 0;", outer)) < P.find(fmt::format("for (int s{} = ", outer)));
  CHECK(occurrences(P, fmt::format("++tj_oit{};", outer)) == 1);
  // The consumers: no copy of their own; one wait per read and one release per item and block; the phase counter.
  CHECK(C.find("tj_tma_load_2d") == std::string::npos);
  CHECK(occurrences(C, fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", q)) == 1);
  CHECK(occurrences(C, fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", vl)) == 1);
  CHECK(occurrences(C, fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", k0)) == 1);
  CHECK(occurrences(C, fmt::format("++tj_oit{};", outer)) == 1);
  const std::size_t key_loop = C.find("for (int s", C.find("const unsigned tj_it0"));  // the key loop (after its ring snapshot)
  REQUIRE(key_loop != std::string::npos);
  const std::size_t key_end = key_loop + block_from(C, key_loop).size();
  // The first K block: read by S_0 before the key loop, released once that product is complete, still before it.
  const std::size_t read_k0 = C.find(fmt::format("tj_mbar_wait(tj_ibar{0}, tj_oit{1} & 1u);  // block %{0}", k0, outer));
  const std::size_t rel_k0 = C.find(fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", k0));
  CHECK(read_k0 < rel_k0);
  CHECK(rel_k0 < key_loop);
  CHECK(C.rfind("wgmma.wait_group.sync.aligned 0;", rel_k0) > read_k0);
  CHECK(C.find("wgmma.mma_async", key_loop) < key_end);  // S and P·V stay in the loop
  const std::size_t rel_q = C.find(fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", q));
  const std::size_t rel_v = C.find(fmt::format("tj_mbar_arrive(tj_ibar{} + 8u);", vl));
  const std::size_t read_v = C.find(fmt::format("tj_mbar_wait(tj_ibar{0}, tj_oit{1} & 1u);  // block %{0}", vl, outer));
  CHECK(C.find(fmt::format("tj_mbar_wait(tj_ibar{0}, tj_oit{1} & 1u);  // block %{0}", q, outer), key_loop) < key_end);  // Q read in the key loop
  CHECK(rel_q > key_end);         // released after it ...
  CHECK(rel_q < read_v);          // ... before the last V is read
  CHECK(read_v < rel_v);
  CHECK(C.rfind("wgmma.wait_group.sync.aligned 0;", rel_v) > read_v);  // the last product completed before the release
  CHECK(rel_v < C.find(fmt::format("++tj_oit{};", outer)));
  // The barriers: full (1 arrival: the expect_tx) and empty (8 consumer warps) per block.
  CHECK(occurrences(src, fmt::format("tj_mbar_init(tj_ibar{0}, 1); tj_mbar_init(tj_ibar{0} + 8u, 8);", q)) == 1);
  CHECK(occurrences(src, fmt::format("tj_mbar_init(tj_ibar{0}, 1); tj_mbar_init(tj_ibar{0} + 8u, 8);", vl)) == 1);
  CHECK(occurrences(src, fmt::format("tj_mbar_init(tj_ibar{0}, 1); tj_mbar_init(tj_ibar{0} + 8u, 8);", k0)) == 1);
  // Shared memory: the ring (2 x (K + V)) and the three item buffers, as the one-program-per-item kernel's.
  const auto per_item = sm90(examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, true, bf>{}, 8, 2, true);
  CHECK(g.dynamic_shared_bytes == per_item.dynamic_shared_bytes);
  testing::compiles_for_sm90a(src, "attn_persistent.cu");
}

TEST_CASE("attention_persistent_sm90a_code_without_a_producer_copies_per_item_from_thread_0") {
  // Without warp specialisation thread 0 copies each item's blocks where they are loaded, after every warp
  // released the previous item's copy.
  const auto g = sm90(Persistent<128, 128, 64, false, bf>{}, 8, 2, false);
  CHECK(!has_diagnostic(g, "warp specialised"));
  CHECK(occurrences(g.source, "if (tj_tid == 0) { if (tj_oit") == 2);  // Q, the last V block (D = 64: block 0 in the loop)
  CHECK(occurrences(g.source, "tj_mbar_arrive(tj_ibar") == 2);
  const auto g128 = sm90(Persistent<128, 128, 128, false, bf>{}, 8, 2, false);
  CHECK(occurrences(g128.source, "if (tj_tid == 0) { if (tj_oit") == 3);  // and the first K block (D = 128: peeled)
  CHECK(occurrences(g128.source, "tj_mbar_arrive(tj_ibar") == 3);
  testing::compiles_for_sm90a(g.source, "attn_persistent_plain.cu");
  // Off Hopper the descriptor loads are masked loads and the kernel is a plain persistent loop.
  std::string why;
  if (tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    const auto off = tj::codegen::generate(tj::trace(Persistent<64, 64, 96, true, bf>{}), {}, tj::codegen::target_for("sm_80"),
                                           {.num_warps = 4});
    CHECK(off.tma_params.empty());
    CHECK_NOTHROW(tj::compile_for_arch<Persistent<64, 64, 96, true, bf>>("sm_80", {.num_warps = 4}));
  }
}

TEST_CASE("attention_persistent_sm90a_compiles_without_spills") {
  // As the library would run it: 128 x 128, 8 consumer warps + a producer warp group, 2 stages (3 for the
  // persistent kernel at D = 96, whose exactly held K and V leave room for it); next to the one-program-per-item
  // kernel. D = 64 and 96: no spill in either (registers go to the test log).
  auto both = [](auto persistent, auto per_item, const std::string& tag) {
    const auto g = sm90(persistent, 8, tag.rfind("d96", 0) == 0 ? 3 : 2, true);
    CHECK(has_diagnostic(g, "warp specialised: 8 consumer warp(s)"));
    testing::compiles_for_sm90a_without_spills(g.source, "persistent_" + tag + ".cu");
    testing::compiles_for_sm90a_without_spills(sm90(per_item, 8, 2, true).source, "per_item_" + tag + ".cu");
  };
  both(Persistent<128, 128, 64, false, bf>{}, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 64, false, bf>{}, "d64_full");
  both(Persistent<128, 128, 64, true, bf>{}, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 64, true, bf>{}, "d64_causal");
  both(PersistentEvenN<128, 128, 64, false, bf>{}, examples::FlashAttnFwdTmaPingPongEvenN<128, 128, 64, false, bf>{}, "d64_even");
  both(Persistent<128, 128, 96, false, bf>{}, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 96, false, bf>{}, "d96_full");
  both(Persistent<128, 128, 96, true, bf>{}, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 96, true, bf>{}, "d96_causal");
  both(PersistentEvenN<128, 128, 96, false, bf>{}, examples::FlashAttnFwdTmaPingPongEvenN<128, 128, 96, false, bf>{}, "d96_even");
  // The library's D = 64 items of 192 rows (S >= 1024; attention.hpp): 12 consumer warps, 128-key blocks unmasked
  // (full, S a multiple of 128) and 96-key blocks with edge masks (causal), bf16 and f16.
  for (const auto& [g, tag] : {std::pair{sm90(PersistentEvenN<192, 128, 64, false, bf>{}, 12, 2, true), "d64_even_192x128"},
                               std::pair{sm90(PersistentEvenN<192, 128, 64, false, tj::f16>{}, 12, 2, true), "d64_even_192x128_f16"},
                               std::pair{sm90(PersistentRank3<192, 96, 64, true, bf>{}, 12, 2, true), "d64_causal_192x96"},
                               std::pair{sm90(PersistentRank3<192, 96, 64, true, tj::f16>{}, 12, 2, true), "d64_causal_192x96_f16"}}) {
    CAPTURE(tag);
    CHECK(has_diagnostic(g, "warp specialised: 12 consumer warp(s)"));
    testing::compiles_for_sm90a_without_spills(g.source, std::string("persistent_") + tag + ".cu");
  }
}

TEST_CASE("attention_persistent_sm90a_consumers_get_the_registers_setmaxnreg_asks_for") {
  // The kernel is declared __maxnreg__(65536 / threads) — 128 at 512 threads — and ptxas compiles the consumer warp
  // groups' code, which follows setmaxnreg.inc, within the count that instruction asks for (160 here), not the
  // launch's 128: D = 64 causal over 192-row items and 96-key blocks needs more than 128 and compiles without a spill;
  // the same text without the setmaxnreg.inc spills. (docs/perf.md v0.17: an earlier reading of "Used 128
  // registers" — the count at launch — took it for the consumers' ceiling.)
  std::string why;
  if (!tj::runtime::compiler_available(tj::runtime::Compiler::nvrtc, &why)) {
    MESSAGE("skipping: ", why);
    return;
  }
  const auto g = sm90(Persistent<192, 96, 64, true, bf>{}, 12, 2, true);
  REQUIRE(has_diagnostic(g, "12 consumer warp(s) with 160 registers each"));
  REQUIRE(g.source.find("__maxnreg__(128)") != std::string::npos);
  auto spilled = [](const std::string& src) {
    const auto res = testing::compile_sm90a(src, "consumer_registers.cu", {"--ptxas-options=-v"});
    REQUIRE(res);
    CHECK(res->log.find("C7508") == std::string::npos);  // "'setmaxnreg' ignored"
    std::smatch m;
    REQUIRE(std::regex_search(res->log, m, std::regex(R"((\d+) bytes spill stores)")));
    return std::stoi(m[1]);
  };
  CHECK(spilled(g.source) == 0);
  const std::string inc = "asm volatile(\"setmaxnreg.inc.sync.aligned.u32 160;\");";
  std::string without = g.source;
  const std::size_t at = without.find(inc);
  REQUIRE(at != std::string::npos);
  without.erase(at, inc.size());
  CHECK(spilled(without) > 0);
}

TEST_CASE("attention_sm90a_anchored_waits_keep_the_softmax_before_the_wait_for_p_v") {
  // CompileOptions::anchor_deferred_waits: the wait that retires O += P_{j-1}·V_{j-1} is issued first in a branch
  // on the row max and row sum of S_j (NaN checks), then unconditionally; off (the default) only the latter.
  const tj::ir::Kernel k = tj::trace(examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, false, bf>{});
  auto gen = [&](bool anchor) {
    return tj::codegen::generate(k, {}, tj::codegen::target_for("sm_90a"),
                                 {.num_warps = 8, .num_stages = 2, .warp_specialize = true, .anchor_deferred_waits = anchor}).source;
  };
  const std::string off = gen(false), on = gen(true);
  CHECK(off.find("anchors the wait") == std::string::npos);
  REQUIRE(occurrences(on, "anchors the wait") == 1);
  const std::size_t a = on.find("anchors the wait");
  const std::size_t branch = on.rfind("if (__all_sync(0xffffffffu, ", a);
  REQUIRE(branch != std::string::npos);
  // After the exp2s of the softmax, and followed at once by the unconditional wait.
  CHECK(on.rfind("tj_exp2(", branch) != std::string::npos);
  CHECK(on.find("tj_exp2(", a) > on.find("wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");  // deferred wgmma complete", a));
  CHECK(on.find("wgmma.wait_group.sync.aligned 0;", branch) < on.find("  // deferred wgmma complete", branch));
  CHECK(on.substr(branch, a - branch).find(" == ") != std::string::npos);
  testing::compiles_for_sm90a_without_spills(on, "anchored_d128.cu");
}

TEST_CASE("attention_persistent_sm90a_pingpong_turns_continue_across_items") {
  // The key loop is nested in the item loop. Group 1 hands group 0 its first turn once, before the item loop, and
  // group 0 takes the last hand-off once, after it: per item, group 1 could hand over twice in a row (its last
  // turn's hand-off, then the next item's first) before group 0 took one, completing barrier 2 with group 1 alone.
  const auto check = [](auto kernel, const std::string& tag) {
    CAPTURE(tag);
    const auto g = sm90(kernel, 8, tag.rfind("d96", 0) == 0 ? 3 : 2, true, true);  // D = 96: 3 stages, as the library's
    const std::regex turns("pingpong: the warp groups take turns over loop %([0-9]+)'s wgmma from dot %[0-9]+ to dot %[0-9]+, "
                           "continuing across loop %([0-9]+)'s iterations");
    std::smatch m;
    const std::string diag = fmt::format("{}", fmt::join(g.diagnostics, "\n"));
    REQUIRE(std::regex_search(diag, m, turns));
    const std::string inner = m[1], outer = m[2];
    const std::string& src = g.source;
    CHECK(occurrences(src, "warp group 0 issues first") == 1);
    CHECK(occurrences(src, "the last hand-off") == 1);
    CHECK(occurrences(src, "this warp group's turn") == 1);
    CHECK(occurrences(src, "the other group's turn") == 1);
    // The consumers' item loop (the producer's comes first), and the turns inside it.
    const std::size_t producer_outer = src.find("for (int s" + outer + " =");
    const std::size_t consumer_outer = src.find("for (int s" + outer + " =", producer_outer + 1);
    REQUIRE(consumer_outer != std::string::npos);
    const std::string body = block_from(src, consumer_outer);
    const std::size_t first = src.find("warp group 0 issues first"), last = src.find("the last hand-off");
    CHECK(first < consumer_outer);
    CHECK(src.rfind("\n", first) > producer_outer);     // after the producer's loops (the consumers' code)
    CHECK(last > consumer_outer + body.size());        // after the item loop closes
    CHECK(body.find("for (int s" + inner + " =") != std::string::npos);
    CHECK(body.find("this warp group's turn") != std::string::npos);
    testing::compiles_for_sm90a_without_spills(src, "persistent_pingpong_" + tag + ".cu");
  };
  check(PersistentEvenN<128, 128, 64, false, bf>{}, "d64_even");
  check(Persistent<128, 128, 64, true, bf>{}, "d64_causal");
  check(PersistentEvenN<128, 128, 128, false, bf>{}, "d128_even");
  check(Persistent<128, 128, 96, true, bf>{}, "d96_causal");
}

TEST_CASE("attention_persistent_sm90a_d128_spills_no_more_than_the_per_item_kernel") {
  // At D = 128 the one-program-per-item kernel spilled 12-44 bytes while P was carried in f32 (64 registers per
  // thread) with P·V in flight; carried packed in bf16 pairs (32, codegen plan_packed) it spills nothing, and must
  // not again. The persistent kernel also keeps its item state (the item index, the counts, the item's head and
  // block) live across the key loop; its spill bytes (stores + loads) must stay within 64 bytes of the per-item
  // kernel's (at this commit: full 20 / 20, causal and EvenN 0).
  auto spills = [](const tj::codegen::Generated& g, const std::string& name) {
    const auto res = testing::compile_sm90a(g.source, name, {"--ptxas-options=-v"});
    if (!res) return -1;
    std::smatch m;
    REQUIRE(std::regex_search(res->log, m, std::regex(R"((\d+) bytes spill stores, (\d+) bytes spill loads)")));
    CHECK(res->log.find("wgmma.mma_async instructions are serialized") == std::string::npos);
    MESSAGE(name, ": ", m[0].str());
    return std::stoi(m[1]) + std::stoi(m[2]);
  };
  auto both = [&](auto persistent, auto per_item, const std::string& tag) {
    const int p = spills(sm90(persistent, 8, 2, true), "persistent_" + tag + ".cu");
    const int i = spills(sm90(per_item, 8, 2, true), "per_item_" + tag + ".cu");
    if (p >= 0) CHECK(p <= i + 2 * 32);
    if (i >= 0) CHECK(i == 0);
  };
  both(Persistent<128, 128, 128, false, bf>{}, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, false, bf>{}, "d128_full");
  both(Persistent<128, 128, 128, true, bf>{}, examples::FlashAttnFwdTmaPingPongEdge<128, 128, 128, true, bf>{}, "d128_causal");
  both(PersistentEvenN<128, 128, 128, false, bf>{}, examples::FlashAttnFwdTmaPingPongEvenN<128, 128, 128, false, bf>{}, "d128_even");
}

TEST_CASE("attention_persistent_gpu_matches_f64") {
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  // The library's configuration (128 x 128, a producer warp group, 2 stages), library grid (one program per SM).
  const Case base{.stages = 2, .ws = true};
  auto with = [&](Case c) {
    c.stages = base.stages;
    c.ws = base.ws;
    return c;
  };
  // More items than SMs (160 over at most 132 programs on an H200), full and causal, ragged S.
  check_persistent<128, 128, 64, false, bf>(dev, with({.B = 2, .Hq = 16, .S = 640 - 17}));
  check_persistent<128, 128, 64, true, bf>(dev, with({.B = 2, .Hq = 16, .S = 640}));
  check_persistent<128, 128, 96, true, bf>(dev, with({.B = 2, .Hq = 8, .group = 2, .S = 768}));
  check_persistent<128, 128, 96, false, tj::f16>(dev, with({.B = 2, .Hq = 4, .group = 4, .S = 777, .tol = 1e-2}));
  check_persistent<128, 128, 128, true, bf>(dev, with({.B = 2, .Hq = 8, .group = 4, .S = 640, .programs = 9}));
  check_persistent<128, 128, 128, false, bf>(dev, with({.B = 1, .Hq = 4, .S = 1000, .programs = 3}));
  check_persistent<128, 128, 128, false, bf, PersistentEvenN>(dev, with({.B = 2, .Hq = 4, .S = 512}));
  // More programs than items, a single key.
  check_persistent<128, 128, 128, false, bf>(dev, with({.B = 1, .Hq = 2, .S = 200, .programs = 7}));
  check_persistent<128, 128, 64, true, bf>(dev, with({.B = 1, .Hq = 2, .S = 1, .programs = 2}));
  // Causal sections of 2 KV heads: 10 query heads (group 2) in sections of 4, 4 and 2 (whole groups).
  check_persistent<128, 128, 128, true, bf>(dev, with({.B = 1, .Hq = 10, .group = 2, .S = 512, .programs = 6,
                                                       .section_bytes = 2LL * 2 * 512 * 128 * 2}));
  // 192-row items: three consumer warp groups (num_warps = 12: the warp digits 2·2·3), D = 64 and 96, ragged S.
  check_persistent<192, 128, 64, true, bf>(dev, with({.B = 2, .Hq = 8, .group = 2, .S = 700}));
  check_persistent<192, 128, 64, false, bf>(dev, with({.B = 2, .Hq = 8, .S = 640 - 5}));
  check_persistent<192, 128, 64, false, bf, PersistentEvenN>(dev, with({.B = 2, .Hq = 4, .S = 768}));
  check_persistent<192, 128, 96, true, bf>(dev, with({.B = 1, .Hq = 8, .group = 4, .S = 1000}));
  // The library's D = 64 causal items: 192 rows, 96-key blocks (the diagonal crosses key blocks mid item).
  check_persistent<192, 96, 64, true, bf>(dev, with({.B = 2, .Hq = 8, .group = 2, .S = 1100}));
  check_persistent<192, 96, 64, true, tj::f16>(dev, with({.B = 1, .Hq = 4, .S = 1024, .tol = 1e-2}));
  // A NaN in the last V block of a KV head stays there (S a multiple of 128), full and causal.
  check_persistent<128, 128, 64, false, bf>(dev, with({.B = 2, .Hq = 4, .S = 512, .nan_v_head = 0}));
  check_persistent<128, 128, 128, true, bf>(dev, with({.B = 2, .Hq = 4, .group = 2, .S = 512, .programs = 5, .nan_v_head = 1}));
}

TEST_CASE("attention_persistent_gpu_pingpong_matches_f64") {
  // The warp groups take turns over their products, the turns continuing from item to item (see the sm90a test):
  // programs with many items, one item, none; full and causal; ragged S; GQA.
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  const auto pp = [](Case c) {
    c.stages = 2, c.ws = true, c.pingpong = true;
    return c;
  };
  check_persistent<128, 128, 64, false, bf, PersistentEvenN>(dev, pp({.B = 2, .Hq = 16, .S = 640}));
  check_persistent<128, 128, 64, true, bf>(dev, pp({.B = 2, .Hq = 16, .S = 640 - 17}));
  check_persistent<128, 128, 96, true, bf>(dev, pp({.B = 2, .Hq = 8, .group = 2, .S = 768, .programs = 7}));
  check_persistent<128, 128, 128, false, bf, PersistentEvenN>(dev, pp({.B = 2, .Hq = 4, .S = 512, .programs = 3}));
  check_persistent<128, 128, 128, true, bf>(dev, pp({.B = 2, .Hq = 8, .group = 4, .S = 640, .programs = 9}));
  check_persistent<128, 128, 128, false, tj::f16>(dev, pp({.B = 1, .Hq = 4, .S = 1000, .programs = 3, .tol = 1e-2}));
  // More programs than items (some programs take none), a single key.
  check_persistent<128, 128, 128, false, bf>(dev, pp({.B = 1, .Hq = 2, .S = 200, .programs = 7}));
  check_persistent<128, 128, 64, true, bf>(dev, pp({.B = 1, .Hq = 2, .S = 1, .programs = 2}));
}

TEST_CASE("attention_persistent_gpu_small_for_the_sanitizers") {
  // Two programs taking 3 items each, causal (items of 1 to 3 key blocks) and full, producer warp group:
  // small enough for compute-sanitizer racecheck / synccheck (scripts/device_persist2.sh).
  auto dev = tj::Device::best();
  if (dev.backend() != tj::Backend::cuda) {
    MESSAGE("no GPU: skipping");
    return;
  }
  check_persistent<128, 128, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 300, .programs = 2, .stages = 2, .ws = true});
  check_persistent<128, 128, 128, false, bf>(dev, {.B = 1, .Hq = 2, .S = 300, .programs = 2, .stages = 2, .ws = true});
  // Block 0 peeled (D = 96 and 128): the first K block's own buffer, reused item after item.
  check_persistent<128, 128, 96, true, bf>(dev, {.B = 1, .Hq = 2, .S = 300, .programs = 2, .stages = 3, .ws = true});
  check_persistent<128, 128, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 300, .programs = 2, .stages = 2, .ws = true, .pingpong = true});
  // The library's D = 64 items of 192 rows over 12 consumer warps: 96-key blocks causal, 128-key blocks unmasked.
  check_persistent<192, 96, 64, true, bf>(dev, {.B = 1, .Hq = 2, .S = 400, .programs = 2, .stages = 2, .ws = true});
  check_persistent<192, 128, 64, false, bf, PersistentEvenN>(dev, {.B = 1, .Hq = 2, .S = 384, .programs = 2, .stages = 2, .ws = true});
}
