#!/usr/bin/env bash
# Set-up for the web pages, the TypeScript SDK and the manifests' validator: Node.js >= 20 with
# npm, flatc and chromium (scripts/install-deps.sh web), then `npm ci` (the committed lock files)
# in sdk/ts, inspector/, games/arena/web/ and deploy/validate/. The next CMake configure then
# bundles the pages (ECSNET_WEB) into <build>/share/ecsnet/web. Idempotent.
# Usage: scripts/web-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "web-deps.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
esac
scripts/install-deps.sh web
for package in sdk/ts inspector games/arena/web deploy/validate; do
  echo "web-deps: npm ci in $package"
  (cd "$package" && npm ci --no-audit --no-fund)
done
