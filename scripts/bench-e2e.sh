#!/usr/bin/env bash
# The whole jobs against their peers, one core each, in one run (issue 41): jemcheck's CPU
# seconds (user+sys, GNU time) beside the numpy/PyTorch peers of ../shared/peers measured
# in the same run, and where each job's CPU goes. Prints Markdown; with --write-docs it
# also replaces the generated block of docs/performance.md with it.
#
#   scripts/bench-e2e.sh                     # about 4 minutes on 2 cores (most of it the SGLD job and the peers)
#   OLD=a8c9c92 scripts/bench-e2e.sh         # also an older tree's control binary, built from that revision
#   OLD=a8c9c92 OLD_BIN=path ...             # the same, with that revision's control built already
#   scripts/bench-e2e.sh --write-docs        # and regenerate docs/performance.md's "End to end" block
#
# The jobs (every one pinned to core 0 with taskset; Go's GOMAXPROCS follows the pinning):
#   1. default:    `control` on its embedded defaults (1,000 2×2 tables × {baseline, jem, oracle},
#                  N = 1,000, sample files) against `torch_e2e.py` on its defaults (the same
#                  tables and N, baseline and jem, CSV sample files);
#   2. 20k:        `control --tables=20000 --samples=50 --methods=jem` against
#                  `torch_e2e.py --tables 20000 --n 50` (the peer trains baseline and jem);
#   3. throughput: `control --tables=T --methods=baseline,jem --write_samples=false` at T = 40,000
#                  and TABLES (default 100,000), against `torch_e2e.py --no_samples` at TABLES; the
#                  pipeline's marginal runs per CPU-second, (2·(TABLES − 40,000)) / (CPU(TABLES) −
#                  CPU(40,000)), against training alone (BenchmarkTable2x2/jem of models/kernel,
#                  runs per CPU-second, one core). Both sizes are past the 20,000 tables up to which
#                  the summary keeps every row (its exact bootstrap costs ~0.8 s at 20,000 and is
#                  replaced by folded sums beyond), so the difference is the per-run cost alone;
#   4. sgld:       `control --task=gmm:3,2 --tables=256 --steps=200 --methods=sgld` against
#                  `torch_sgld.py --runs 256 --steps 200` (its training loop only: no evaluation).
#   5. memory: peak RSS of `regress --write_samples=false` (both cores) at 20,000 and 200,000 tables
#      (targets: ≤ 800 MB at 200,000 and ≤ 2× the 20,000 peak).
# Where the time goes: a CPU profile of jobs 3 (at TABLES) and 4 (JEMCHECK_CPUPROFILE), split by
# path with `go tool pprof -focus` (see share() below); "rest" is Beam/prism, coders and the GC.
#
# Needs GNU time, taskset and /usr/bin/python3 with numpy, scipy, pandas, matplotlib and torch
# (Debian: apt-get install -y python3-torch python3-numpy python3-scipy python3-pandas
# python3-matplotlib); without them the peers' columns say "skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
export GOEXPERIMENT="${GOEXPERIMENT-simd}" # the AVX-512 build of the training kernels, as the README builds
write_docs=0
[[ ${1-} == --write-docs ]] && write_docs=1
tables=${TABLES:-100000}
peers=${PEERS:-../shared/peers}
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/jemcheck-e2e.XXXXXX")
trap 'rm -rf "$tmp"; git worktree prune 2>/dev/null || true' EXIT
for t in /usr/bin/time taskset; do command -v "$t" >/dev/null || { echo "bench-e2e: needs $t" >&2; exit 2; }; done
have_peer=1
$py -c 'import torch, numpy, scipy, pandas, matplotlib' 2>/dev/null || have_peer=0

echo "bench-e2e: building (GOEXPERIMENT=$GOEXPERIMENT)" >&2
go build -o "$tmp/" ./pipelines/control
go test -c -o "$tmp/kernel.test" ./models/kernel
old_label=""
if [[ -n ${OLD-} ]]; then
	old_label=$(git rev-parse --short "$OLD")
	mkdir -p "$tmp/old"
	if [[ -n ${OLD_BIN-} ]]; then # that revision's control, built already
		cp "$OLD_BIN" "$tmp/old/control"
	else
		git worktree add -f --detach "$tmp/old-tree" "$OLD" >/dev/null 2>&1
		(cd "$tmp/old-tree" && go build -o "$tmp/old/" ./pipelines/control)
	fi
fi
go build -o "$tmp/" ./pipelines/regress

