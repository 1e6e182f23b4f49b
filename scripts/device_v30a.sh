#!/bin/bash
# v0.30 call 1: wider or taller forward tiles again, now that the wgmma descriptors no longer hold vector registers
# (v0.29): the library's rows beside 128x144 (D = 128), 192-row items (D = 64 / 96), 128x192 (D = 64), 128x80 (D = 256),
# two rounds in one call. Usage: scripts/device_v30a.sh [.carry]
source scripts/device_common.sh
F='BM_AttnForward/D(64|96|128|256)/|BM_FlashFwdPersistent(EvenN)?/D(64|96|128)/(full|causal)/(128x128/2|128x144/2|192x128/2|192x96/2)|BM_FlashFwdPingPongEdge/D128/(full|causal)/128x(96|112|144)/2|BM_FlashFwdPingPongEdge/D64/(full|causal)/128x192/2|BM_FlashFwdPersistentPadded|BM_FlashFwdTmaEdge/D256/'
bench_rows r1 "$B/attention_bench" "$F"
bench_rows r2 "$B/attention_bench" "$F"
