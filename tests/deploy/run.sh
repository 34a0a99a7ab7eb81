#!/usr/bin/env bash
# tests/deploy/run.sh GRAPHRUN SOURCE_DIR — ctest's DeployNginx (tests/deploy/nginx_test.mjs): two replicas
# behind nginx with deploy/nginx/graphrun.conf. Skips (exit 77, saying why) without nginx or node;
# tools/install-deps.sh installs both for the tests.
set -euo pipefail
command -v node >/dev/null || { echo "SKIP: node is not installed (apt-get install nodejs)"; exit 77; }
nginx="$(command -v nginx || echo /usr/sbin/nginx)"
[ -x "$nginx" ] || { echo "SKIP: nginx is not installed (apt-get install nginx)"; exit 77; }
PATH="$(dirname "$nginx"):$PATH" exec node "$2/tests/deploy/nginx_test.mjs" "$1" "$2"
