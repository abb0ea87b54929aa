#!/usr/bin/env bash
# Installs what memest needs from Debian's packages (idempotent), then builds it.
# Usage: bash tools/setup.sh [BUILD_DIR]       (run as root, or with sudo available)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}

packages=(
  build-essential cmake ninja-build pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler    # ONNX's protobuf classes
  libcli11-dev doctest-dev nlohmann-json3-dev libeigen3-dev
  libtorch-dev                                     # the TorchScript helper only
  python3 python3-torch python3-torchvision python3-onnx python3-numpy  # tests that generate models
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)"
