#!/usr/bin/env bash
# v0.9, fifth call: SASS only. Forward kernels (D64 / D128 EvenN per item, D64 EvenN persistent) compiled here by
# NVRTC in four variants — old (def7889: P carried in f32), new (P packed, overlapped work pinned), nopin, prmt (the
# register-A words copied through PRMT) — to see where ptxas waits for P·V relative to the softmax's exp2.
# Carry .carry/*.cubin.
. "$(dirname "$0")/device_common.sh" "$@"
for c in "$B"/*.cubin; do
  n=$(basename "$c" .cubin); cuobjdump -sass "$c" > "$OUT/$n.sass" 2>&1
  echo "$n: $(grep -nE 'DEPBAR|MUFU.EX2|HGMMA.*gsb0' "$OUT/$n.sass" | awk '{print $3}' | awk 'BEGIN{m=0} /MUFU/{m++; if (m==1) printf "MUFU1 "; next} {printf "%s ", $0}' | cut -c1-200)"
done
