#!/usr/bin/env bash
# Provisions the Temporal CLI (the dev server used by tests, the demo and benchmarks).
# Resolution order:
#   1. $TEMPORAL_CLI_PATH
#   2. `temporal` on PATH
#   3. the cached build under the project: .cache/temporal-cli/v<VERSION>/temporal (git-ignored)
#   4. `go install github.com/temporalio/cli/cmd/temporal@v<VERSION>` into that cache, with this machine's Go
#   5. the Temporal SDK's own download (needs internet access to the Temporal CDN; skipped when
#      MPF_TEMPORAL_NO_DOWNLOAD=1, as in tests and CI, which dial no non-loopback address)
#   6. otherwise: a clear error saying how to install it.
# The version is pinned in scripts/temporal-cli-version.txt. On success the binary's absolute path is
# the last line on stdout; everything else goes to stderr.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(tr -d ' \n' < "$root/scripts/temporal-cli-version.txt")"
cache_dir="${MPF_TEMPORAL_CACHE_DIR:-$root/.cache/temporal-cli}/v$version"
cached="$cache_dir/temporal"
say() { printf 'provision-temporal: %s\n' "$*" >&2; }

check() { # $1 = binary; prints its version line, fails if it does not run
  local v
  v="$("$1" --version 2>/dev/null | head -n1)" || return 1
  [ -n "$v" ] || return 1
  say "using $1 ($v)"
}

if [ -n "${TEMPORAL_CLI_PATH:-}" ]; then
  if [ -x "$TEMPORAL_CLI_PATH" ] && check "$TEMPORAL_CLI_PATH"; then echo "$TEMPORAL_CLI_PATH"; exit 0; fi
  say "TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH is not an executable Temporal CLI"; exit 1
fi

if on_path="$(command -v temporal 2>/dev/null)" && check "$on_path"; then echo "$on_path"; exit 0; fi

if [ -x "$cached" ] && check "$cached"; then echo "$cached"; exit 0; fi

if command -v go >/dev/null 2>&1; then
  say "building Temporal CLI v$version with $(go version | awk '{print $3}') into $cache_dir, once."
  say "This usually takes 3 to 8 minutes on 2 cores (177 s measured with nothing else running; 8 min 17 s on a busy machine)."
  say "Go prints each module as it downloads it, then each package as it compiles it (-v): the build is not hung while lines appear."
  mkdir -p "$cache_dir"
  start=$(date +%s)
  if GOBIN="$cache_dir" GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
     go install -v -ldflags "-s -w -X github.com/temporalio/cli/temporalcli.Version=$version" \
       "github.com/temporalio/cli/cmd/temporal@v$version" >&2; then
    say "built in $(( $(date +%s) - start ))s"
    got="$("$cached" --version | head -n1)"
    case "$got" in
      *"$version"*) check "$cached"; echo "$cached"; exit 0 ;;
      *) say "built binary reports '$got', expected $version"; rm -f "$cached"; exit 1 ;;
    esac
  fi
  say "go install failed (see above)"
fi

if [ "${MPF_TEMPORAL_NO_DOWNLOAD:-0}" = "1" ]; then
  say "MPF_TEMPORAL_NO_DOWNLOAD=1: not trying the SDK's download"
else
  say "trying the Temporal SDK's own download (needs internet access)"
  if dl="$(cd "$root" && timeout 300 node scripts/sdk-download-temporal.cjs "$cache_dir")" && [ -x "$dl" ] && check "$dl"; then
    echo "$dl"; exit 0
  fi
fi

cat >&2 <<MSG
provision-temporal: ERROR: no Temporal CLI could be provisioned, so no Temporal dev server can run.
Install one of these and re-run:
  - Go (https://go.dev/dl/), then: npm run provision:temporal
      (runs: go install github.com/temporalio/cli/cmd/temporal@v$version into $cache_dir)
  - or the Temporal CLI itself on PATH (https://docs.temporal.io/cli#install)
  - or point TEMPORAL_CLI_PATH at an existing temporal binary
  - or point TEMPORAL_ADDRESS at a running Temporal server (host:port)
MSG
exit 1
