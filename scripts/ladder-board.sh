#!/usr/bin/env bash
# The ladder board (which recipe survives dimension): every recipe at its defaults on block
# tasks of two families at D = 2, 8, 16, 32 and 64 and on binary tables at D = 8, 12, 16 and 20, beside exact
# jem (the yardstick), the converged yardstick and the baseline, then the leaderboard's
# statistics at each D and each family's ladder (excess over exact jem against D, with CIs):
#
#   scripts/ladder-board.sh [OUT]    (default out/ladder-board; the sweeps' specs say what runs)
#
# OUT/blocks, OUT/blocks-contrast, OUT/blocks64 (D = 64, about 80 minutes on 2 cores), OUT/bits (30
# tasks a D), OUT/bits-converged (their converged yardstick) and OUT/bits20 (D = 20, 23 min) are the sweeps (their own reports include the sweep report's ladder
# figure); OUT/leaderboard.md, leaderboard.json and leaderboard-ladder-<family>.svg the board.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/ladder-board}
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
go build -o bin/ ./pipelines/sweep ./pipelines/leaderboard
mkdir -p "$out"
for rung in blocks blocks-contrast blocks64 bits bits-converged bits20; do
	if [ -f "$out/$rung/manifest.json" ]; then
		echo "ladder-board: $rung: kept ($out/$rung)" >&2
		continue
	fi
	echo "ladder-board: $rung (sweeps/ladder-board-$rung.yaml)" >&2
	# --resume: a rung interrupted after some of its blocks completed continues from them
	# (with nothing to resume it runs from the start).
	bin/sweep --timings --overwrite --resume --report_tables=0 --seed=5 --spec="sweeps/ladder-board-$rung.yaml" --out="$out/$rung" >"$out/$rung.log" 2>&1 ||
		{ tail -5 "$out/$rung.log" >&2; exit 1; }
done
bin/leaderboard report --overwrite --board="$out/blocks,$out/blocks-contrast,$out/blocks64,$out/bits,$out/bits-converged,$out/bits20" --out="$out"
echo "ladder-board: done in $((SECONDS / 60)) min $((SECONDS % 60)) s: $out/leaderboard.md" >&2
