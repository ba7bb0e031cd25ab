#!/usr/bin/env python3
"""Print the README's tables from a run's summary.json (standard library only).

    scripts/summary-table.py kl OUT...        joint / marginal / conditional KL per point and method
    scripts/summary-table.py promises OUT...  OOD AUROCs, calibration, robustness, samples
    scripts/summary-table.py samplers OUT...  each sampler against exact JEM (excess with its 95% CI)
    scripts/summary-table.py ladder OUT...    the dimension ladder: per method, against D, the joint excess
                                              KL over exact JEM [95% CI] (q(x) part), accuracy (Bayes),
                                              AUROC of log q(x) (true p(x)'s) and CPU ms per run
    scripts/summary-table.py ladder_compact OUT...  the same, the excess [95% CI] and CPU ms per run only

On a point without exact JEM (image kinds: no method has an exact joint KL) the ladder gives
instead the mean lower bound on the joint KL from forward AIS over the tasks whose AIS
calibration was accepted (k of n), q(x)'s part's lower bound (kl_joint_lower − kl_conditional),
the conditional KL, and (not compact) the ECE and the AIS's ESS; report.html adds their 95% CIs.

OUT is a run's --out folder (or its summary.json). Means over the converged runs; the
median in brackets where it says so.
"""
import json
import os
import sys


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "summary.json")
    with open(path) as f:
        return json.load(f)


def point_name(p):
    g = p["params"]
    name = g.get("task") or "table"
    if name == "table":
        name = "%dx%d %s" % (g["x_values"], g["classes"], g["model"])
    return name


def method_name(p, m):
    g = p["params"]
    if m == "sgld":
        std = g.get("sgld_std") or (0.01 if g.get("sgld_preset") != "langevin" else (2 * g["sgld_lr"]) ** 0.5)
        return "sgld %s lr %g std %.3g, %d steps" % (g["sgld_preset"], g["sgld_lr"], std, g["sgld_steps"])
    if m == "pcd":
        return "pcd %s, %d MH steps" % (g["proposal"], g["chain_steps"])
    return m


def f(v, d=3):
    if v is None:
        return "—"
    return "%.*g" % (d, v)


def mean(ms, key):
    d = ms.get(key) or {}
    return d.get("mean") if d.get("count") else None


