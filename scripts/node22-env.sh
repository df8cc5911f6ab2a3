#!/usr/bin/env bash
# Print shell exports that select a Node.js >= 22.19, installing Node 22 from the npm registry
# into a private prefix when the running Node is older. Usage: eval "$(bash scripts/node22-env.sh)"
#
# Silent on success (stdout carries only the exports). On failure it prints one short message
# on stderr, names the log with npm's full output, prints no exports and exits 1.
#
# Node comes from the platform package (node-<os>-<arch>), which holds the binary itself: no
# install script has to run, so npm's script policy cannot get in the way.
set -euo pipefail
prefix="${NODE22_PREFIX:-$HOME/.local/node22}"

at_least_22_19() {
  local version="$1" major rest minor
  major="${version%%.*}"; rest="${version#*.}"; minor="${rest%%.*}"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  [ "$major" -gt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 19 ]; }
}

fail() {
  echo "node22-env: $1" >&2
  exit 1
}

current="$(node -p 'process.versions.node' 2>/dev/null || echo 0.0.0)"
if at_least_22_19 "$current"; then
  exit 0
fi

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) fail "no Node 22 package for $(uname -s); install Node >= 22.19 yourself" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) fail "no Node 22 package for $(uname -m); install Node >= 22.19 yourself" ;;
esac
package="node-$os-$arch"

if [ ! -x "$prefix/bin/node" ]; then
  command -v npm >/dev/null 2>&1 || fail "npm is needed to install Node 22 (and was not found); install Node >= 22.19 yourself"
  mkdir -p "$prefix" || fail "cannot create $prefix; set NODE22_PREFIX to a writable directory"
  log="$prefix/install.log"
  if ! npm install -g --prefix "$prefix" --ignore-scripts --no-audit --no-fund "$package@22" >"$log" 2>&1; then
    fail "installing Node 22 ($package@22) into $prefix failed; npm's output is in $log"
  fi
fi

installed="$("$prefix/bin/node" -p 'process.versions.node' 2>/dev/null || echo 0.0.0)"
at_least_22_19 "$installed" ||
  fail "$prefix/bin/node is Node $installed, not >= 22.19; remove $prefix and run this again"

echo "export PATH=\"$prefix/bin:\$PATH\""
# npm's global prefix would otherwise be the Node package's own folder (npm derives it from the
# node binary's real path), whose bin/ is not on PATH: `npm install -g` would install commands
# (pi, pi-workflow-turns) where the shell cannot find them. Global installs go to $prefix/bin.
echo "export npm_config_prefix=\"$prefix\""
# Headers for building native addons (better-sqlite3) against this Node, not the system one.
for headers in "$prefix/lib/node_modules/$package" "$prefix/lib/node_modules/node/node_modules/$package"; do
  if [ -d "$headers/include/node" ]; then
    echo "export npm_config_nodedir=\"$headers\""
    break
  fi
done
