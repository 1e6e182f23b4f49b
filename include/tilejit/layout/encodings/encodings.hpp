// tilejit/layout/encodings/encodings.hpp — every standard encoding factory.
//
//   slice(layout, dim)                          reduction results   slice.hpp
//   mma_sync_accumulator / _operand_a / _b      mma.sync m16n8k16   mma_sync.hpp
//   wgmma_accumulator (any legal N, NPOT too)   wgmma m64nNk16      wgmma.hpp
//   nvmma_shared (none/32/64/128-byte swizzle)  shared memory       nvmma_shared.hpp
//   mfma_accumulator (32×32, 16×16, wave64)     AMD MFMA            mfma.hpp
//
// The blocked layout lives one level up (tilejit/layout/blocked.hpp). Every
// factory is constexpr and returns a LinearLayout with inputs "register",
// "lane", "warp" (or "offset" for shared memory) and outputs "dim0", "dim1".
#pragma once

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/encodings/mfma.hpp"
#include "tilejit/layout/encodings/mma_sync.hpp"
#include "tilejit/layout/encodings/nvmma_shared.hpp"
#include "tilejit/layout/encodings/slice.hpp"
#include "tilejit/layout/encodings/wgmma.hpp"
