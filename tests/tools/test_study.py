#!/usr/bin/env python3
"""tools/book_site/study.py, the part of tools/study_results and tools/study_lab07 that runs the
benches and saves their data: the saved data is replaced only when every bench succeeded.

Runs with the standard library only: python3 tests/tools/test_study.py
"""
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "book_site"))
import study  # noqa: E402

# A stand-in for speclab: writes a CSV where --csv says, like `speclab bench`, or fails when the
# environment names the run (by its CSV file name) that should fail.
FAKE = """#!/usr/bin/env python3
import os, sys
args = sys.argv[1:]
csv = args[args.index("--csv") + 1]
if os.environ.get("ARGS_LOG"):
    with open(os.environ["ARGS_LOG"], "a") as log:
        log.write(" ".join(args) + "\\n")
if os.path.basename(csv) == os.environ.get("FAIL_RUN"):
    sys.exit("bench: failed on purpose")
if "--tokens" in args:  # a further file the bench writes, as speclab bench --tokens does
    with open(args[args.index("--tokens") + 1], "w") as f:
        f.write("tokens of " + os.path.basename(csv) + "\\n")
trips = os.environ.get("TRIPS", "80.5,84.25").split(",")
with open(csv, "w") as f:
    f.write("workload,drafter,tokens_per_run,core_round_trip_ns_min,core_round_trip_ns_max\\n")
    f.write(f"w,d,2.5,{trips[0]},{trips[1]}\\n")
"""


class RunBenches(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.fake = root / "speclab"
        self.fake.write_text(FAKE)
        self.fake.chmod(0o755)
        self.data = root / "study" / "results"
        self.data.mkdir(parents=True)
        # Data saved by an earlier run, which a failed run must leave exactly as it was.
        (self.data / "al.csv").write_text("old al\n")
        (self.data / "speed.csv").write_text("old speed\n")
        (self.data / "meta.json").write_text('{"date": "old"}\n')
        self.runs = {"al": ["--drafter", "all"], "speed": ["--k", "5"]}
        self.env = dict(os.environ)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)
        self.tmp.cleanup()

    def saved(self):
        return {p.name: p.read_text() for p in sorted(self.data.iterdir())}

    def leftovers(self):
        return [p.name for p in self.data.parent.iterdir() if p.name.startswith(".")]

    def test_every_bench_succeeds_and_the_data_is_replaced(self):
        study.run_benches(self.fake, self.runs, self.data, 2, None)
        files = self.saved()
        self.assertEqual(sorted(files), ["al.csv", "meta.json", "speed.csv"])
        self.assertIn("w,d,2.5", files["al.csv"])
        self.assertIn("w,d,2.5", files["speed.csv"])
        meta = json.loads(files["meta.json"])
        self.assertEqual(meta["threads"], 2)
        self.assertEqual(meta["lab_impl"], "solution")
        self.assertEqual(meta["core_round_trip_ns"], [80.5, 84.25])
        self.assertEqual(self.leftovers(), [])

    def test_a_failed_bench_leaves_the_saved_data_as_it_was(self):
        before = self.saved()
        os.environ["FAIL_RUN"] = "speed.csv"  # the second run fails, after the first succeeded
        with self.assertRaises(SystemExit) as stop:
            study.run_benches(self.fake, self.runs, self.data, 2, None)
        self.assertIn("the bench for 'speed' failed", str(stop.exception.code))
        self.assertEqual(self.saved(), before)
        self.assertEqual(self.leftovers(), [], "the temporary folder was left behind")

    def test_a_missing_binary_is_named_and_nothing_changes(self):
        before = self.saved()
        with self.assertRaises(SystemExit) as stop:
            study.run_benches(self.data.parent / "no-such-speclab", self.runs, self.data, 2, None)
        self.assertIn("no-such-speclab is missing", str(stop.exception.code))
        self.assertEqual(self.saved(), before)

    def test_round_trips_not_measured_are_left_out_of_the_meta(self):
        os.environ["TRIPS"] = ","  # a bench confined to one CPU writes empty fields
        study.run_benches(self.fake, self.runs, self.data, 1, "starter")
        meta = json.loads((self.data / "meta.json").read_text())
        self.assertNotIn("core_round_trip_ns", meta)
        self.assertEqual(meta["lab_impl"], "starter")

    def test_a_further_file_of_a_bench_is_saved_beside_its_csv(self):
        log = Path(self.tmp.name) / "args.log"
        os.environ["ARGS_LOG"] = str(log)
        runs = {"speed": ["--k", "16", "--tokens", "@tokens.jsonl"]}
        study.run_benches(self.fake, runs, self.data, 2, None)
        self.assertEqual((self.data / "tokens.jsonl").read_text(), "tokens of speed.csv\n")
        self.assertNotIn("@", log.read_text(), "the bench was given '@tokens.jsonl' as it is")
        self.assertEqual(self.leftovers(), [])

    def test_a_tool_runs_after_the_benches_and_its_output_is_saved(self):
        seen = []

        def reader(folder, threads, speclab):
            seen.append((sorted(p.name for p in folder.iterdir()), threads, speclab))
            return [sys.executable, "-c", f"print(open({str(folder / 'tokens.jsonl')!r}).read()"
                                          ".upper(), end='')"]

        runs = {"speed": ["--tokens", "@tokens.jsonl"]}
        study.run_benches(self.fake, runs, self.data, 3, None, tools={"cost.json": reader})
        self.assertEqual(seen, [(["speed.csv", "tokens.jsonl"], 3, self.fake)])
        self.assertEqual((self.data / "cost.json").read_text(), "TOKENS OF SPEED.CSV\n")
        self.assertTrue((self.data / "tokens.jsonl").is_file())
        self.assertEqual(self.leftovers(), [])

    def test_a_failed_tool_leaves_the_saved_data_as_it_was(self):
        before = self.saved()
        runs = {"speed": ["--tokens", "@tokens.jsonl"]}
        with self.assertRaises(SystemExit) as stop:
            study.run_benches(self.fake, runs, self.data, 2, None, tools={
                "cost.json": lambda folder, threads, speclab: [sys.executable, "-c",
                                                               "raise SystemExit(3)"]})
        self.assertIn("for cost.json failed", str(stop.exception.code))
        self.assertEqual(self.saved(), before)
        self.assertEqual(self.leftovers(), [])

    def test_the_device_reaches_every_bench_and_the_meta(self):
        log = Path(self.tmp.name) / "args.log"
        os.environ["ARGS_LOG"] = str(log)
        study.run_benches(self.fake, self.runs, self.data, 2, None, device="cuda")
        calls = log.read_text().splitlines()
        self.assertEqual(len(calls), 2)
        for call in calls:
            self.assertIn("--device cuda", call)
        meta = json.loads((self.data / "meta.json").read_text())
        self.assertEqual(meta["device"], "cuda")
        self.assertIn("; host ", meta["machine"])  # the GPU, then the CPU that drives it
        log.unlink()
        study.run_benches(self.fake, self.runs, self.data, 2, None)
        self.assertTrue(all("--device cpu" in c for c in log.read_text().splitlines()))
        self.assertEqual(json.loads((self.data / "meta.json").read_text())["device"], "cpu")


