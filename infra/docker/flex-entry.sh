#!/bin/sh
# Flex Template entry point: Google's go_template_launcher runs this script (it is
# $FLEX_TEMPLATE_GO_BINARY) with the template parameters and the Dataflow options as
# --flags. It runs the pipeline binary and adds --worker_binary, so that Beam stages
# the binary baked into the image instead of trying to `go build` one (the launcher
# image has no Go toolchain). JEMCHECK_EXTRA_ARGS (set in the GPU image) adds fixed
# flags such as --backend=xla:cuda; flags given at launch come later and win.
set -eu
bin="${JEMCHECK_BINARY:?JEMCHECK_BINARY is not set}"
worker="${JEMCHECK_WORKER_BINARY:-$bin}"
# shellcheck disable=SC2086 # JEMCHECK_EXTRA_ARGS is a list of flags: split it on spaces.
exec "$bin" --worker_binary="$worker" ${JEMCHECK_EXTRA_ARGS:-} "$@"