def kl(summaries):
    print("| task | method | runs (diverged) | joint KL mean (median) | marginal | conditional | accuracy (Bayes) | reference's remaining gap | ms/step |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in summaries:
        for p in s["points"]:
            steps = p["params"]["steps"]
            for m in p["methods"]:
                j = m["kl_joint"]
                ms = mean(m, "train_ms")
                print("| %s | %s | %d (%d) | %s (%s) | %s | %s | %s (%s) | %s | %s |" % (
                    point_name(p), method_name(p, m["method"]), m["runs"], m["diverged"], f(j.get("mean")), f(j.get("median")),
                    f(mean(m, "kl_marginal")), f(mean(m, "kl_conditional")), f(mean(m, "accuracy")), f(mean(m, "bayes_accuracy")),
                    f(mean(m, "ref_gap")), f(ms / steps if ms else None)))


def promises(summaries):
    print("| task | method | AUROC log q(x) | max q(y\\|x) | −‖∇ log q(x)‖ | true p(x) | ECE | exact cal. error | acc clean | attacked | purified | Bayes at purified | samples TV |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in summaries:
        for p in s["points"]:
            for m in p["methods"]:
                print("| %s | %s | %s |" % (point_name(p), method_name(p, m["method"]), " | ".join(f(mean(m, k)) for k in (
                    "auroc_px", "auroc_py", "auroc_pxgrad", "auroc_true_px", "ece", "calibration_error_true", "acc_clean",
                    "acc_attacked", "acc_purified", "acc_bayes_purified", "samples_tv_noise"))))


def samplers(summaries):
    print("| task | sampler | pairs (excluded) | exact JEM KL | sampler KL | excess [95% CI] | of it q(x) | worse on | Wilcoxon p |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in summaries:
        for p in s["points"]:
            for c in p.get("samplers") or []:
                print("| %s | %s | %d (%d) | %s | %s | %s [%s, %s] | %s | %s%% | %s |" % (
                    point_name(p), method_name(p, c["method"]), c["pairs"], c["excluded_pairs"], f(c["mean_kl_joint_exact"]),
                    f(c["mean_kl_joint_sampler"]), f(c["excess"]), f(c["excess_ci_low"]), f(c["excess_ci_high"]),
                    f(c["marginal_excess"]), f(100 * c["worse_share"], 3) if c["worse_share"] is not None else "—",
                    f(c["wilcoxon_p"], 2)))


def ladder_compact(summaries):
    ladder(summaries, compact=True)


def dimension(p):
    """The dimension D of a point's task: summary.json's (its kind's), else for a summary
    written before it bits:D,K, blocks:B,... (D = 2B), a 2-D task (2)."""
    if p.get("dimension"):
        return p["dimension"]
    task = p["params"].get("task") or "table"
    kind, _, arg = task.partition(":")
    if kind == "bits":
        return int(arg.split(",")[0])
    if kind == "blocks":
        return 2 * int(arg.split(",")[0])
    return 2


def ladder(summaries, compact=False):
    cells = {}  # method name -> D -> text
    ds = set()
    for s in summaries:
        for p in s["points"]:
            d = dimension(p)
            ds.add(d)
            exact = {m["method"]: m for m in p["methods"]}
            sampler = {c["method"]: c for c in p.get("samplers") or []}
            for m in p["methods"]:
                name = method_name(p, m["method"])
                if m["method"] != "pcd" and p["params"].get("proposal") not in (None, "", "uniform"):
                    continue  # the other methods of a second proposal's point repeat the first's
                c = sampler.get(m["method"])
                if c:
                    head = "+%s [%s, %s] (q(x) %s)" % (f(c["excess"], 2), f(c["excess_ci_low"], 2), f(c["excess_ci_high"], 2), f(c["marginal_excess"], 2))
                    if compact:
                        head = "+%s [%s, %s]" % (f(c["excess"], 2), f(c["excess_ci_low"], 2), f(c["excess_ci_high"], 2))
                elif not m["kl_joint"].get("count") and (m.get("ais_accepted") or {}).get("count"):
                    a = m["ais_accepted"]  # no exact JEM: the joint KL's lower bound
                    head = "KL ≥ %s (%d of %d accepted; q(x) ≥ %s); KL(y\\|x) %s" % (
                        f(mean(m, "kl_joint_lower")), round(a["mean"] * a["count"]), a["count"],
                        f(mean(m, "kl_marginal_lower")), f(mean(m, "kl_conditional"), 2))
                    if not compact:
                        head += "; ECE %s; ESS %s" % (f(mean(m, "ece"), 2), f(mean(m, "ais_ess"), 2))
                else:
                    head = "KL %s" % f(m["kl_joint"].get("mean"), 2)
                ms = mean(m, "train_ms")
                if compact:
                    cells.setdefault(name, {})[d] = "%s; %s ms" % (head, f(ms, 2) if ms else "—")
                else:
                    cells.setdefault(name, {})[d] = "%s; acc %s (%s); AUROC %s (%s); %s ms" % (
                        head, f(mean(m, "accuracy"), 3), f(mean(m, "bayes_accuracy"), 3), f(mean(m, "auroc_px"), 2),
                        f(mean(m, "auroc_true_px"), 2), f(ms, 2) if ms else "—")
    ds = sorted(ds)
    print("| method | " + " | ".join("D = %d" % d for d in ds) + " |")
    print("|---|" + "---|" * len(ds))
    for name, row in cells.items():
        print("| %s | %s |" % (name, " | ".join(row.get(d, "—") for d in ds)))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("kl", "promises", "samplers", "ladder", "ladder_compact"):
        sys.exit(__doc__)
    globals()[sys.argv[1]]([load(p) for p in sys.argv[2:]])
