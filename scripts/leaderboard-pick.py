#!/usr/bin/python3
"""Pick each recipe's option for the leaderboard from its tuning sweep (issue 21).

usage: leaderboard-pick.py OUT     (OUT holds tune-<method>/summary.json)

For every recipe, the value of its tuned option whose mean excess joint KL over exact jem,
averaged over the task families of the tuning sweep, is least; prints the table of every
value tried and writes the leaderboard's sweep spec (the picks as defaults) to stdout's
last part, after a line "---spec---".
"""
import json, os, sys

TUNED = [("sgld", "sgld_lr"), ("mala", "step_size"), ("jarzynski", "ess_resample"),
         ("ed", "ed_t"), ("shortrun", "shortrun_step")]


def main():
    out = sys.argv[1]
    picks = []
    for method, key in TUNED:
        s = json.load(open(os.path.join(out, f"tune-{method}", "summary.json")))
        by = {}
        for p in s["points"]:
            v = p["params"][key]
            ex = [c["excess"] for c in p.get("samplers", []) if c["method"] == method]
            by.setdefault(v, []).append(ex[0] if ex else float("inf"))
        rows = sorted((sum(e) / len(e), v, e) for v, e in by.items())
        for mean, v, e in sorted(rows, key=lambda r: r[1]):
            fam = ", ".join(f"{x:.3g}" for x in e)
            print(f"{method:10s} {key}={v:<8g} mean excess {mean:.4g} nats (per family: {fam})")
        picks.append((method, key, rows[0][1], rows[0][0]))
    print("picks: " + "; ".join(f"{m} {k}={v:g} ({e:.3g})" for m, k, v, e in picks))
    print("---spec---")
    print("""# The leaderboard of JEM recipes on known truth (issue 21): every 2-D recipe with its option
# picked on the tuning sweeps (sweeps/leaderboard/tune-*.yaml, run seed 1) by
# scripts/leaderboard-pick.py, reported here on other tasks (run seed 2): 10 tasks of each
# family, N = 2000 draws, MLP 2-32-32-K (tanh), Adam lr 0.003, 1500 steps, batch 64.
#
#   scripts/leaderboard.sh      (tunes, writes this spec to out/leaderboard/leaderboard.yaml, runs it)
name: leaderboard
description: JEM recipes against exact JEM on gmm, moons and circles (10 tasks each, tuned on other tasks)
tables: 10
methods: [baseline, jem, sgld, mala, jarzynski, ed, shortrun]
defaults:""")
    for m, k, v, e in picks:
        print(f"  {k}: {v:g}   # {m}: mean excess {e:.3g} nats on the tuning tasks")
    print("""grid:
  task: ["gmm:3,2", "moons:0.1", "circles:0.1"]""")


if __name__ == "__main__":
    main()
