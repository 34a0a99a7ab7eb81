#!/usr/bin/env bash
# tools/install-deps.sh — installs the Debian packages graphrun needs, only those missing.
# Usage: bash tools/install-deps.sh [--no-tests] [--parity] [--train] [--fuzz]
#   --no-tests  leaves out GoogleTest and Google Benchmark (a -DGRAPHRUN_BUILD_TESTS=OFF build)
#   --parity    adds Node.js, for the llama.cpp reference the tests compare against
#   --train     adds PyTorch, SentencePiece, OpenBLAS and the King James Bible, for tools/train/
#   --fuzz      adds clang and its runtime libraries (libFuzzer, sanitizers), for tools/fuzz.sh
set -euo pipefail

# dpkg-dev and file: cpack -G DEB (dpkg-shlibdeps) declares the package's library dependencies with them.
packages=(g++ cmake make pkg-config libtbb-dev nlohmann-json3-dev libcli11-dev libicu-dev libcpp-httplib-dev dpkg-dev file)
# chromium and curl: the headless-browser test of the server's page (tests/server/server_page_test.sh).
# libeigen3-dev: the op tests' independent reference (Eigen's product in double), not linked by graphrun.
# nginx: the balancer in front of two replicas (tests/deploy/, docs/deploy.md).
# openmpi-bin and libopenmpi-dev: the pipeline stages over MPI (GRAPHRUN_MPI, tests/deploy/mpi_test.sh).
[[ " $* " == *" --no-tests "* ]] || packages+=(libgtest-dev libgmock-dev libbenchmark-dev libeigen3-dev chromium curl nginx openmpi-bin libopenmpi-dev)
for flag in "$@"; do
  case "$flag" in
    --no-tests) ;;
    --parity) command -v node >/dev/null || packages+=(nodejs npm) ;;
    # Without libopenblas0-pthread, Debian's torch multiplies on the reference BLAS (~25x slower).
    --train) packages+=(python3-torch python3-sentencepiece python3-numpy libopenblas0-pthread bible-kjv) ;;
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    *) echo "install-deps: unknown option $flag (known: --no-tests --parity --train --fuzz)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
