#!/bin/bash
# v0.30 call 4: why the library's D = 64 full forward ran 6% below its own kernel's bench row (call 3): the kernel with
# rank-3 K and V (as the library passes them) and the library called 10 times back to back, two rounds.
# Usage: scripts/device_v30d.sh [.carry]
source scripts/device_common.sh
F='BM_AttnForward/D(64|128)/|BM_AttnForwardBackToBack|BM_FlashFwdPersistentEvenN/D64/full/(128x128|192x128)/2'
bench_rows r1 "$B/attention_bench" "$F"
bench_rows r2 "$B/attention_bench" "$F"
