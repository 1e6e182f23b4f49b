#!/bin/bash
# v0.37 call 3: issue 5's tables from one call, binaries of 80dc3bf: the library forward beside torch SDPA's cuDNN
# and flash backends at the 700 W power cap (3 s a row), D = 96 exact against padded; the library backward and
# decode (with the copy bandwidth) beside torch's backward table; then the CUPTI cases' real profiles through
# tilejit prof view. Usage: scripts/device_v37c.sh [.carry]
source scripts/device_common.sh
cap_table
ROW_LIMIT=150 bench_rows bwd_decode "$B/attention_bench" '^BM_AttnBackward/|^BM_Decode/'
echo "== torch SDPA, same call (forward then backward)"
timeout -k 5 150 python3 bench/attention_baselines.py > "$OUT/torch.txt" 2>&1; cat "$OUT/torch.txt"
echo "== the CUPTI cases' profiles through tilejit prof view"
timeout -k 5 120 "$B/tilejit_tests" -tc='profiler cupti gpu*' > "$OUT/t_cupti.txt" 2>&1; echo "rc $?"
mkdir -p /tmp/profiles
python3 - /tmp/profiles "$OUT/t_cupti.txt" <<'P'
import json, re, sys
n = 0
for line in open(sys.argv[2], errors="replace"):
    m = re.search(r"MESSAGE: profile: (.*)$", line)
    if not m: continue
    j = json.loads(m.group(1))
    n += 1
    json.dump(j if isinstance(j, list) else [j], open(f"{sys.argv[1]}/profile{n}.json", "w"))
print(n, "profiles")
P
for f in /tmp/profiles/profile*.json; do
  echo "-- $(basename "$f")"; "$B/tilejit" prof view -m time/ms,avg_time/us,count "$f" 2>&1 | cut -c1-220 | head -40
done
"$B/tilejit" prof view -m time/ms,count,pc_samples "/tmp/profiles/profile3.json" -t 0.001 2>&1 | cut -c1-220 | head -40
