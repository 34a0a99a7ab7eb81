#!/usr/bin/env bash
# tests/server/openai/run.sh GRAPHRUN SOURCE_DIR — ctest's ServerOpenAiClient: the official openai npm client
# against a real `graphrun serve` (tests/server/openai/e2e.mjs). Skips (exit 77, with the reason) when node or
# the client is missing: tools/openai-setup.sh installs it (tools/test.sh does, when npm is reachable).
set -euo pipefail
graphrun="$1"
src="$2"
dir="${GRAPHRUN_OPENAI_DIR:-$(dirname "$graphrun")/openai}"
if ! command -v node >/dev/null; then
    echo "SKIP: node is not installed (apt-get install nodejs npm), so the openai client cannot run"
    exit 77
fi
if [ ! -f "$dir/node_modules/openai/package.json" ] || [ ! -f "$dir/node_modules/zod/package.json" ]; then
    echo "SKIP: the openai npm client (and zod) is not installed in $dir: run tools/openai-setup.sh $dir (needs the npm registry)," \
        "or set GRAPHRUN_OPENAI_DIR"
    exit 77
fi
exec node "$src/tests/server/openai/e2e.mjs" "$graphrun" "$src/models/kjv-q8_0.gguf" "$dir"
