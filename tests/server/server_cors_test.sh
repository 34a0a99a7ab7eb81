#!/usr/bin/env bash
# tests/server/server_cors_test.sh GRAPHRUN SOURCE_DIR — ctest's ServerPageCors: headless Chromium opens a page
# served from a second origin (python3 -m http.server on another port, tests/server/cors_page/index.html), which
# POSTs JSON to a real `graphrun serve`: the answer is read with --cors-origins naming that origin, and the
# browser blocks it (TypeError) without the flag. Skips (exit 77, saying why) without chromium or node.
set -euo pipefail
graphrun="$1"
src="$2"
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "SKIP: chromium is not installed (apt-get install chromium), so the page cannot be opened"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is not installed, so Chromium cannot be driven"; exit 77; }
work="$(mktemp -d)"
server=""
trap 'kill $pages $server 2>/dev/null || true; rm -rf "$work"' EXIT

# The second origin: the page, on a port of its own.
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$src/tests/server/cors_page" >"$work/pages.log" 2>&1 &
pages=$!
wait_port() {  # LOG PATTERN -> the port the log names
    local port=""
    for _ in $(seq 200); do
        port="$(grep -o "$2" "$1" | head -1 | grep -o '[0-9]*$' || true)"
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ] || { echo "no port in $1:" >&2; cat "$1" >&2; exit 1; }
    echo "$port"
}
pages_port="$(wait_port "$work/pages.log" 'port [0-9]*')"
origin="http://127.0.0.1:$pages_port"

# Opens the page against a graphrun serve started with "$@" and prints what the page shows (JSON).
page_against() {
    "$graphrun" serve -m "$src/models/kjv-q8_0.gguf" --port 0 -c 256 "$@" 2>"$work/server.log" &
    server=$!
    local port
    port="$(wait_port "$work/server.log" 'http://127.0.0.1:[0-9]*')"
    HOME="$work" timeout 180 node "$src/tests/server/server_page_cdp.mjs" "$browser" "$origin/index.html?port=$port" \
        "$work/profile-$port" || { echo "the page did not finish" >&2; exit 1; }
    kill "$server"
    wait "$server" || true
    server=""
}

allowed="$(page_against --cors-origins "$origin")"
blocked="$(page_against)"
ALLOWED="$allowed" BLOCKED="$blocked" ORIGIN="$origin" python3 - <<'PY'
import json, os, sys
allowed, blocked, origin = json.loads(os.environ["ALLOWED"]), json.loads(os.environ["BLOCKED"]), os.environ["ORIGIN"]
if allowed not in ("ok length", "ok stop"):
    sys.exit(f"with --cors-origins {origin} the page shows {allowed!r}, not an answer")
if not blocked.startswith("TypeError"):
    sys.exit(f"without --cors-origins the page from {origin} shows {blocked!r}, not the browser's TypeError")
print(f"ok: from {origin}, with --cors-origins: {allowed!r}; without: {blocked!r}")
PY
