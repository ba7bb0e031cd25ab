"""Tests of the jemcheck Python client.

    PYTHONPATH=python /usr/bin/python3 -m unittest discover -s python/tests -v

The hand-made cases run anywhere; with JEMCHECK_TEST_EXPORT (an export written with
--csv) and JEMCHECK_TEST_RUN (evaluate's --out on it) the client is also checked on
jemcheck's own files, as examples/ TestPythonClient runs it.
"""

import json
import math
import os
import tempfile
import unittest

import numpy as np
import pandas as pd

import jemcheck


def tiny_export(d, with_new_fields=True):
    """A 2-D export of 2 tasks, 2 classes, a 2×2 grid over [−1, 1]², 4 draws a task."""
    os.makedirs(os.path.join(d, "samples"))
    os.makedirs(os.path.join(d, "points"))
    pd.DataFrame({"task_id": [0, 0, 0, 0, 1, 1, 1, 1], "x0": [-.5, .5, -.5, .5] * 2, "x1": [-.5, -.5, .5, .5] * 2,
                  "y": [0, 1, 0, 1] * 2}).to_csv(os.path.join(d, "samples/point-0000-part-00000.csv"), index=False)
    pd.DataFrame({"cell": [0, 1, 2, 3], "x0": [-.5, -.5, .5, .5], "x1": [-.5, .5, -.5, .5]}).to_csv(
        os.path.join(d, "points/point-0000.csv"), index=False)
    ep = {"point_id": 0, "kind": "plane", "task": "gmm:2,1", "classes": 2, "dimension": 2, "samples": 4, "tasks": 2,
          "ids": [0, 1], "id_column": "task_id", "support_column": "cell", "support": 4, "columns": ["x0", "x1"],
          "about": "", "grid": 2, "box": 1, "model": "mlp:8",
          "files": {"samples": ["samples/point-0000-part-00000.parquet"], "points": "points/point-0000.parquet",
                    "truth": ""}}
    if with_new_fields:
        ep.update({"bounds": [[-1, 1], [-1, 1]], "label_column": "y",
                   "logits": {"columns": ["task_id", "cell", "y", "logit"], "class_column": "y",
                              "logit_column": "logit", "model_column": "model"}})
        ep["files"].update({"samples_columns": ["task_id", "x0", "x1", "y"], "points_columns": ["cell", "x0", "x1"],
                            "samples_csv": ["samples/point-0000-part-00000.csv"], "points_csv": "points/point-0000.csv"})
    with open(os.path.join(d, "export.json"), "w") as f:
        json.dump({"format": "jemcheck-export/1", "config": "config.json", "points": [ep]}, f)


class TestExport(unittest.TestCase):
    def test_load(self):
        for new in (True, False):  # export.json with and without the named columns and bounds
            with self.subTest(new_fields=new), tempfile.TemporaryDirectory() as d:
                tiny_export(d, new)
                p = jemcheck.load_export(d).point
                self.assertEqual(p.bounds, [[-1, 1], [-1, 1]])
                self.assertEqual(p.logit_columns, ["task_id", "cell", "y", "logit"])
                self.assertEqual(p.coordinates, ["x0", "x1"])
                self.assertEqual(len(p.samples), 8)
                self.assertEqual(list(p.points.columns), ["cell", "x0", "x1"])
                self.assertIsNone(p.truth)

    def test_missing_csv(self):
        with tempfile.TemporaryDirectory() as d:
            tiny_export(d)
            os.remove(os.path.join(d, "points/point-0000.csv"))
            with self.assertRaisesRegex(FileNotFoundError, "--csv"):
                jemcheck.load_export(d)


