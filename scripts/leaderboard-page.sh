#!/usr/bin/env bash
# Writes docs/leaderboard.md's text from a finished leaderboard (scripts/leaderboard.sh OUT):
#
#   scripts/leaderboard-page.sh out/leaderboard > docs/leaderboard.md
#   cp out/leaderboard/leaderboard-*.svg docs/images/
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

Made by one command: 37 min on 2 cores for all 11 recipes and exact jem's own tuning, pick, the
boards at the defaults, the presets and the tuned boards (`/usr/bin/time scripts/leaderboard.sh`,
36 min 46 s wall, 51 CPU-minutes, 1.4 GB peak RSS, on a 2-core AMD EPYC (Zen 4) with light work
beside it). A sweep finished earlier from the same spec and seed is
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

## How the board ranks

A board orders the recipes by mean excess and claims only what the paired data support, in the
standard presentation of Demšar (2006, "Statistical comparisons of classifiers over multiple data
sets", JMLR 7), computed by `verdict.Rank` (`verdict/ranking.go`):

- **The best and the set indistinguishable from it.** The best recipe is the one of least mean
  excess. Every other recipe is compared with the best alone, on the tasks × seeds both have: its
  mean paired excess over the best's with a paired-bootstrap 95% CI (*over the best*), and a
  two-sided Wilcoxon signed-rank test of those differences, the k − 1 p-values Holm-corrected
  together (*Holm p vs best*, family-wise α = 0.05). A recipe whose Holm p is ≥ 0.05 is
  indistinguishable from the best (≈ beside its rank; the best itself is in the set). The set is
  defined against one reference, so it is transitive by construction.
- **The Friedman test and the critical difference.** Over the tasks × seeds every ranked recipe
  has, each task ranks the recipes (ties share the mean of their ranks); the Friedman χ² and the
  Iman–Davenport F test whether any recipe differs, and the Nemenyi critical difference
  CD = q<sub>α</sub>·√(k(k+1)/(6N)) says which average ranks differ: recipes whose average ranks
  are closer than CD are not distinguishable by that test (the groups listed after each board, and
  the critical-difference diagram of the HTML report's leaderboard). q<sub>α</sub> is computed from
  the studentized range distribution (infinite degrees of freedom) and reproduces Demšar's Table 5
  (k = 4: 2.569, so CD = 1.25 at N = 14). Benavoli et al. (2016, JMLR 17) give a Bayesian variant;
  the board uses the frequentist one.
- **The smallest detectable difference.** Each board states the difference from the best it can
  detect at its n: MDE = (z<sub>1−α/(2(k−1))</sub> + z<sub>0.8</sub>)·sd(d)/√n, sd(d) the observed
  spread of a recipe's paired differences to the best (80% power at family-wise α = 0.05 under
  Holm's worst case, Bonferroni over the k − 1 comparisons); the board's sentence gives the median
  over its recipes. A difference smaller than that may be real and unseen: "indistinguishable" is
  not "equal". Below some n no difference is detectable at all: the exact signed-rank test's
  smallest p, 2/2<sup>n</sup> (every difference of one sign), must be ≤ α/(k − 1), so with 23
  ranked recipes (as on the smoke board) a board needs n ≥ 10 tasks × seeds
  (2/2<sup>10</sup> ≈ 0.00195 ≤ 0.05/22 ≈ 0.00227); below that the board says it cannot detect any
  difference (the smoke board, 3 tasks per family and 9 pooled, does).

This replaced rank groups (every pair of recipes tested, Holm-corrected over all k(k−1)/2 pairs,
recipes grouped greedily), which a review found not transitive and unable to separate anything
at 10 tasks: among 10 recipes, one worse than another on all 10 tasks has the exact two-sided
Wilcoxon p = 2/1024 ≈ 0.00195, which over the 45 pairs Holm-adjusts to 0.088, but over the 9
comparisons with the best to 0.0176, below 0.05 (`TestRankReviewCase` in
`verdict/ranking_test.go`).

**Boards without exact jem.** Where no exact jem exists (a CNN on `images:S,K`), `bin/leaderboard
report --metric=M` ranks the recipes by a measure against the truth itself instead of the excess:
`kl_conditional`, `fisher_div`, `log_ratio_sd`, `ece` or `auroc_px_deficit` (1 − the AUROC of
log q(x), data against uniform noise), lower better, each recipe's value paired by task with the
others' under the same statistics (best set, Friedman, CD, detectable difference); the baseline
is a reference row, and the budget-matched view and cost curves, which read the joint KL off the
curves, are left out. The default, `kl_joint`, is the excess above. The image board in
[images.md](images.md#the-cnn-board) is made this way.

**Where the board's numbers come from.** The tables below are `bin/leaderboard report` over the
runs of the full `scripts/leaderboard.sh out/leaderboard` (run seed 2, 10 tasks × 3 seeds a
family), so every number recomputes from `out/leaderboard/*/results/`. Its `jem-converged`
trained until its convergence rule held ([protocol.md](protocol.md#the-converged-yardstick));
`jem tuned` is exact jem at the rate and batch its own tuning picked (lr 0.01, batch 256 on this
run), trained like every recipe otherwise.

## Tuning (tuning tasks, run seed 101)

HEAD
cat "$out/picks/picks.md"
echo
echo "## The board (run seed 2, 3 replicates × 10 tasks per family)"
sed 's#](leaderboard-#](images/leaderboard-#g' "$out/leaderboard.md" # the figures: cp "$out"/leaderboard-*.svg docs/images/
