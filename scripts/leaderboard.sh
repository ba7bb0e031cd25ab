#!/usr/bin/env bash
# The leaderboard of JEM recipes under the protocol (tasks/protocol.go), tuning included:
#
#   scripts/leaderboard.sh [OUT]          (default out/leaderboard; ~30 minutes on 2 cores)
#
# 1. tune: every recipe's six settings on tuning tasks (sweeps/leaderboard/tune-*.yaml, run
#    seed 101) and exact jem on the same tasks;
# 2. pick: each recipe's setting of least mean excess over exact jem (OUT/picks/picks.json,
#    the table in OUT/picks/picks.md, a tuned spec per recipe);
# 3. board: sweeps/leaderboard.yaml (run seed 2, 3 replicates × 10 tasks per family) at the
#    defaults, and each recipe at its pick on the same tasks;
# 4. report: rank groups, the budget-matched view and the frontier per family and pooled
#    (OUT/leaderboard.md, OUT/leaderboard.json).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/leaderboard}
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
go build -o bin/ ./pipelines/sweep ./pipelines/leaderboard
mkdir -p "$out"
# sweep NAME SPEC: runs SPEC into OUT/NAME (its log OUT/NAME.log), on the board's seed unless SEED is set.
sweep() {
	local name=$1 spec=$2 log="$out/$1.log"
	echo "leaderboard: $name ($spec)" >&2
	bin/sweep --timings --overwrite --report_tables=0 --seed="${SEED:-2}" --spec="$spec" --out="$out/$name" >"$log" 2>&1 ||
		{ tail -5 "$log" >&2; return 1; }
}
tune=()
for m in jem sgld mala jarzynski ed shortrun; do
	SEED=101 sweep "tune-$m" "sweeps/leaderboard/tune-$m.yaml"
	tune+=("$out/tune-$m")
done
mkdir -p "$out/picks"
(IFS=,; bin/leaderboard pick --tune="${tune[*]}" --out="$out/picks") | tee "$out/picks/picks.md"
sweep board sweeps/leaderboard.yaml
tuned=()
for f in "$out"/picks/tuned-*.yaml; do
	m=$(basename "$f" .yaml)
	sweep "$m" "$f"
	tuned+=("$out/$m")
done
(IFS=,; bin/leaderboard report --board="$out/board" --tuned="${tuned[*]}" --picks="$out/picks/picks.json" --out="$out")
scripts/leaderboard-page.sh "$out" > "$out/leaderboard-page.md"
