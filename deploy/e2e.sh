#!/usr/bin/env bash
# End-to-end walk-through on a real cluster: install, hold-back, approve, egress.
# Not run by the tests. Needs kubectl pointing at a cluster whose CNI enforces NetworkPolicy, and:
#   PLUGIN_IMAGE     repo@sha256:<digest>  a signed plugin image (trusted signer)
#   PLUGIN_IMAGE_V2  repo@sha256:<digest>  the next version, whose manifest label adds EXTRA_HOST
#   PLUGIN_HOST      the egress host the first version requests (default api.nbp.pl)
#   EXTRA_HOST       the host the second version adds           (default example.com)
#   OPERATOR_IMAGE   the openfief image to run (default: the base's)
set -euo pipefail

NS=openfief
NAME=${PLUGIN_NAME:-e2e-demo}
HOST=${PLUGIN_HOST:-api.nbp.pl}
EXTRA=${EXTRA_HOST:-example.com}
: "${PLUGIN_IMAGE:?set PLUGIN_IMAGE=repo@sha256:...}"
: "${PLUGIN_IMAGE_V2:?set PLUGIN_IMAGE_V2=repo@sha256:... (its label adds EXTRA_HOST)}"
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }
wait_for() { # wait_for DESCRIPTION COMMAND...
  local what=$1; shift
  for _ in $(seq 1 90); do
    if "$@" >/dev/null 2>&1; then echo "ok: $what"; return 0; fi
    sleep 2
  done
  echo "FAILED: $what" >&2; exit 1
}
jsonpath() { kubectl -n "$NS" get plugin "$NAME" -o "jsonpath=$1"; }

step "1. install"
kubectl apply -k deploy/base
if [ -n "${OPERATOR_IMAGE:-}" ]; then
  kubectl -n "$NS" set image deploy/openfief-operator operator="$OPERATOR_IMAGE"
  kubectl -n "$NS" set image deploy/openfief-egress-proxy egress-proxy="$OPERATOR_IMAGE"
fi
kubectl -n "$NS" rollout status deploy/openfief-operator --timeout=180s
kubectl -n "$NS" rollout status deploy/openfief-egress-proxy --timeout=180s

plugin() { # plugin IMAGE HOSTS...
  local image=$1; shift
  local egress=""
  for h in "$@"; do egress="$egress{\"host\":\"$h\",\"port\":443},"; done
  cat <<YAML | kubectl apply -f -
apiVersion: openfief.io/v1alpha1
kind: Plugin
metadata: {name: $NAME, namespace: $NS}
spec:
  image: $image
  manifest: {capabilities: [connector], egress: [${egress%,}]}
YAML
}
grant() { # grant HOSTS...
  local egress=""
  for h in "$@"; do egress="$egress{\"host\":\"$h\",\"port\":443},"; done
  cat <<YAML | kubectl apply -f -
apiVersion: openfief.io/v1alpha1
kind: PluginGrant
metadata: {name: $NAME, namespace: $NS}
spec: {capabilities: [connector], egress: [${egress%,}]}
YAML
}

step "2. first install: requested and granted $HOST"
plugin "$PLUGIN_IMAGE" "$HOST"
grant "$HOST"
wait_for "v1 deployed" test "$(jsonpath '{.status.deployed.image}')" = "$PLUGIN_IMAGE"
kubectl -n "$NS" rollout status "deploy/plugin-$NAME" --timeout=180s
kubectl -n "$NS" get plugin "$NAME"

step "3. hold-back: v2 requests $EXTRA, which the grant lacks"
plugin "$PLUGIN_IMAGE_V2" "$HOST" "$EXTRA"
wait_for "approval required" test "$(jsonpath '{.status.conditions[?(@.type=="ApprovalRequired")].status}')" = "True"
echo "pending: $(jsonpath '{.status.pendingApproval.egress}')"
test "$(jsonpath '{.status.deployed.image}')" = "$PLUGIN_IMAGE" && echo "ok: v1 keeps running"
kubectl -n "$NS" get configmap openfief-egress-allowlist -o "jsonpath={.data.$NAME}"

step "4. approve: add $EXTRA to the grant"
grant "$HOST" "$EXTRA"
wait_for "v2 deployed" test "$(jsonpath '{.status.deployed.image}')" = "$PLUGIN_IMAGE_V2"
wait_for "nothing pending" test "$(jsonpath '{.status.conditions[?(@.type=="ApprovalRequired")].status}')" = "False"
kubectl -n "$NS" rollout status "deploy/plugin-$NAME" --timeout=180s

step "5. egress from the plugin's pod"
POD=$(kubectl -n "$NS" get pod -l "openfief.io/plugin=$NAME" -o jsonpath='{.items[0].metadata.name}')
connect() { # connect HOST -> HTTP status line of the CONNECT
  kubectl -n "$NS" exec "$POD" -- node -e '
    const http = require("node:http"); const fs = require("node:fs");
    const proxy = new URL(process.env.HTTPS_PROXY);
    const token = fs.readFileSync(process.env.OPENFIEF_EGRESS_TOKEN_FILE, "utf8").trim();
    const auth = "Basic " + Buffer.from("plugin:" + token).toString("base64");
    http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: process.argv[1] + ":443",
      headers: { "proxy-authorization": auth } })
      .on("connect", (res, socket) => { console.log(res.statusCode); socket.destroy(); })
      .on("response", (res) => console.log(res.statusCode))
      .on("error", (e) => console.log("error " + e.code)).end();' "$1"
}
echo "granted $HOST -> $(connect "$HOST") (want 200)"
echo "ungranted github.com -> $(connect github.com) (want 407)"
echo "direct to 1.1.1.1:443 (want a timeout: NetworkPolicy):"
kubectl -n "$NS" exec "$POD" -- node -e '
  const s = require("node:net").connect(443, "1.1.1.1"); s.setTimeout(3000);
  s.on("connect", () => { console.log("CONNECTED (bad)"); process.exit(1); });
  s.on("timeout", () => { console.log("blocked"); process.exit(0); });
  s.on("error", (e) => { console.log("blocked: " + e.code); process.exit(0); });' || true

step "done; remove with: kubectl -n $NS delete plugin $NAME plugingrant $NAME"
