// bench/ratio_rows.hpp: how gemm_bench pairs a tilejit row with its cuBLAS baseline.
#include <doctest/doctest.h>

#include "bench/ratio_rows.hpp"

namespace RatioReporter = bench::ratio_rows;

TEST_CASE("gemm_bench_ratio_rows_pair_by_shape_and_what_they_compute") {
  CHECK(RatioReporter::shape_of("BM_TilejitGemmBf16Out/large/4096/28672/4096") == "4096/28672/4096");
  CHECK(RatioReporter::shape_of("BM_TilejitV5/128x256/4/8192/96/8192") == "8192/96/8192");
  CHECK_FALSE(RatioReporter::shape_of("BM_TinyLaunches/3").has_value());
  CHECK_FALSE(RatioReporter::shape_of("BM_X/64x96/8192/96").has_value());
  CHECK(RatioReporter::family_of("BM_CublasTN<>/8192/96/8192") == "BM_CublasTN");
  CHECK(RatioReporter::family_of("BM_CublasTN/large/4096/4096/4096") == "BM_CublasTN");
  CHECK(RatioReporter::baseline_of("BM_TilejitGemmBf16Out/large/1/2/3") == "BM_CublasTNBf16Out");
  CHECK(RatioReporter::baseline_of("BM_TilejitV6Store/128x256/3/1/2/3") == "BM_CublasTNBf16Out");
  CHECK(RatioReporter::baseline_of("BM_TilejitV6StoreF32/128x256/3/1/2/3") == "BM_CublasTN");
  CHECK(RatioReporter::baseline_of("BM_TilejitGemmF16/large/1/2/3") == "BM_CublasTNF16");
  CHECK(RatioReporter::baseline_of("BM_TilejitV5F8/128x256/4/1/2/3") == "BM_CublasLtF8");
  CHECK(RatioReporter::baseline_of("BM_TilejitV5I8/128x256/4/1/2/3") == "BM_CublasI8");
  CHECK(RatioReporter::baseline_of("BM_TilejitV5TF32/128x128/4/1/2/3") == "BM_CublasTF32");
  CHECK(RatioReporter::baseline_of("BM_TilejitV3/128x128/1/2/3") == "BM_Cublas");
  CHECK(RatioReporter::baseline_of("BM_TilejitGemm/large/1/2/3") == "BM_CublasTN");
  CHECK(RatioReporter::baseline_of("BM_TilejitV7P/128x256/4/2/1/2/3") == "BM_CublasTN");
  // Batched rows: the batch count is part of the shape, and cublasGemmStridedBatchedEx the baseline.
  CHECK(RatioReporter::shape_of("BM_TilejitBatched/128x128/3/32/1024/1024/1024") == "32/1024/1024/1024");
  CHECK(RatioReporter::shape_of("BM_CublasBatched/32/1024/1024/1024") == "32/1024/1024/1024");
  CHECK_FALSE(RatioReporter::shape_of("BM_CublasBatched/1024/1024/1024").has_value());
  CHECK(RatioReporter::baseline_of("BM_TilejitBatched/128x128/3/32/1024/1024/1024") == "BM_CublasBatched");
  CHECK(RatioReporter::baseline_of("BM_TilejitBatchedPersistentBf16C/128x256/4/8/4096/4096/1024") == "BM_CublasBatchedBf16Out");
}
