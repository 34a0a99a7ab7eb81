#!/usr/bin/env bash
# tests/server_page_test.sh GRAPHRUN SOURCE_DIR — ctest's ServerPage: headless Chromium opens the page of
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

# --virtual-time-budget lets the page's scripts (and the stream they read) run before the DOM is dumped;
# on a loaded machine the stream can outlast it, so the page is opened up to three times.
for attempt in 1 2 3; do
    HOME="$work" timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$work/profile" --virtual-time-budget=$((20000 * attempt)) --dump-dom \
        "http://127.0.0.1:$port/?say=Who%20made%20the%20light%3F&temperature=0&max_tokens=24" >"$work/dom.html" 2>"$work/chromium.log" ||
        { echo "chromium failed:"; tail -20 "$work/chromium.log"; exit 1; }
    grep -q 'id="reply-1" data-done="1"' "$work/dom.html" && break
    echo "attempt $attempt: the reply had not finished when the page was dumped"
done

EXPECTED="$expected" python3 - "$work/dom.html" <<'PY'
import html, os, re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<div class="assistant" id="reply-1" data-done="1">(.*?)</div>', dom, re.S)
if not m:
    sys.exit("no finished reply in the page; its log is:\n" + dom[dom.find('<div id="log">'):][:2000])
shown, expected = html.unescape(m.group(1)), os.environ["EXPECTED"]
if shown != expected:
    sys.exit(f"the page shows {shown!r}, the server answered {expected!r}")
print(f"ok: the page streamed {shown!r}")
PY
