#!/usr/bin/env bash
# Makes Debian's Chromium available for the browser tests (never a browser download of a tool's
# own). Prints the executable's path last on stdout.
set -euo pipefail
say() { printf 'provision-chromium: %s\n' "$*" >&2; }
for c in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$c" ] && [ -x "$c" ]; then echo "$c"; exit 0; fi
done
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" = "0" ] || SUDO="$(command -v sudo || true)"
  if [ "$(id -u)" = "0" ] || [ -n "$SUDO" ]; then
    say "installing Debian's chromium package"
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2
    [ -x /usr/bin/chromium ] && { echo /usr/bin/chromium; exit 0; }
  fi
fi
say "ERROR: Chromium is needed for the browser tests. Install Debian's package: apt-get install -y chromium (or set CHROMIUM_PATH)"
exit 1