cpu() { awk '{ printf "%.2f", $1 + $2 }' "$tmp/$1.time"; }        # user+sys seconds
rss() { awk '{ printf "%d", $3 / 1024 }' "$tmp/$1.time"; }         # peak RSS, MB
run() { # name, command...: one core, timed; a failure prints the log and stops
	local name=$1
	shift
	echo "bench-e2e: $name" >&2
	/usr/bin/time -f "%U %S %M %e" -o "$tmp/$name.time" taskset -c 0 "$@" >"$tmp/$name.log" 2>&1 ||
		{ echo "bench-e2e: $name failed:" >&2; tail -20 "$tmp/$name.log" >&2; exit 1; }
}
peer() { # name, script, args...: a peer with one thread, or a skipped marker
	local name=$1 script=$2
	shift 2
	if [[ $have_peer == 1 ]]; then
		OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 run "$name" $py "$peers/$script" "$@"
	else
		echo "skipped" >"$tmp/$name.time"
	fi
}
ratio() { # a, b: a/b with two decimals, or "—" when b is missing
	if [[ $2 =~ ^[0-9.]+$ ]]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; else echo "—"; fi
}
pcpu() { if [[ $(cat "$tmp/$1.time") == skipped ]]; then echo skipped; else cpu "$1"; fi; }

# 1. the default job
run def "$tmp/control" --out="$tmp/o-def"
peer def-peer torch_e2e.py --threads 1 --out "$tmp/p-def"
[[ -n $old_label ]] && run def-old "$tmp/old/control" --out="$tmp/o-def-old"
# 2. 20,000 tables, N = 50, jem
run t20k "$tmp/control" --tables=20000 --samples=50 --methods=jem --out="$tmp/o-20k"
peer t20k-peer torch_e2e.py --tables 20000 --n 50 --threads 1 --out "$tmp/p-20k"
[[ -n $old_label ]] && run t20k-old "$tmp/old/control" --tables=20000 --samples=50 --methods=jem --out="$tmp/o-20k-old"
# 3. throughput
run thr-lo "$tmp/control" --tables=40000 --methods=baseline,jem --write_samples=false --out="$tmp/o-thr-lo"
JEMCHECK_CPUPROFILE="$tmp/thr.prof" run thr "$tmp/control" --tables="$tables" --methods=baseline,jem --write_samples=false --out="$tmp/o-thr"
peer thr-peer torch_e2e.py --tables "$tables" --no_samples --threads 1 --out "$tmp/p-thr"
echo "bench-e2e: BenchmarkTable2x2/jem (training alone)" >&2
train_rate=$(GOMAXPROCS=1 taskset -c 0 "$tmp/kernel.test" -test.run '^$' -test.bench '^BenchmarkTable2x2$/^jem' -test.benchtime 3x 2>&1 |
	awk '/^Benchmark/ { for (i = 2; i <= NF; i++) if ($i == "runs/cpu_s") print $(i-1) }')
# 4. the SGLD job
JEMCHECK_CPUPROFILE="$tmp/sgld.prof" run sgld "$tmp/control" --task=gmm:3,2 --tables=256 --steps=200 --methods=sgld --out="$tmp/o-sgld"
peer sgld-peer torch_sgld.py --runs 256 --steps 200 --threads 1
# 5. memory (both cores)
for n in 20000 200000; do
	echo "bench-e2e: regress $n" >&2
	/usr/bin/time -f "%U %S %M %e" -o "$tmp/regress$n.time" "$tmp/regress" --tables=$n --write_samples=false --out="$tmp/r$n" >"$tmp/regress$n.log" 2>&1 || true # exit 1: the claim failed, still measured
done

# share RE PROFILE: CPU seconds and share of the profile's samples under functions matching RE.
share() {
	go tool pprof -focus="$1" -top -nodecount=1000000 -nodefraction=0 -edgefraction=0 "$tmp/control" "$2" 2>/dev/null |
		sed -n 's/^Showing nodes accounting for \([^,]*\), \([0-9.]*%\) of .*/\1 (\2)/p'
}
paths=(
	"generate|\\(\\*source\\)\\.Truth\$|GenerateBlock"
	"sample|\\(\\*source\\)\\.Sample\$"
	"train|\\(\\*source\\)\\.Train\$|kernel\\.(Train|trainRuns)|\\(\\*source\\)\\.Train\\.func|table\\.blockExpected"
	"of which the sampler's distribution (2-D)|plane\\.measureSamplerDist"
	"evaluate|\\(\\*source\\)\\.Evaluate"
	"of which the promises (2-D)|plane\\.\\(\\*source\\)\\.promises"
	"aggregate and verdict|pointCombineFn|verdict\\."
	"write (Parquet, JSON)|stages\\.\\(\\*write|asyncWrite|schemas\\.(Write|Encode)"
	"report|stages\\.\\(\\*reportFn\\)|stages/render\\."
)

