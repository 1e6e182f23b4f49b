#!/bin/bash
# v0.37 call 1: the whole GPU test suite and compute-sanitizer on one config per variant, binaries of 80dc3bf
# (Release, from a clean-clone CI build). First alone (their timings mean something only on an idle machine): the
# 16-config autotuning case and the real-CUPTI cases. Then every other case whose name says gpu, in 6 processes
# at once (round-robin over the case list; NVRTC compiles on the device's cores, the kernel cache shared), beside
# memcheck and racecheck on the sanitizer cases, 6 at a time. The toy-plugin cases (a build-tree path compiled in)
# and hiprtc's AMDGPU case run in CI. Usage: scripts/device_v37a.sh [.carry]
source scripts/device_common.sh
T=$B/tilejit_tests
echo "== alone: tuned GEMM, then real CUPTI"
timeout -k 5 120 $T -tc='gemm_tuned_gpu_16*' -s > "$OUT/t_tuned.txt" 2>&1; echo "tuned rc $?"
grep -E "tuned in|reuse|test cases|assertions" "$OUT/t_tuned.txt" | head -6
timeout -k 5 120 $T -tc='profiler cupti gpu*' > "$OUT/t_cupti.txt" 2>&1; echo "cupti rc $?"
grep -E "test cases|assertions|ERROR" "$OUT/t_cupti.txt" | head -6
echo "== 6 shards and the sanitizers, at once"
$T -tc='*gpu*' -tce='*toy_gpu*,*AMDGPU*,gemm_tuned_gpu_16*,profiler cupti gpu*' -ltc 2>/dev/null |
  grep -v -E '^\[doctest\]|^====' | sed 's/,/?/g' > "$OUT/cases.txt"
echo "$(wc -l < "$OUT/cases.txt") cases"
for s in 0 1 2 3 4 5; do
  f=$(awk -v s=$s 'NR % 6 == s' "$OUT/cases.txt" | paste -sd, -)
  (timeout -k 5 440 $T -tc="$f" > "$OUT/t_shard$s.txt" 2>&1; echo "shard $s rc $?" > "$OUT/rc_shard$s") &
done
cat > "$OUT/san_jobs.txt" <<'J'
memcheck gemm_v5_gpu_small_for_the_sanitizers
racecheck gemm_v5_gpu_small_for_the_sanitizers
memcheck gemm_v6_gpu_small_for_the_sanitizers
racecheck gemm_v6_gpu_small_for_the_sanitizers
memcheck attention_persistent_gpu_small_for_the_sanitizers
racecheck attention_persistent_gpu_small_for_the_sanitizers
memcheck attention_bwd_tma_gpu*
racecheck attention_bwd_tma_gpu*
memcheck attention_library_forward_off_hopper_gpu*
racecheck attention_library_forward_off_hopper_gpu*
memcheck attention_backward_library_off_hopper_gpu*
racecheck attention_backward_library_off_hopper_gpu*
memcheck attention_more_gpu*
memcheck attention_decode_tma_library_gpu*
racecheck attention_tma_cp_async_gpu*
memcheck gemm_small_m_split_k_gpu*
J
san() { local n; n=$(echo "$1_$2" | tr -c 'a-z0-9_\n' '_'); timeout -k 5 420 compute-sanitizer --tool "$1" "$T" -tc="$2" > "$OUT/san_$n.txt" 2>&1
  echo "$1 $2: rc $? | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test cases' "$OUT/san_$n.txt" | tr -s ' ' | paste -sd'|' -)"; }
export -f san; export T OUT
xargs -P 6 -L 1 bash -c 'san "$0" "$1"' < "$OUT/san_jobs.txt" > "$OUT/san_summary.txt" 2>&1
wait
cat "$OUT"/rc_shard*; for s in 0 1 2 3 4 5; do grep -E "test cases|assertions" "$OUT/t_shard$s.txt" | tr -s ' ' | paste -sd' ' -; grep -m4 -B2 -A6 "ERROR" "$OUT/t_shard$s.txt" | head -30; done
cat "$OUT/san_summary.txt"
