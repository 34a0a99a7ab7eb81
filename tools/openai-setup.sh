#!/usr/bin/env bash
# tools/openai-setup.sh — installs the official `openai` npm client (the version tests/server/openai/package.json
# pins) that the end-to-end server test (tests/server/openai/e2e.mjs) drives `graphrun serve` with, into a
# cache folder outside the source tree.
#
#   tools/openai-setup.sh [DIR]      DIR defaults to $GRAPHRUN_OPENAI_DIR, else <source>/build/openai
#
# Prints the absolute install folder as the last line of stdout (progress goes to stderr); the test
# finds it through GRAPHRUN_OPENAI_DIR. Idempotent. Needs Node.js >= 20, npm and the npm registry.
set -euo pipefail

src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
client_src="$src_dir/tests/server/openai"
dir="${1:-${GRAPHRUN_OPENAI_DIR:-$src_dir/build/openai}}"
tag=openai-setup
source "$src_dir/tools/npm-folder.sh"
open_npm_folder "$dir"

pinned="$(node -p 'require(process.argv[1]).dependencies.openai' "$client_src/package.json")"
installed="$(node -p 'require(process.argv[1]).version' "$dir/node_modules/openai/package.json" 2>/dev/null || true)"
if [ "$installed" = "$pinned" ]; then
    say "openai $pinned already installed in $dir"
    echo "$dir"
    exit 0
fi
say "installing openai $pinned into $dir"
cp "$client_src/package.json" "$client_src/package-lock.json" "$dir/"
(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error >&2) || die "npm install failed in $dir"
installed="$(node -p 'require(process.argv[1]).version' "$dir/node_modules/openai/package.json" 2>/dev/null || true)"
[ "$installed" = "$pinned" ] || die "openai is at version '${installed:-missing}' in $dir, expected $pinned"
say "done"
echo "$dir"
