#!/usr/bin/env bash
# tools/ai-sdk-setup.sh — installs the Vercel AI SDK (`ai`, `@ai-sdk/openai-compatible`), zod and ajv,
# the versions tests/server/ai_sdk/package.json pins, that the end-to-end server test
# (tests/server/ai_sdk/e2e.mjs) drives `graphrun serve` with, into a cache folder outside the source tree.
#
#   tools/ai-sdk-setup.sh [DIR]      DIR defaults to $GRAPHRUN_AI_SDK_DIR, else <source>/build/ai_sdk
#
# Prints the absolute install folder as the last line of stdout (progress goes to stderr); the test
# finds it through GRAPHRUN_AI_SDK_DIR. Idempotent; installs again when any pinned version differs.
# Needs Node.js >= 20, npm and the npm registry.
set -euo pipefail

src_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
client_src="$src_dir/tests/server/ai_sdk"
dir="${1:-${GRAPHRUN_AI_SDK_DIR:-$src_dir/build/ai_sdk}}"
tag=ai-sdk-setup
source "$src_dir/tools/npm-folder.sh"
open_npm_folder "$dir"

install_pinned "$client_src"
echo "$dir"
