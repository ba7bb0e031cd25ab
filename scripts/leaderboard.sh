#!/usr/bin/env bash
# The leaderboard of JEM recipes under the protocol (tasks/protocol.go), tuning included:
#
#   scripts/leaderboard.sh [OUT]          (default out/leaderboard; 66 min on 2 cores, the build included: docs/leaderboard.md)
#   scripts/leaderboard.sh --smoke [OUT]  (default out/leaderboard-smoke; 9 minutes on 2 shared cores, the build included)
#
# --smoke runs every step below, every recipe and preset included, with each spec at tiny
# settings (bin/leaderboard smoke SPEC: 3 tasks per family, 2 on tuning specs, one run seed,
# 100 steps; OUT/specs/) and the measures beyond the exact KL on each point's first task only:
# it shows the board working end to end, its numbers mean nothing.
#
# 1. tune: every recipe's six settings on tuning tasks (sweeps/leaderboard/tune-*.yaml, run
#    seed 101) and exact jem on the same tasks;
# 2. pick: each recipe's setting of least mean excess over exact jem (OUT/picks/picks.json,
#    the table in OUT/picks/picks.md, a tuned spec per recipe);
# 3. board: sweeps/leaderboard.yaml and sweeps/leaderboard-recipes.yaml (run seed 2, 3
#    replicates × 10 tasks per family) at the defaults, sgld's named presets
#    (sweeps/leaderboard/preset-*.yaml), and each recipe at its pick on the same tasks;
# 4. report: ranks against the best, Friedman and the critical difference, the budget-matched view and the frontier per family and pooled
#    (OUT/leaderboard.md, OUT/leaderboard.json).
set -euo pipefail
cd "$(dirname "$0")/.."
smoke= measure=-1
if [ "${1-}" = "--smoke" ]; then
	smoke=1 measure=1
	shift
fi
out=${1:-out/leaderboard${smoke:+-smoke}}
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
go build -o bin/ ./pipelines/sweep ./pipelines/leaderboard
mkdir -p "$out"
# sweep NAME SPEC: runs SPEC into OUT/NAME (its log OUT/NAME.log), on the board's seed unless
# SEED is set. A sweep already finished in OUT/NAME from the same spec and seed (its
# manifest.json, and OUT/NAME.key recording the spec's sha256 and the seed) is kept: rerun
# the script after adding a recipe and only the new sweeps run.
sweep() {
	local name=$1 spec=$2 log="$out/$1.log"
	local key
	if [ -n "$smoke" ]; then # the spec at the smoke board's settings
		mkdir -p "$out/specs"
		bin/leaderboard smoke "$spec" >"$out/specs/$name.yaml"
		spec="$out/specs/$name.yaml"
	fi
	key="$(sha256sum <"$spec" | cut -d' ' -f1) seed=${SEED:-2}"
	if [ -f "$out/$name/manifest.json" ] && [ "$(cat "$out/$name.key" 2>/dev/null)" = "$key" ]; then
		echo "leaderboard: $name: kept ($out/$name from the same spec and seed)" >&2
		return 0
	fi
	echo "leaderboard: $name ($spec)" >&2
	bin/sweep --timings --overwrite --report_tables=0 --measure_tasks="$measure" --sampler_chains=2000 --seed="${SEED:-2}" --spec="$spec" --out="$out/$name" >"$log" 2>&1 ||
		{ tail -5 "$log" >&2; return 1; }
	echo "$key" >"$out/$name.key"
}
tune=()
for m in jem sgld mala jarzynski ed shortrun nce tre dsm snl drl; do
	SEED=101 sweep "tune-$m" "sweeps/leaderboard/tune-$m.yaml"
	tune+=("$out/tune-$m")
done
# pick and report publish as a run does (lock, manifest); --overwrite: $out also holds the
# sweeps' folders, their logs and keys, which they leave alone.
(IFS=,; bin/leaderboard pick --overwrite --tune="${tune[*]}" --out="$out/picks")
sweep board sweeps/leaderboard.yaml
sweep board-recipes sweeps/leaderboard-recipes.yaml
variants=()
for f in sweeps/leaderboard/preset-*.yaml; do
	m=$(basename "$f" .yaml)
	sweep "$m" "$f"
	variants+=("$out/$m")
done
tuned=()
for f in "$out"/picks/tuned-*.yaml; do
	m=$(basename "$f" .yaml)
	sweep "$m" "$f"
	tuned+=("$out/$m")
done
(IFS=,; bin/leaderboard report --overwrite --board="$out/board,$out/board-recipes" --tuned="${tuned[*]}" --variants="${variants[*]}" --picks="$out/picks/picks.json" --out="$out")
scripts/leaderboard-page.sh "$out" > "$out/leaderboard-page.md"
echo "leaderboard: done in $((SECONDS / 60)) min $((SECONDS % 60)) s: $out/leaderboard.md" >&2
