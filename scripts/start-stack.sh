#!/bin/sh
# `pnpm start`: compile, migrate, then the gateway, worker and redirect side by side until Ctrl-C
# or SIGTERM, which each service answers with its graceful stop. Exits 0 when all three stopped
# cleanly (concurrently's `exited with code 0` line for each), non-zero when one failed.
set -eu

# One METRICS_PORT for three processes would have two of them fail to bind. 0 is fine (a free
# port each); so is a METRICS_PORT that every service's own variable overrides.
if [ -n "${METRICS_PORT:-}" ] && [ "$METRICS_PORT" != 0 ] &&
  { [ -z "${GATEWAY_METRICS_PORT:-}" ] || [ -z "${WORKER_METRICS_PORT:-}" ] ||
    [ -z "${REDIRECT_METRICS_PORT:-}" ]; }; then
  echo "pnpm start: METRICS_PORT=$METRICS_PORT would be one port for three services; set" \
    "GATEWAY_METRICS_PORT, WORKER_METRICS_PORT and REDIRECT_METRICS_PORT instead" \
    "(or METRICS_PORT=0: a free port each)" >&2
  exit 78 # EX_CONFIG, as the services exit on a bad variable
fi

# The workspace's Node 24 binary: node_modules/.bin/node, first on pnpm's PATH, is a shell shim,
# and a shell between concurrently and a service would die of the stop signal itself.
NODE="$(node -p process.execPath)"
PATH="$(dirname "$NODE"):$PATH"
export PATH

echo "pnpm start: compiling (tsc -b: a few minutes on a fresh clone, seconds once built)"
tsc -b
# The gateway seals webhook signing secrets and the worker opens them: one key for both. Without
# one, a key for this run (endpoints saved under it need the same key after a restart: set
# WEBHOOK_ENCRYPTION_KEY to keep them; openssl rand -base64 32).
if [ -z "${WEBHOOK_ENCRYPTION_KEY:-}" ]; then
  WEBHOOK_ENCRYPTION_KEY="$(node -e 'process.stdout.write(require("node:crypto").randomBytes(32).toString("base64"))')"
  export WEBHOOK_ENCRYPTION_KEY
  echo "pnpm start: WEBHOOK_ENCRYPTION_KEY unset; made one for this run"
fi
echo "pnpm start: migrating the database"
node libs/db/dist/migrate.main.js
# The node options the image runs every service with (deploy/node-flags, docs/operations.md).
NODE_FLAGS="$(cat deploy/node-flags)"
echo "pnpm start: starting the gateway, worker and redirect (Ctrl-C stops them)"
# `exec node`: the service is concurrently's child itself, so the stop signal reaches it alone
# and its exit code (0 after a graceful stop) is the one concurrently reports.
exec node node_modules/concurrently/dist/bin/concurrently.js \
  --kill-others --kill-signal SIGTERM \
  --names gateway,worker,redirect --prefix-colors blue,magenta,green \
  "exec node $NODE_FLAGS services/gateway/dist/dev.main.js" \
  "exec node $NODE_FLAGS services/worker/dist/main.js" \
  "exec node $NODE_FLAGS services/redirect/dist/main.js"