class TestWriteLogits(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        tiny_export(self.dir.name)
        self.p = jemcheck.load_export(self.dir.name).point
        self.out = os.path.join(self.dir.name, "logits.csv")

    def tearDown(self):
        self.dir.cleanup()

    def test_arrays(self):
        a = np.arange(8, dtype=float).reshape(4, 2)
        a[3, 1] = -math.inf  # a point of zero mass is allowed
        jemcheck.write_logits({0: a, 1: a}, self.out, point=self.p, model="mine")
        df = pd.read_csv(self.out)
        self.assertEqual(list(df.columns), ["task_id", "cell", "y", "logit", "model"])
        self.assertEqual(len(df), 16)
        row = df[(df.task_id == 1) & (df.cell == 2) & (df.y == 1)]
        self.assertEqual(row.logit.item(), 5.0)
        self.assertTrue(np.isneginf(df.logit).sum() == 2)

    def test_frame_roundtrip(self):
        df = pd.DataFrame({"task_id": [0] * 8, "cell": np.repeat(np.arange(4), 2), "y": [0, 1] * 4,
                           "logit": np.linspace(-1, 1, 8) / 3, "extra": 1})
        jemcheck.write_logits(df, self.out, point=self.p)
        back = pd.read_csv(self.out, **jemcheck.export.ROUND_TRIP)
        self.assertEqual(list(back.columns), ["task_id", "cell", "y", "logit"])
        np.testing.assert_array_equal(back.logit.to_numpy(), df.logit.to_numpy())  # every digit kept

    def test_refused(self):
        good = np.zeros((4, 2))
        for name, data, want in [
            ("nan", {0: np.full((4, 2), np.nan)}, "NaN"),
            ("+inf", {0: np.full((4, 2), np.inf)}, "Inf"),
            ("shape", {0: np.zeros((3, 2))}, "shape"),
        ]:
            with self.subTest(name):
                with self.assertRaisesRegex(ValueError, want):
                    jemcheck.write_logits(data, self.out, point=self.p)
        df = jemcheck.write_logits({0: good}, self.out, point=self.p)
        with self.assertRaisesRegex(ValueError, "twice"):
            jemcheck.write_logits(pd.concat([df, df.head(1)]), self.out, point=self.p)
        with self.assertRaisesRegex(ValueError, "support × classes"):
            jemcheck.write_logits(df.iloc[1:], self.out, point=self.p)
        with self.assertRaisesRegex(ValueError, "missing columns"):
            jemcheck.write_logits(df.drop(columns="logit"), self.out, point=self.p)


class TestSummary(unittest.TestCase):
    def test_tidy(self):
        s = {"pipeline": "evaluate", "points": [{"point_id": 0, "params": {"task": "gmm:2,2"},
             "methods": [{"method": "jem", "runs": 3, "diverged": 0, "kl_joint": {"mean": 0.5, "median": None}},
                         {"method": "external:m", "runs": 3, "diverged": 0, "unstable": 1, "kl_joint": {"mean": 0.7}}],
             "samplers": [{"method": "external:m", "pairs": 3, "excess": 0.2, "excess_ci_low": 0.1,
                           "excess_ci_high": None, "grade": "within_1_nat", "rank": 1, "unstable": 1}],
             "verdict": {"holds": False, "decided": False}}]}
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "summary.json"), "w") as f:
                json.dump(s, f)
            df = jemcheck.read_summary(d)
        self.assertEqual(list(df.method), ["jem", "external:m"])
        m = df.set_index("method")
        self.assertEqual(m.loc["external:m", "excess"], 0.2)
        self.assertTrue(math.isnan(m.loc["external:m", "excess_ci_high"]))  # null is NaN, never 0
        self.assertTrue(math.isnan(m.loc["jem", "kl_joint_median"]))
        self.assertEqual(m.loc["external:m", "grade"], "within_1_nat")
        self.assertEqual(m.loc["external:m", "rank"], 1)
        self.assertEqual(m.loc["external:m", "unstable"], 1)
        self.assertTrue(pd.isna(m.loc["jem", "rank"]))
        self.assertIn("{run}/results/*.parquet", jemcheck.RESULTS_QUERY)


@unittest.skipUnless(os.environ.get("JEMCHECK_TEST_EXPORT"), "needs JEMCHECK_TEST_EXPORT (examples/ TestPythonClient)")
class TestRealExport(unittest.TestCase):
    """jemcheck's own export (--csv) and an evaluate run on it."""

    def test_export(self):
        ex = jemcheck.load_export(os.environ["JEMCHECK_TEST_EXPORT"])
        for p in ex.points:
            meta = p.meta
            self.assertEqual(list(p.samples.columns), meta["files"]["samples_columns"])
            self.assertEqual(list(p.points.columns), meta["files"]["points_columns"])
            self.assertEqual(list(p.truth.columns), meta["files"]["truth_columns"])
            self.assertEqual(len(p.samples), meta["tasks"] * meta["samples"])
            self.assertEqual(sorted(p.samples[p.id_column].unique()), sorted(p.ids))
            self.assertTrue(set(p.samples[p.label_column]) <= set(range(p.classes)))
            if p.kind in ("plane", "blocks"):
                self.assertEqual(p.bounds, [[-meta["box"], meta["box"]]] * p.dimension)
                for c in ("x0", "x1"):
                    self.assertTrue(p.points[c].between(-meta["box"], meta["box"]).all())
            self.assertEqual(p.truth.groupby(p.id_column)["p"].sum().round(9).tolist(), [1.0] * len(p.ids))
        self.assertIn("points", ex.config)

    @unittest.skipUnless(os.environ.get("JEMCHECK_TEST_RUN"), "needs JEMCHECK_TEST_RUN")
    def test_summary(self):
        df = jemcheck.read_summary(os.environ["JEMCHECK_TEST_RUN"])
        ext = df[df.method.str.startswith("external:")]
        self.assertEqual(len(ext), 1, df)
        r = ext.iloc[0]
        self.assertTrue(math.isfinite(r.kl_joint) and math.isfinite(r.excess))
        self.assertLessEqual(r.excess_ci_low, r.excess)
        self.assertLessEqual(r.excess, r.excess_ci_high)
        self.assertIn("jem", set(df.method))


if __name__ == "__main__":
    unittest.main()
