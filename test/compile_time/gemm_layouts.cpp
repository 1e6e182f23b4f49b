#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/conversion.hpp"
#include "tilejit/layout/encodings/encodings.hpp"
namespace L = tilejit::layout;
// A GEMM kernel's layouts (128x128 tile, 8 warps), evaluated at compile time.
constexpr auto acc = L::mma_sync_accumulator({128, 128}, {4, 2});
constexpr auto a = L::mma_sync_operand_a({128, 32}, {4, 2});
constexpr auto b = L::mma_sync_operand_b({32, 128}, {4, 2});
constexpr auto blk = L::blocked({128, 128}, {1, 4}, {1, 32}, {8, 1}, {1, 0});
constexpr auto plan = L::plan_conversion(acc, blk, 4);
static_assert(plan.kind == L::ConversionKind::shared_memory);
constexpr auto w96 = L::wgmma_accumulator(96, 4);
static_assert(w96.out_size(1) == 96);
int main() { return acc.num_in_dims() + a.num_in_dims() + b.num_in_dims(); }
