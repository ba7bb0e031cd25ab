#!/bin/sh
# Flex Template entry point: Google's go_template_launcher runs this script (it is
# $FLEX_TEMPLATE_GO_BINARY) with the template parameters and the Dataflow options as
# --flags. It runs the pipeline binary and adds --worker_binary, so that Beam stages
# the binary baked into the image instead of trying to `go build` one (the launcher
# image has no Go toolchain), and --async: a Flex Template launcher must exit once the
# job is submitted (Dataflow starts the job only then), so it cannot wait for the
# verdict; read summary.json in the output folder instead. JEMCHECK_EXTRA_ARGS (set in the GPU image) adds fixed
# flags such as --backend=xla:cuda; flags given at launch come later and win.
#
# In every argument, {DATE} becomes the UTC date (20250131) and {TIME} the UTC time
# (20250131T030000Z), so a scheduled launch can write each run to its own folder:
# out=gs://bucket/regress/{DATE}.
set -eu
bin="${JEMCHECK_BINARY:?JEMCHECK_BINARY is not set}"
worker="${JEMCHECK_WORKER_BINARY:-$bin}"
day=$(date -u +%Y%m%d)
now=$(date -u +%Y%m%dT%H%M%SZ)
n=$#
i=0
while [ "$i" -lt "$n" ]; do
  a=$1
  shift
  case $a in
    *"{DATE}"* | *"{TIME}"*) a=$(printf '%s\n' "$a" | sed -e "s/{DATE}/$day/g" -e "s/{TIME}/$now/g") ;;
  esac
  set -- "$@" "$a"
  i=$((i + 1))
done
# shellcheck disable=SC2086 # JEMCHECK_EXTRA_ARGS is a list of flags: split it on spaces.
exec "$bin" --worker_binary="$worker" --async ${JEMCHECK_EXTRA_ARGS:-} "$@"
