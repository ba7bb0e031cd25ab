#!/usr/bin/env bash
# Writes docs/leaderboard.md's text from a finished leaderboard (scripts/leaderboard.sh OUT):
#
#   scripts/leaderboard-page.sh out/leaderboard > docs/leaderboard.md
set -euo pipefail
out=${1:-out/leaderboard}
for f in "$out/picks/picks.md" "$out/leaderboard.md"; do
	[ -f "$f" ] || { echo "leaderboard-page: $f is missing: run scripts/leaderboard.sh $out first" >&2; exit 2; }
done
cat <<'HEAD'
# The leaderboard of JEM recipes

Every 2-D recipe beside exact JEM under one protocol ([protocol.md](protocol.md) where present;
`tasks/protocol.go`): the same draws (20% held out), initial parameters, model (MLP 2-32-32-K,
tanh), Adam lr 0.003, 1,500 steps and batch 64 for every method, exact jem included; every run
scored at its iterate of least held-out NLL, never by the truth. The yardstick is exact jem
trained that way; `jem-converged` (full batch, lr 0.01) is shown beside it as a reference.

Made by one command: 66 min on 2 cores for all 11 recipes, tuning, pick, the boards at the
defaults, the presets and the tuned boards (measured from a clean clone, the build included:
`/usr/bin/time scripts/leaderboard.sh`, 66 min 1 s wall, 76 CPU-minutes, on cores shared with
other work for 8 of those minutes). A sweep finished earlier from the same spec and seed is
kept, so adding a recipe runs only its sweeps; this page by
`scripts/leaderboard-page.sh out/leaderboard > docs/leaderboard.md`):

    scripts/leaderboard.sh out/leaderboard
    scripts/leaderboard.sh --smoke    # every recipe, tuning and pick included, at tiny settings: 9 min 12 s on 2 cores shared with other work (8 min 20 s CPU, the build included)

The smoke board (`out/leaderboard-smoke`) runs every spec at 3 tasks per family (2 on tuning
specs), one run seed and 100 steps (`bin/leaderboard smoke SPEC` writes each one), with the
measures beyond the exact KL on each point's first task: it shows the whole board working, and
its numbers mean nothing (every verdict undecided, ranks on 3 tasks).

It tunes every recipe (six settings of its key options each, `sweeps/leaderboard/tune-*.yaml`,
4 tasks per family on run seed 101) and gives exact jem the same budget for its own rate and batch
(`tune-jem.yaml`: lr 0.001, 0.003, 0.01 × batch 64, 256). The pick is truth-free: each setting's
score is its runs' held-out NLL (at the selected iterate) less exact jem's on the same task at the
same rate and batch (jem's own settings: less jem's at the board's), averaged over the tasks and
then the families, and the pick is the setting of least score among those that collapsed on at
most a quarter of their tuning runs. The mean excess joint KL over exact jem (the tuning tasks'
truth) is printed beside each score and never used; ◇ marks the setting it would pick
(`out/leaderboard/picks/picks.md`). A tuned jem is an entry of its own, `jem tuned`, a reference
beside the recipes (its excess is over jem at the board's settings, as every entry's). It then runs `sweeps/leaderboard.yaml` (run seed 2, 10 tasks × 3
replicates per family: tasks the tuning never saw) at the defaults and at the picks, and ranks
them (`bin/leaderboard report`, `out/leaderboard/leaderboard.md`). The recipes added with the
method packages (`nce`, `tre`, `dsm`, `snl`, `drl`) run on the same points from
`sweeps/leaderboard-recipes.yaml`, paired with the same exact jem; sgld's named presets
(`jempp`, `noisefree`, `langevin`, `sweeps/leaderboard/preset-*.yaml`) are entries of their own
(`sgld jempp`, ...), untuned.

How to read it: *excess* is the mean over the 30 tasks × seeds of (recipe's joint KL − exact
jem's on the same task), in nats, with a bootstrap 95% CI; *rank* is the recipe's place by mean
excess (1 = best; ≈ marks the set indistinguishable from the best); the statistics that say which
differences the data support, and the critical-difference diagram (`leaderboard-cd-*.svg`), are
described in [How the board ranks](#how-the-board-ranks); the cost curves
(`leaderboard-cost-*.svg`) draw every entry's mean excess at each training check against the
gradient evaluations spent by then, the frontier joined; *budget-matched excess* takes each run
at its iterate of least held-out NLL among the checks within the cheapest recipe's gradient
evaluations; *unstable* counts runs whose held-out NLL ended 0.25 nats above its best or above
the baseline's (n/a for the baseline, which does not train q(x)); ◆ marks the frontier (no other
recipe has both less excess and fewer gradient evaluations).

## Tuning (tuning tasks, run seed 101)

HEAD
cat "$out/picks/picks.md"
echo
echo "## The board (run seed 2, 3 replicates × 10 tasks per family)"
cat "$out/leaderboard.md"
