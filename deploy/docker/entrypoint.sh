#!/bin/sh
# The image's entrypoint. No arguments: serve /etc/sluice/sluice.yaml when one is mounted, else
# the embedded default (the built-in mock plus a channel for each provider key in the
# environment, on SLUICE_LISTEN). Arguments starting with "-" go to `sluice serve`; anything else
# is a sluice subcommand (`mock`, `check -c FILE`, `version`).
set -e
if [ $# -eq 0 ]; then
  if [ -f /etc/sluice/sluice.yaml ]; then set -- serve -c /etc/sluice/sluice.yaml; else set -- serve; fi
fi
case "$1" in -*) set -- serve "$@" ;; esac
exec /usr/bin/sluice "$@"
