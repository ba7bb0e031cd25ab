#!/usr/bin/env bash
# The leaderboard of JEM recipes (issue 21): tune every 2-D recipe on the same budget
# (sweeps/leaderboard/tune-*.yaml: three values of its own key option, 4 tasks per family,
# run seed 1), pick each one's best value (scripts/leaderboard-pick.py), then run the
# leaderboard spec with the picks on other tasks (run seed 2, 10 tasks per family):
#
#   scripts/leaderboard.sh [OUT]          (default out/leaderboard; ~20 minutes on 2 cores)
#
# The leaderboard's report is OUT/board/report.html (section "Leaderboard"), its rows
# OUT/board/results/*.parquet; OUT/picks.txt is the tuning table.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/leaderboard}
export GOEXPERIMENT="${GOEXPERIMENT-simd}"
go build -o bin/ ./pipelines/sweep
for m in sgld mala jarzynski ed shortrun; do
  bin/sweep --spec="sweeps/leaderboard/tune-$m.yaml" --seed=1 --eval_every=0 --timings --out="$out/tune-$m"
done
/usr/bin/python3 scripts/leaderboard-pick.py "$out" > "$out/pick.out"
sed '/^---spec---$/,$d' "$out/pick.out" | tee "$out/picks.txt"
sed '1,/^---spec---$/d' "$out/pick.out" > "$out/leaderboard.yaml"
if ! cmp -s "$out/leaderboard.yaml" sweeps/leaderboard.yaml; then
  echo "leaderboard: the picks differ from sweeps/leaderboard.yaml (running the new ones):" >&2
  diff sweeps/leaderboard.yaml "$out/leaderboard.yaml" >&2 || true
fi
bin/sweep --spec="$out/leaderboard.yaml" --seed=2 --eval_every=0 --timings --out="$out/board"
