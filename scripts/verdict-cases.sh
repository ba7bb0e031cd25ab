#!/usr/bin/env bash
# The verdict over the cases of the scientific audit (issue 8): one regress run per case,
# a line per case with the verdict, its cause and the error split of JEM's joint KL.
#
#   GOEXPERIMENT=simd go build -o bin/ ./pipelines/regress && scripts/verdict-cases.sh bin/regress /tmp/cases
#
# TABLES (default 2000) and SEED (default 4) set every case's --tables and --seed.
set -euo pipefail
bin=${1:?usage: verdict-cases.sh REGRESS_BINARY OUT_DIR}
out=${2:?usage: verdict-cases.sh REGRESS_BINARY OUT_DIR}
mkdir -p "$out"
tables=${TABLES:-2000}
seed=${SEED:-4}
cases=(
  "defaults|"
  "N=30|--samples=30"
  "N=30 steps=10000|--samples=30 --steps=10000"
  "N=1e5|--samples=100000"
  "N=1e5 steps=3000|--samples=100000 --steps=3000"
  "dirichlet:0.1|--generator=dirichlet:0.1"
  "dirichlet:0.1 steps=3000|--generator=dirichlet:0.1 --steps=3000"
  "dirichlet:10|--generator=dirichlet:10"
  "4x3 scalar|--x_values=4 --classes=3"
  "4x3 scalar steps=3000|--x_values=4 --classes=3 --steps=3000"
  "4x3 onehot|--x_values=4 --classes=3 --x_encoding=onehot"
  "8x4 onehot|--x_values=8 --classes=4 --x_encoding=onehot"
  "mlp:16,16|--model=mlp:16,16"
  "batch 32|--batch_size=32"
  "batch 32 lr=0.005 steps=3000|--batch_size=32 --lr=0.005 --steps=3000"
  "px 0|--jem_px_weight=0"
  "px 0.1|--jem_px_weight=0.1"
  "px 0.2|--jem_px_weight=0.2"
  "px 0.5|--jem_px_weight=0.5"
  "steps 100|--steps=100"
  "steps 150|--steps=150"
)
printf '%s\n' "case|verdict|cause|JEM KL / exact ref|opt gap / stat err [95% CI]|q(x) gap|approx|empty-cell tables|JEM KL = approx + opt + est|headline"
for c in "${cases[@]}"; do
  name=${c%%|*}
  flags=${c#*|}
  dir="$out/$(echo "$name" | tr -c 'A-Za-z0-9=.\n' '_')"
  # shellcheck disable=SC2086
  "$bin" --tables="$tables" --seed="$seed" --write_samples=false --overwrite --out="$dir" $flags >"$dir.log" 2>&1 || true
  /usr/bin/python3 - "$name" "$dir/summary.json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    s = json.load(open(path))
except Exception as e:
    print(f"{name}|no summary ({e})"); sys.exit()
p = s["points"][0]; v = p["verdict"]
ck = {c["name"]: c for c in v.get("checks", [])}
j = next(m for m in p["methods"] if m["method"] == "jem")
def pc(c): return f'{100*c["value"]:.3g}% [{100*c["ci_low"]:.3g}, {100*c["ci_high"]:.3g}]' if c.get("value") is not None else "n/a"
word = "HOLDS" if v["holds"] else ("FAILS" if v["decided"] else "undecided")
print("|".join([name, word, v.get("cause", ""), f'{j["reference_ratio"]:.3g}',
    pc(ck["optimisation_gap"]), pc(ck["marginal_gap"]), pc(ck["approximation"]),
    f'{100*p["empty_cell_share"]:.3g}%',
    f'{j["kl_joint"]["mean"]:.3g} = {j["kl_approximation"]["mean"]:.3g} + {j["kl_optimisation_gap"]["mean"]:.3g} + {j["kl_estimation"]["mean"]:.3g}',
    v.get("headline", "")]))
PY
done
