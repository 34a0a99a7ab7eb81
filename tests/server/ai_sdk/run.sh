#!/usr/bin/env bash
# tests/server/ai_sdk/run.sh GRAPHRUN SOURCE_DIR — ctest's ServerAiSdk: the Vercel AI SDK
# against a real `graphrun serve` (tests/server/ai_sdk/e2e.mjs). Skips (exit 77, with the reason) when node or
# the client is missing: tools/ai-sdk-setup.sh installs it (tools/test.sh does, when npm is reachable).
set -euo pipefail
graphrun="$1"
src="$2"
dir="${GRAPHRUN_AI_SDK_DIR:-$(dirname "$graphrun")/ai_sdk}"
if ! command -v node >/dev/null; then
    echo "SKIP: node is not installed (apt-get install nodejs npm), so the AI SDK cannot run"
    exit 77
fi
if [ ! -f "$dir/node_modules/ai/package.json" ] || [ ! -f "$dir/node_modules/ajv/package.json" ]; then
    echo "SKIP: the AI SDK (ai, @ai-sdk/openai-compatible, zod, ajv) is not installed in $dir: run tools/ai-sdk-setup.sh $dir (needs the npm registry)," \
        "or set GRAPHRUN_AI_SDK_DIR"
    exit 77
fi
exec node "$src/tests/server/ai_sdk/e2e.mjs" "$graphrun" "$src/models/kjv-q8_0.gguf" "$dir"
