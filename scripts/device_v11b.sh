#!/usr/bin/env bash
# v0.11, second call: the D64 persistent forward with its key loop unrolled by two. GPU tests of the persistent
# forward (unrolled and ping-pong cases included); the SASS of both D64 kernels (compiled on the dev box, carried as
# cubins): where ptxas waits for the in-flight P·V relative to the first exp2; then the rows, alternated; then the
# narrow-N store candidates with deeper rings beside cuBLAS.
. "$(dirname "$0")/device_common.sh" "$@"
gpu_tests 'attention_persistent_gpu*'
echo "== SASS: per kernel, the order of HGMMA (h), WARPGROUP.DEPBAR (D), first MUFU.EX2 of a run (e)"
for k in d64x1 d64x2; do
  cuobjdump -sass "$B/$k.cubin" > "$OUT/$k.sass" 2>&1
  echo "$k: $(grep -c 'HGMMA' "$OUT/$k.sass") HGMMA, $(grep -c 'WARPGROUP.DEPBAR' "$OUT/$k.sass") DEPBAR, $(grep -c 'MUFU.EX2' "$OUT/$k.sass") EX2"
  grep -oE 'HGMMA|WARPGROUP.DEPBAR[^;]*|MUFU.EX2|WARPGROUP.ARRIVE' "$OUT/$k.sass" | sed -e 's/^HGMMA$/h/' -e 's/WARPGROUP.DEPBAR.LE gsb0, 0x\([0-9]\).*/D\1/' -e 's/^MUFU.EX2$/e/' -e 's/WARPGROUP.ARRIVE/a/' | uniq -c | awk '{printf "%s%s ", ($1>1?$1:""), $2} END {print ""}' | cut -c1-600
done
R='BM_FlashFwdPersistentEvenN(X2)?/D64/full'
bench_rows x2a "$B/attention_bench" "$R"
bench_rows x2b "$B/attention_bench" "$R"
bench_rows x2c "$B/attention_bench" "$R"
bench_rows narrow "$B/gemm_bench" 'BM_CublasTNBf16Out/narrow|BM_TilejitV6StoreNarrow|BM_TilejitBf16OutNarrow|BM_TilejitGemmBf16Out/narrow'
