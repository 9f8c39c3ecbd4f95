#!/bin/sh
# Picks the linkservice process from the first argument. `exec` makes node PID 1, so it gets
# SIGTERM directly and shuts down gracefully.
set -eu

# The node options every service runs with (docs/operations.md); `pnpm start` and the tests'
# stacks read the same file.
NODE_FLAGS="$(cat /app/deploy/node-flags)"

command="${1:-gateway}"
[ "$#" -gt 0 ] && shift

case "$command" in
  gateway) exec node $NODE_FLAGS /app/services/gateway/dist/main.js "$@" ;;
  # The gateway with a development receipt signing key when RECEIPT_SIGNING_KEY is unset (compose).
  gateway-dev) exec node $NODE_FLAGS /app/services/gateway/dist/dev.main.js "$@" ;;
  worker) exec node $NODE_FLAGS /app/services/worker/dist/main.js "$@" ;;
  redirect) exec node $NODE_FLAGS /app/services/redirect/dist/main.js "$@" ;;
  migrate) exec node /app/libs/db/dist/migrate.main.js "$@" ;;
  linkctl) exec node /app/services/linkctl/dist/main.js "$@" ;;
  -h | --help | help)
    echo "usage: linkservice gateway|gateway-dev|worker|redirect|migrate|linkctl <args>|<any command>"
    ;;
  # Anything else runs as given (a shell for debugging, node -e ...).
  *) exec "$command" "$@" ;;
esac
