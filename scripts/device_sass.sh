#!/usr/bin/env bash
# SASS of generated attention kernels (cuobjdump is on the device machine, not on the dev box): the cubins are
# compiled here (nvcc -arch=sm_90a -cubin, into .sass/) and disassembled there; the listing comes back.
set -u
OUT=${OUT:-/tmp/out}
for f in .sass/*.cubin; do /usr/local/cuda/bin/cuobjdump -sass "$f" > "$OUT/$(basename "$f" .cubin).sass" 2>&1; echo "$f: $(wc -l < "$OUT/$(basename "$f" .cubin).sass") lines"; done
