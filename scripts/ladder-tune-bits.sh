#!/usr/bin/env bash
# The ladder board's binary rungs tuned (scripts/ladder-board.sh runs them at the defaults):
# every binary recipe and exact jem's own rate and batch get six settings on tuning tasks
# (sweeps/ladder-board/tune-bits-*.yaml, run seed 101), bin/leaderboard pick picks one
# setting a method truth-free (held-out NLL less exact jem's, averaged over D = 8, 12, 16),
# the picks run on the rungs' 30 tasks a D (run seed 5), and bin/leaderboard report ranks
# the defaults and the tuned beside each other, D by D:
#
#   scripts/ladder-tune-bits.sh OUT BOARD    (BOARD: the ladder board's folder, with bits/ and
#                                            bits-converged/ finished; about 6 min on 2 cores)
#   PER_TASK=1 scripts/ladder-tune-bits.sh OUT BOARD    (a pick a method at each D from that D's
#                                            tuning tasks alone, --per_task: docs/results.md
#                                            has why the pooled pick is the default)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/ladder-tune-bits.sh OUT BOARD}
board=${2:?usage: scripts/ladder-tune-bits.sh OUT BOARD}
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
go build -o bin/ ./pipelines/sweep ./pipelines/leaderboard
mkdir -p "$out"
run() { # name spec seed
	if [ -f "$out/$1/manifest.json" ]; then
		echo "ladder-tune-bits: $1: kept" >&2
		return 0
	fi
	echo "ladder-tune-bits: $1 ($2)" >&2
	bin/sweep --timings --overwrite --report_tables=0 --write_samples=false --seed="$3" --spec="$2" --out="$out/$1" >"$out/$1.log" 2>&1 ||
		{ tail -5 "$out/$1.log" >&2; exit 1; }
}
tune=()
for m in jem ed nce snl pcd; do
	run "tune-$m" "sweeps/ladder-board/tune-bits-$m.yaml" 101
	tune+=("$out/tune-$m")
done
per=()
if [[ -n ${PER_TASK-} ]]; then
	per=(--per_task)
fi
(IFS=,; bin/leaderboard pick --overwrite "${per[@]}" --tune="${tune[*]}" --tasks="bits:8,2;bits:12,2;bits:16,2" --tables=30 --replicates=1 --out="$out/picks")
tuned=()
for f in "$out"/picks/tuned-*.yaml; do
	m=$(basename "$f" .yaml)
	run "$m" "$f" 5
	tuned+=("$out/$m")
done
(IFS=,; bin/leaderboard report --overwrite --board="$board/bits,$board/bits-converged" --tuned="${tuned[*]}" --picks="$out/picks/picks.json" --out="$out")
echo "ladder-tune-bits: done in $((SECONDS / 60)) min $((SECONDS % 60)) s: $out/leaderboard.md" >&2
