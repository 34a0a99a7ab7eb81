#!/usr/bin/env bash
# tests/server/server_page_test.sh GRAPHRUN SOURCE_DIR — ctest's ServerPage: headless Chromium opens the page of
# a real `graphrun serve`, which sends a chat message (/?say=...), and the streamed answer must appear
# in the page, whole ([DONE] seen) and equal to the same request answered without streaming.
# Skips (exit 77, saying why) when Debian's chromium is not installed.
set -euo pipefail
graphrun="$1"
src="$2"
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
    echo "SKIP: chromium is not installed (apt-get install chromium), so the page cannot be opened"
    exit 77
fi
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
"$graphrun" serve -m "$src/models/kjv-q8_0.gguf" --port 0 -c 256 2>"$work/server.log" &
server=$!
for _ in $(seq 200); do
    port="$(grep -o 'http://127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f3 || true)"
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || { echo "graphrun serve printed no port:"; cat "$work/server.log"; exit 1; }

say="Who made the light?"
expected="$(curl -sf "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
    -d "{\"messages\": [{\"role\": \"user\", \"content\": \"$say\"}], \"temperature\": 0, \"max_tokens\": 24}" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])')"
[ -n "$expected" ] || { echo "the chat answer is empty"; exit 1; }

# Chromium is driven over the DevTools protocol (tests/server/server_page_cdp.mjs) and polled in real time until
# the page marks the reply finished ([DONE] seen), however long a slow build takes to stream it.
command -v node >/dev/null || { echo "SKIP: node is not installed, so Chromium cannot be driven"; exit 77; }
shown="$(HOME="$work" timeout 180 node "$src/tests/server/server_page_cdp.mjs" "$browser" \
    "http://127.0.0.1:$port/?say=Who%20made%20the%20light%3F&temperature=0&max_tokens=24" "$work/profile")" ||
    { echo "the page did not show a finished reply"; exit 1; }

SHOWN="$shown" EXPECTED="$expected" python3 - <<'PY2'
import json, os, sys
shown, expected = json.loads(os.environ["SHOWN"]), os.environ["EXPECTED"]
if shown != expected:
    sys.exit(f"the page shows {shown!r}, the server answered {expected!r}")
print(f"ok: the page streamed {shown!r}")
PY2
