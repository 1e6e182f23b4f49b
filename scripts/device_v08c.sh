#!/usr/bin/env bash
# v0.8 call 3: TMA store slab by slab (two slab buffers: 128x256 bf16 in 32 KiB, so 4 stages fit; f32 C by TMA).
# GPU tests of the TMA-store kernels and the store race (rung 7 store fixed: C's box no longer a multicast slice),
# racecheck/synccheck on the slab-by-slab kernel, then the bf16-C library beside cuBLAS writing bf16 on the large
# shapes, and the f32 TMA-store kernels beside cuBLAS TN / the masked f32 store. Carry tilejit_tests and gemm_bench.
. "$(dirname "$0")/device_common.sh" "$@"
echo "== GPU tests"
timeout -k 5 200 "$B/tilejit_tests" -tc='gemm_store_race_gpu*,gemm_v6_store_gpu*' > "$OUT/tests.txt" 2>&1; echo "rc $?"
grep -E "ERROR|test cases|assertions|CRASH" "$OUT/tests.txt" | head -20
for tool in racecheck synccheck memcheck; do
  echo "== $tool gemm_v6_store_gpu"
  timeout -k 5 100 /usr/local/cuda/bin/compute-sanitizer --tool $tool "$B/tilejit_tests" -tc='gemm_v6_store_gpu*' 2>&1 | grep -E "SUMMARY|test cases" | head -3
done
echo "== bf16 C: library vs cuBLAS"
timeout -k 5 150 "$B/gemm_bench" --benchmark_filter='BM_(CublasTNBf16Out|TilejitGemmBf16Out)/large' --benchmark_min_time=0.1 > "$OUT/bench1.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench1.txt" | sed 's/ \+/ /g' | cut -c1-200
echo "== f32 C by TMA"
SH='(4096/4096/4096|8192/8192/8192|4096/6144/4096|4096/28672/4096|4096/4096/14336|16384/6144/4096)'
timeout -k 5 120 "$B/gemm_bench" --benchmark_filter="BM_(CublasTN|TilejitV6StoreF32/.*|TilejitV6Ws/128x256/4|TilejitV6Store/128x256/(3|4))/$SH" --benchmark_min_time=0.1 > "$OUT/bench2.txt" 2>&1; echo "rc $?"
grep -E "BM_|rror" "$OUT/bench2.txt" | sed 's/ \+/ /g' | cut -c1-160
