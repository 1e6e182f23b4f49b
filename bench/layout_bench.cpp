// Layout algebra at run time (Google Benchmark, no GPU needed).
//
// The JIT builds a kernel's layouts and plans its conversions on every cold
// compile, so both must cost nothing noticeable: the target is < 20 µs per
// call on 2-D tiles of 64×256 elements with 4 and 8 warps.
//
//   BM_InvertAndCompose/<pair>/<warps>  dst.invert_and_compose(src): for each
//                                       destination register, its source holder
//   BM_PlanConversion/<pair>/<warps>    plan_conversion(src, dst), the whole
//                                       planner (kind, holder or swizzle, costs)
//
// Pairs: blocked↔blocked (row-major 1×4 per thread vs column-major 4×1) and
// blocked↔mma (mma.sync m16n8k16 accumulator), both directions.
#include <benchmark/benchmark.h>

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/conversion.hpp"
#include "tilejit/layout/encodings/mma_sync.hpp"

namespace {
using namespace tilejit::layout;
using LL = LinearLayout;

enum Pair { kBlockedBlocked, kBlockedMma, kMmaBlocked };

LL row_major(int warps) { return blocked({64, 256}, {1, 4}, {8, 4}, {warps, 1}, {1, 0}); }
LL col_major(int warps) { return blocked({64, 256}, {4, 1}, {4, 8}, {1, warps}, {0, 1}); }
LL mma(int warps) { return mma_sync_accumulator({64, 256}, {2, warps / 2}); }

std::pair<LL, LL> layouts(int pair, int warps) {
  switch (pair) {
    case kBlockedBlocked: return {row_major(warps), col_major(warps)};
    case kBlockedMma: return {row_major(warps), mma(warps)};
    default: return {mma(warps), row_major(warps)};
  }
}

const char* pair_name(int pair) {
  return pair == kBlockedBlocked ? "blocked->blocked" : pair == kBlockedMma ? "blocked->mma" : "mma->blocked";
}

void BM_InvertAndCompose(benchmark::State& state) {
  const auto [src, dst] = layouts(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    auto c = dst.invert_and_compose(src);
    benchmark::DoNotOptimize(c);
  }
  state.SetLabel(pair_name(static_cast<int>(state.range(0))));
}

void BM_PlanConversion(benchmark::State& state) {
  const auto [src, dst] = layouts(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  ConversionPlan p;
  for (auto _ : state) {
    p = plan_conversion(src, dst);
    benchmark::DoNotOptimize(p);
  }
  state.SetLabel(std::string(pair_name(static_cast<int>(state.range(0)))) + " " +
                 std::string(to_string(p.kind)));
  state.counters["smem_bytes"] = p.cost.smem_bytes;
  state.counters["instr"] = p.cost.instructions;
  state.counters["conflict_free"] = p.cost.bank_conflict_free() ? 1 : 0;
}

void pairs(benchmark::internal::Benchmark* b) {
  for (int pair : {kBlockedBlocked, kBlockedMma, kMmaBlocked}) {
    for (int warps : {4, 8}) b->Args({pair, warps});
  }
  b->ArgNames({"pair", "warps"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_InvertAndCompose)->Apply(pairs);
BENCHMARK(BM_PlanConversion)->Apply(pairs);

}  // namespace

BENCHMARK_MAIN();
