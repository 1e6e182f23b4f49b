#!/bin/bash
# (TJX_NOPAIR / TJX_OLDPITCH / TJX_NOPACK were temporary switches in src/codegen/codegen.cpp for this measurement,
# removed before the commit: today both halves of each A/B run the final code.)
# v0.24 call 6: the Hopper backward (its dK/dV kernel converts two 16-bit tiles per iteration for wgmma) with the
# conversions of v0.24 (32-bit words, 16-byte row padding) against the element-by-element ones with one bank of
# padding (TJX_NOPAIR=1 TJX_OLDPITCH=1: the code generator as at call 1), two rounds; the off-Hopper rows with the
# old pitch alone, to split pitch and pairing.
source scripts/device_common.sh
R='BM_AttnBackward/'
for round in 1 2; do
  TJX_NOPAIR=1 TJX_OLDPITCH=1 ROW_LIMIT=100 bench_rows "old$round" "$B/attention_bench" "$R"
  ROW_LIMIT=100 bench_rows "new$round" "$B/attention_bench" "$R"
done
TJX_OLDPITCH=1 ROW_LIMIT=100 bench_rows sm80_pairs_oldpitch "$B/attention_bench" 'BM_FlashBwdSm80/.*/resident/kv64x64/q64x64'