class MalformedData(unittest.TestCase):
    """A broken saved file is named, not a traceback (JSONDecodeError, KeyError)."""

    def test_a_meta_file_that_is_not_json_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "meta.json").write_text("{ not json", encoding="utf-8")
            with self.assertRaises(SystemExit) as e:
                study.read_meta(Path(tmp))
            self.assertIn("meta.json is not valid JSON", str(e.exception.code))

    def test_an_empty_bin_is_a_usage_error(self):
        import subprocess
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "study_results"), "run",
                            "--bin", ""], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--bin '': give the speclab binary", p.stderr)

    def test_a_cost_curve_with_a_bad_header_or_row_is_named(self):
        import importlib.machinery
        import importlib.util
        loader = importlib.machinery.SourceFileLoader("cost_tables",
                                                      str(ROOT / "tools" / "cost_tables"))
        tables = importlib.util.module_from_spec(importlib.util.spec_from_loader("cost_tables",
                                                                                 loader))
        loader.exec_module(tables)
        with tempfile.TemporaryDirectory() as tmp:
            tables.CURVES = Path(tmp)
            for text, message in (("# c\nbatch,k,seconds\n1,0,0.1\n", "has no column 'b'"),
                                  ("b,k,seconds\n1,0,0.1\n4,x,0.2\n", "the row '4,x,0.2' is not a whole b"),
                                  ("b,k,seconds\n1,0\n", "the row '1,0' is not a whole b")):
                with self.subTest(text=text):
                    Path(tmp, "c.csv").write_text(text, encoding="utf-8")
                    with self.assertRaises(SystemExit) as e:
                        tables.read_curve("c")
                    self.assertIn(message, str(e.exception.code))


class RoundTripText(unittest.TestCase):
    def test_the_meta_line_names_the_range_or_nothing(self):
        self.assertEqual(study.round_trip_text({}), "")
        self.assertEqual(study.round_trip_text({"core_round_trip_ns": [79.7, 83.6]}),
                         ", cross-core round trip 80 to 84 ns")
        self.assertEqual(study.round_trip_text({"core_round_trip_ns": [371.2, 371.4]}),
                         ", cross-core round trip 371 ns")


if __name__ == "__main__":
    unittest.main(verbosity=2)
