#!/usr/bin/env bash
# tools/openai-setup.sh — installs the official `openai` npm client and zod (for its zodResponseFormat
# helper), the versions tests/server/openai/package.json pins, that the end-to-end server test
# (tests/server/openai/e2e.mjs) drives `graphrun serve` with, into a cache folder outside the source tree.
#
#   tools/openai-setup.sh [DIR]      DIR defaults to $GRAPHRUN_OPENAI_DIR, else <source>/build/openai
#
# Prints the absolute install folder as the last line of stdout (progress goes to stderr); the test
# finds it through GRAPHRUN_OPENAI_DIR. Idempotent; installs again when any pinned version differs.
# Needs Node.js >= 20, npm and the npm registry.
set -euo pipefail

src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
client_src="$src_dir/tests/server/openai"
dir="${1:-${GRAPHRUN_OPENAI_DIR:-$src_dir/build/openai}}"
tag=openai-setup
source "$src_dir/tools/npm-folder.sh"
open_npm_folder "$dir"

install_pinned "$client_src"
echo "$dir"
