#!/usr/bin/env bash
# Provisions the production topology's binaries (the same versions docker-compose.yml runs), built
# from the Go module proxy with this machine's Go and cached under the project (git-ignored):
#   .cache/cluster/temporal-server-v<V>/temporal-server     tools/cluster/temporal-server: temporal.NewServer
#                                                           with our authorizer, go.temporal.io/server@v<V>
#                                                           pinned by its go.mod and go.sum (rebuilt when they change)
#   .cache/cluster/temporal-server-v<V>/temporal-sql-tool   go.temporal.io/server/cmd/tools/sql@v<V>
#   .cache/cluster/temporal-server-v<V>/schema/postgresql/v12/...   (copied from the module)
#   .cache/cluster/temporal-ui-v<U>/temporal-ui-server      github.com/temporalio/ui-server/v2/cmd/server@v<U>
# and makes PostgreSQL's server binaries available (Debian's `postgresql` package, installed with
# apt-get when missing). Versions are pinned in tools/cluster/versions.json (read also by
# docker-compose's test). Prints KEY=path lines on stdout; progress goes to stderr.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
versions="$root/tools/cluster/versions.json"
jget() { node -e "process.stdout.write(String(require(process.argv[1])[process.argv[2]]))" "$versions" "$1"; }
server_v="$(jget temporalServer)"
ui_v="$(jget temporalUi)"
cache="${MPF_CLUSTER_CACHE_DIR:-$root/.cache/cluster}"
server_dir="$cache/temporal-server-v$server_v"
ui_dir="$cache/temporal-ui-v$ui_v"
say() { printf 'provision-cluster: %s\n' "$*" >&2; }

need_go() { command -v go >/dev/null 2>&1 || { say "ERROR: Go is needed to build the Temporal server and UI server (https://go.dev/dl/)"; exit 1; }; }

# One build at a time (a second `mpf cluster up`, the tests and CI may all ask at once): the others
# wait for it and then find the binaries cached.
mkdir -p "$cache"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$cache/.lock"
  flock -w 1800 9 || { say "ERROR: another provisioning of $cache has held its lock for 30 minutes"; exit 1; }
fi

# A cached binary must run and be the pinned version (a stale or broken one is built again).
version_ok() { # $1 = binary, $2 = version it must report
  [ -x "$1" ] || return 1
  local v; v="$("$1" --version 2>/dev/null | head -n1)" || return 1
  case "$v" in *" $2") return 0 ;; *) say "$1 reports '$v', not $2: building it again"; rm -f "$1"; return 1 ;; esac
}

build() { # $1 = package@version, $2 = out dir, $3 = built name, $4 = final name
  local tmp; tmp="$(mktemp -d)"
  local start=$(date +%s)
  say "building $1 (a few minutes, once)"
  GOBIN="$tmp" GOFLAGS=-buildvcs=false CGO_ENABLED=0 go install -ldflags "-s -w" "$1" >&2
  mkdir -p "$2"
  mv "$tmp/$3" "$2/$4.partial" && mv "$2/$4.partial" "$2/$4"
  rm -rf "$tmp"
  say "built $4 in $(( $(date +%s) - start ))s"
}

# The server: temporal.NewServer with our authorizer (tools/cluster/temporal-server), built from the
# module proxy at the version go.mod and go.sum pin; the sources' digest marks the cached build.
src="$root/tools/cluster/temporal-server"
grep -q "go.temporal.io/server v$server_v\$" "$src/go.mod" || { say "ERROR: $src/go.mod does not require go.temporal.io/server v$server_v (tools/cluster/versions.json)"; exit 1; }
src_sum="$(cd "$src" && cat go.mod go.sum *.go | sha256sum | cut -c1-16)"
if ! version_ok "$server_dir/temporal-server" "$server_v" || [ "$(cat "$server_dir/temporal-server.src" 2>/dev/null)" != "$src_sum" ]; then
  need_go
  start=$(date +%s)
  say "building temporal-server (go.temporal.io/server v$server_v with tools/cluster/temporal-server's authorizer; a few minutes the first time)"
  mkdir -p "$server_dir"
  (cd "$src" && GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0 go build -ldflags "-s -w" -o "$server_dir/temporal-server.partial" .) >&2
  mv "$server_dir/temporal-server.partial" "$server_dir/temporal-server"
  printf '%s\n' "$src_sum" > "$server_dir/temporal-server.src"
  say "built temporal-server in $(( $(date +%s) - start ))s"
fi
if ! version_ok "$server_dir/temporal-sql-tool" "$server_v"; then need_go; build "go.temporal.io/server/cmd/tools/sql@v$server_v" "$server_dir" sql temporal-sql-tool; fi
if [ ! -d "$server_dir/schema/postgresql/v12" ]; then
  need_go
  dl="$(mktemp -d)"
  mod="$(cd "$dl" && GOFLAGS= go mod download -json "go.temporal.io/server@v$server_v" | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.parse(s).Dir))")"
  rm -rf "$dl"
  mkdir -p "$server_dir/schema/postgresql"
  rm -rf "$server_dir/schema/postgresql/v12.partial"
  cp -r "$mod/schema/postgresql/v12" "$server_dir/schema/postgresql/v12.partial"
  chmod -R u+w "$server_dir/schema/postgresql/v12.partial"
  mv "$server_dir/schema/postgresql/v12.partial" "$server_dir/schema/postgresql/v12"
fi
if ! version_ok "$ui_dir/temporal-ui-server" "$ui_v"; then need_go; build "github.com/temporalio/ui-server/v2/cmd/server@v$ui_v" "$ui_dir" server temporal-ui-server; fi

# PostgreSQL: the server binaries of Debian's package (initdb, pg_ctl, postgres).
find_pg() {
  if [ -n "${MPF_PG_BINDIR:-}" ] && [ -x "$MPF_PG_BINDIR/postgres" ]; then echo "$MPF_PG_BINDIR"; return 0; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/postgres" ] && [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}
if ! pg_bin="$(find_pg)"; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = "0" ] || SUDO="$(command -v sudo || true)"
    if [ "$(id -u)" = "0" ] || [ -n "$SUDO" ]; then
      say "installing Debian's postgresql package"
      $SUDO apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >&2
    fi
  fi
  pg_bin="$(find_pg)" || { say "ERROR: PostgreSQL's server is needed: apt-get install -y postgresql (or set MPF_PG_BINDIR)"; exit 1; }
fi

echo "TEMPORAL_SERVER=$server_dir/temporal-server"
echo "TEMPORAL_SQL_TOOL=$server_dir/temporal-sql-tool"
echo "TEMPORAL_SCHEMA_DIR=$server_dir/schema/postgresql/v12"
echo "TEMPORAL_UI_SERVER=$ui_dir/temporal-ui-server"
echo "PG_BINDIR=$pg_bin"
