#!/usr/bin/env bash
# Installs what dsa-harness needs from Debian 12 / Ubuntu 24.04 packages. Idempotent: packages
# already present are left alone, so a second run costs a dpkg query.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libhdf5-dev libeigen3-dev catch2 libcli11-dev
      nlohmann-json3-dev libbenchmark-dev libssl-dev)
if [[ "${DSA_WITH_BROWSER:-0}" == 1 ]]; then pkgs+=(chromium); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
