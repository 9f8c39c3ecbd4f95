#!/bin/sh
# Picks the linkservice process from the first argument. `exec` makes node PID 1, so it gets
# SIGTERM directly and shuts down gracefully.
set -eu

command="${1:-gateway}"
[ "$#" -gt 0 ] && shift

case "$command" in
  gateway) exec node /app/services/gateway/dist/main.js "$@" ;;
  # The gateway with a development receipt signing key when RECEIPT_SIGNING_KEY is unset (compose).
  gateway-dev) exec node /app/services/gateway/dist/dev.main.js "$@" ;;
  worker) exec node /app/services/worker/dist/main.js "$@" ;;
  redirect) exec node /app/services/redirect/dist/main.js "$@" ;;
  migrate) exec node /app/libs/db/dist/migrate.main.js "$@" ;;
  linkctl) exec node /app/services/linkctl/dist/main.js "$@" ;;
  -h | --help | help)
    echo "usage: linkservice gateway|gateway-dev|worker|redirect|migrate|linkctl <args>|<any command>"
    ;;
  # Anything else runs as given (a shell for debugging, node -e ...).
  *) exec "$command" "$@" ;;
esac
