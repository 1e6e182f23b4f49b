#!/usr/bin/env bash
# SASS of cubins compiled on the dev box and carried in the binaries folder ($1, default .carry; names as
# arguments after it): per kernel, the counts and the order of HGMMA (h), WARPGROUP.ARRIVE (a), WARPGROUP.DEPBAR
# (D<n>: wait until at most n groups are in flight), MUFU.EX2 (e) and mbarrier try-waits (w), runs collapsed.
. "$(dirname "$0")/device_common.sh" "${1:-.carry}"
shift || true
for k in "$@"; do
  cuobjdump -sass "$B/$k.cubin" > "$OUT/$k.sass" 2>&1
  echo "$k: $(grep -c 'HGMMA' "$OUT/$k.sass") HGMMA, $(grep -c 'WARPGROUP.DEPBAR' "$OUT/$k.sass") DEPBAR, $(grep -c 'MUFU.EX2' "$OUT/$k.sass") EX2"
  grep -oE 'HGMMA|WARPGROUP.DEPBAR[^;]*|MUFU.EX2|WARPGROUP.ARRIVE|TRYWAIT' "$OUT/$k.sass" |
    sed -e 's/^HGMMA$/h/' -e 's/WARPGROUP.DEPBAR.LE gsb0, 0x\([0-9]\).*/D\1/' -e 's/^MUFU.EX2$/e/' -e 's/WARPGROUP.ARRIVE/a/' -e 's/TRYWAIT/w/' |
    uniq -c | awk '{printf "%s%s ", ($1>1?$1:""), $2} END {print ""}' | cut -c1-700
done
