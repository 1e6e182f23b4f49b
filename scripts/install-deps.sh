#!/usr/bin/env bash
# Installs what tilejit needs from Debian's packages, skipping what is present.
# The CUDA 13 toolkit (headers; NVRTC at run time) is expected in /usr/local/cuda.
# libxgboost-dev: the predictor's ranking model (XGBoost's C API; dlopen'ed at run time, its header at build time).
# clang-19 + lld-19 compile HIP for targets Debian's ROCm 5.2 hiprtc does not
# know (gfx940/gfx941/gfx942); see src/runtime/hiprtc.cpp.
set -euo pipefail
pkgs=(cmake g++ make libboost-dev doctest-dev libbenchmark-dev nlohmann-json3-dev libfmt-dev libcli11-dev
      libxxhash-dev libre2-dev libxgboost-dev libamdhip64-dev rocm-device-libs clang-19 lld-19)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || true
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
