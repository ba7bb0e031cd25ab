#!/usr/bin/env bash
# The image boards (docs/images.md, "The MFA board" and "The CNN board"): on the same tasks
# (seed 44) at D = 64 and 256, the tractable-Z yardstick (--model=mfa:5,9: exact JEM and the
# recipes with an exact joint KL, ranked by the leaderboard's excess over exact jem) and the
# CNN (cnn:8,16 on XLA's CPU backend, the recipes that train it, ranked by measures against
# the truth itself: leaderboard report --metric=kl_conditional, fisher_div,
# auroc_px_deficit, ece).
#
#   scripts/image-board.sh [OUT]          (default out/image-board; about 2 hours on 2 cores: the MFA
#                                          boards 15 + 36 min, the CNN boards 17 min + about 50 alone)
#   scripts/image-board.sh --smoke [OUT]  (default out/image-board-smoke; 2 tasks, 40 steps, fewer
#                                          recipes: 4 min 2 s on 2 cores; its numbers mean nothing)
#
# The CNN runs on XLA's CPU backend when scripts/xla-cpu.sh can fetch its plugin (a cgo build
# with -tags xla), else on GoMLX's pure-Go backend (15-17 times slower a step). A board
# already finished in OUT/NAME (its manifest.json) is kept: rerun the script to finish one
# that stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=
if [ "${1-}" = "--smoke" ]; then
	smoke=1
	shift
fi
out=${1:-out/image-board${smoke:+-smoke}}
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
tables=10 steps_cnn=2000 steps_mfa=
methods64=baseline,jem,jem-converged,sgld,mala,jarzynski,shortrun,ed,nce,tre,snl,drl
methods256=baseline,jem,jarzynski,mala,nce,tre
if [ -n "$smoke" ]; then
	tables=2 steps_cnn=40 steps_mfa=40
	methods64=baseline,jem,jarzynski,nce methods256=baseline,jem,nce
fi
mkdir -p "$out" bin
go build -o bin/ ./pipelines/control ./pipelines/leaderboard
backend=
if plugin=$(scripts/xla-cpu.sh 2>/dev/null) && CGO_ENABLED=1 go build -tags xla -o "$out/control-xla" ./pipelines/control 2>/dev/null; then
	backend="--backend=xla:$plugin"
	cnn_control="$out/control-xla"
else
	echo "image-board: no XLA CPU plugin or no cgo build: the CNN boards run on the pure-Go backend" >&2
	cnn_control=bin/control
fi
# run NAME CONTROL ARGS...: one control run into OUT/NAME (its log OUT/NAME.log), kept when
# finished before.
run() {
	local name=$1 ctl=$2
	shift 2
	if [ -f "$out/$name/manifest.json" ]; then
		echo "image-board: $name: kept ($out/$name)" >&2
		return 0
	fi
	echo "image-board: $name" >&2
	"$ctl" --seed=44 --tables="$tables" --timings --overwrite --out="$out/$name" "$@" >"$out/$name.log" 2>&1 ||
		{ echo "image-board: $name failed (log: $out/$name.log)" >&2; exit 1; }
}
report() { # report NAME METRIC: the leaderboard of OUT/NAME by METRIC into OUT/NAME-METRIC
	bin/leaderboard report --board="$out/$1" --metric="$2" --overwrite --out="$out/$1-$2" >/dev/null
}
mfa_steps=()
[ -n "$steps_mfa" ] && mfa_steps=(--steps="$steps_mfa")
run mfa64 bin/control --task=images:8,2 --model=mfa:5,9 --methods="$methods64" "${mfa_steps[@]}"
run mfa256 bin/control --task=images:16,2 --model=mfa:5,9 --methods="$methods256" "${mfa_steps[@]}"
run cnn64 "$cnn_control" --task=images:8,2 --steps="$steps_cnn" $backend
run cnn256 "$cnn_control" --task=images:16,2 --steps="$steps_cnn" $backend
for b in mfa64 mfa256; do report "$b" kl_joint; done
for b in cnn64 cnn256; do
	for m in kl_conditional fisher_div auroc_px_deficit ece; do report "$b" "$m"; done
done
echo "image-board: done: $out/{mfa64,mfa256}-kl_joint/leaderboard.md, $out/{cnn64,cnn256}-{kl_conditional,fisher_div,auroc_px_deficit,ece}/leaderboard.md" >&2