ts=$(date -u +%Y-%m-%d)
{
	echo "<!-- bench-e2e:begin: generated by scripts/bench-e2e.sh; do not edit by hand -->"
	echo "\`scripts/bench-e2e.sh\`, $ts, $(nproc)-core machine, every job and peer on one core (taskset -c 0), CPU = user+sys seconds;"
	echo "the peers of ../shared/peers ran in the same run (a shared machine moves both sides by ±10–30%: compare the ratios of one run)."
	echo
	if [[ -n $old_label ]]; then
		echo "| job | jemcheck CPU s | peer CPU s | jemcheck / peer | $old_label CPU s | jemcheck / $old_label | jemcheck peak RSS MB |"
		echo "|---|---|---|---|---|---|---|"
	else
		echo "| job | jemcheck CPU s | peer CPU s | jemcheck / peer | jemcheck peak RSS MB |"
		echo "|---|---|---|---|---|"
	fi
	row() { # label, name, target
		local j p
		j=$(cpu "$2")
		p=$(pcpu "$2-peer")
		if [[ -n $old_label && -f $tmp/$2-old.time ]]; then
			echo "| $1 | $j | $p | **$(ratio "$j" "$p")** (target $3) | $(cpu "$2-old") | $(ratio "$j" "$(cpu "$2-old")") | $(rss "$2") |"
		elif [[ -n $old_label ]]; then
			echo "| $1 | $j | $p | **$(ratio "$j" "$p")** (target $3) | — | — | $(rss "$2") |"
		else
			echo "| $1 | $j | $p | **$(ratio "$j" "$p")** (target $3) | $(rss "$2") |"
		fi
	}
	row "\`control\` (defaults: 1,000 tables × 3 methods, samples) vs \`torch_e2e.py\`" def "≤ 0.3×"
	row "\`control --tables=20000 --samples=50 --methods=jem\` vs \`torch_e2e.py --tables 20000 --n 50\`" t20k "≤ 0.3×"
	row "\`control --tables=$tables --methods=baseline,jem --write_samples=false\` vs \`torch_e2e.py --no_samples\`" thr "≤ 0.3×"
	row "\`control --task=gmm:3,2 --tables=256 --steps=200 --methods=sgld\` vs \`torch_sgld.py --runs 256 --steps 200\`" sgld "≤ 0.5×"
	echo
	lo=$(cpu thr-lo)
	hi=$(cpu thr)
	awk -v lo="$lo" -v hi="$hi" -v n="$tables" -v tr="$train_rate" 'BEGIN {
		m = 2 * (n - 40000) / (hi - lo)
		printf "Marginal throughput of the whole pipeline (2×2 tables × {baseline, jem}, no sample files): %.0f runs per CPU-second ", m
		printf "(%d → %d tables: %.2f → %.2f CPU s); training alone (`BenchmarkTable2x2/jem`, one core) %.0f runs per CPU-second: ", 40000, n, lo, hi, tr
		printf "training alone is **%.2f×** the pipeline'\''s marginal rate (target ≤ 2×).\n", tr / m
	}'
	echo
	awk -v a="$(rss regress20000)" -v b="$(rss regress200000)" 'BEGIN {
		printf "Memory: `regress --write_samples=false` (both cores) peaks at %d MB at 20,000 tables and %d MB at 200,000 (**%.2f×**; targets ≤ 800 MB and ≤ 2×).\n", a, b, b / a }'
	echo
	echo "Where the CPU goes (\`go tool pprof -focus\` on \`JEMCHECK_CPUPROFILE\` profiles of the same run; a path's time includes the allocation and GC assist it causes; rest: Beam/prism, coders, the background GC):"
	echo
	echo "| path | $tables tables × {baseline, jem}, no samples | SGLD job (gmm:3,2, 256 tasks, 200 steps) |"
	echo "|---|---|---|"
	for p in "${paths[@]}"; do
		label=${p%%|*}
		re=${p#*|}
		echo "| $label | $(share "$re" "$tmp/thr.prof") | $(share "$re" "$tmp/sgld.prof") |"
	done
	echo "| total profiled | $(go tool pprof -top -nodecount=1 "$tmp/control" "$tmp/thr.prof" 2>/dev/null | sed -n 's/.*Total samples = \([^ ]*\).*/\1/p') | $(go tool pprof -top -nodecount=1 "$tmp/control" "$tmp/sgld.prof" 2>/dev/null | sed -n 's/.*Total samples = \([^ ]*\).*/\1/p') |"
	echo "<!-- bench-e2e:end -->"
} >"$tmp/out.md"
cat "$tmp/out.md"
if [[ $write_docs == 1 ]]; then
	doc=docs/performance.md
	grep -q '<!-- bench-e2e:begin' "$doc" || { echo "bench-e2e: $doc has no bench-e2e block" >&2; exit 1; }
	awk -v f="$tmp/out.md" '
		/<!-- bench-e2e:begin/ { while ((getline l < f) > 0) print l; skip = 1; next }
		/<!-- bench-e2e:end -->/ { skip = 0; next }
		!skip { print }' "$doc" >"$tmp/doc.md"
	cat "$tmp/doc.md" >"$doc"
	echo "bench-e2e: wrote $doc" >&2
fi
