#!/bin/bash
# v0.28 call 2: tj::rescale (the accumulator's correction skipped by a thread whose rows' alpha are all 1) and
# FlashAttention-4's threshold on the running max (raised only past 2^8) in every forward kernel. GPU cases first
# (rescale, the library forward incl. the growing-score cases, persistent, varlen, decode), then the forward rows,
# old binary (HEAD before: 406473f) against new, alternated around torch, and the SASS of the D = 256 kernels.
source scripts/device_common.sh
gpu_tests 'rescale*,attention_library_forward_gpu*,attention_library_persistent_forward_gpu*,attention_more_gpu*,attention_decode_tma_library_gpu*,attention_fwd_gpu*'
ab_rounds 'BM_AttnForward/D' 'BM_AttnForward/D'
echo "== SASS of the cached D = 256 forward kernels (FMUL, branches, HGMMA)"
mkdir -p /tmp/cubins
python3 - <<'PY'
import glob, os
for i, f in enumerate(glob.glob('/tmp/tj-cache/**/*', recursive=True)):
    if not os.path.isfile(f): continue
    b = open(f, 'rb').read(); at = b.find(b'\x7fELF')
    if at >= 0 and b'_128_64_256' in b: open('/tmp/cubins/k%d.cubin' % i, 'wb').write(b[at:])
PY
for f in /tmp/cubins/*.cubin; do
  cuobjdump -sass "$f" > "$f.sass" 2>&1 || continue
  echo "$(grep -m1 -o 'Function : [A-Za-z0-9_]*' "$f.sass"): FMUL $(grep -c 'FMUL' "$f.sass") BRA $(grep -c ' BRA' "$f.sass") HGMMA $(grep -c HGMMA "$f.sass") FSETP $(grep -c FSETP "$f.sass")"
  cp "$f.sass" "$OUT/"
done
echo "== memcheck on the rescale and one library forward case"
sanitize memcheck 'rescale_gpu*' 120
