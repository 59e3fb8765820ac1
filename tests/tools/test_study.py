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


def load_study_results(name="study_results"):
    """tools/study_results (or tools/NAME) as a module (it has no .py), to call its renderers on
    test data."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader(name, str(ROOT / "tools" / name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def check_named(test, cases, renderers, restore):
    """Each case (files, where, what) writes `files` (test.write's keywords); then one of the
    `renderers` must exit with a message holding `where` (the file) and `what` (the problem).
    `restore()` puts the good files back after each case."""
    for files, where, what in cases:
        with test.subTest(files=files):
            test.write(**files)
            for render in renderers:
                try:
                    render()
                except SystemExit as e:
                    test.assertIn(where, str(e.code))
                    test.assertIn(what, str(e.code))
                    break
            else:
                test.fail("no renderer stopped")
            restore()


# A saved ceiling run worked out by hand: one turn, a decode step of 1 ms, a prefill of 1 ms a
# token, and a verify pass over d + 1 tokens of c(d) = 1 + d / 2 steps, d = 1..16. The prompt is
# 1..9 and the reply 1..6 then 100: plain, 8 prefilled tokens (the last prompt token is fed by
# the first step) and 7 steps, 15 ms, of which prefill is 53%. sa at every k: two plain steps
# (9 is new, "1" is shorter than the min match 2), then "1 2" drafts 3 4 5 6 for c(4) = 3 with
# 100 from the pass: 5 ms, 15 / 13 = 1.15x. copy at k = 5: 1..5 for c(5) = 3.5 and a plain step,
# 4.5 ms, 15 / 12.5 = 1.20x; at k = 8 and 16: 1..6 for c(6) = 4, 15 / 12 = 1.25x.
CEILING_TURN = {"workload": "w", "id": "a", "turn": 1, "prompt": list(range(1, 10)),
                "reply": [1, 2, 3, 4, 5, 6, 100]}
CEILING_COST = {"decode_step_ms": 1.0, "prefill_tokens_per_s": 1000.0, "prompt_tokens": 10,
                "kernel": "test", "threads": 2,
                "verify": [{"k": k, "relative_to_decode": 1 + k / 2} for k in range(1, 17)]}
CEILING_META = {"date": "2026-01-02", "machine": "a test CPU", "threads": 2, "minutes": 0.9}
CEILING_SPEED = ("workload,drafter,k,sa_draft_ratio,repeats,max_new_tokens,speedup_median\n"
                 "w,sa,16,2,5,64,1.0712\n")


class CeilingTable(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.data = Path(self.tmp.name)
        self.write()
        self.sr = load_study_results()
        self.sr.DATA_CEILING = self.data
        self.sr.CEILING_WORKLOADS = ["w"]

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, tokens=None, cost=None, meta=None, speed=None):
        files = {"tokens.jsonl": tokens if tokens is not None else json.dumps(CEILING_TURN) + "\n",
                 "cost.json": cost if cost is not None else json.dumps(CEILING_COST),
                 "meta.json": meta if meta is not None else json.dumps(CEILING_META),
                 "speed.csv": speed if speed is not None else CEILING_SPEED}
        for name, text in files.items():
            target = self.data / name
            if isinstance(text, bytes):
                target.write_bytes(text)
            else:
                target.write_text(text, encoding="utf-8")

    def test_the_table_as_worked_out_by_hand(self):
        rows = self.sr.render_ceiling().splitlines()
        self.assertEqual(rows[2], "| w | 53% | 1.15× / 1.15× / 1.15× | 1.20× / 1.25× / "
                                  "1.25× | 1.07× |")
        self.assertEqual(len(rows), 3)

    def test_the_caption_names_the_costs_and_the_run(self):
        text = self.sr.render_ceiling_meta()
        for needle in ("Measured 2026-01-02 on a test CPU", "a decode step of 1.0 ms",
                       "a 17-token verify pass of 9.0 decode steps", "a prefill of 1000 tokens/s",
                       "at a 10-token context", "2 threads", "about 1 min here",
                       "at most 64 new tokens a reply, median of 5 repeats"):
            self.assertIn(needle, text)

    def test_a_bench_other_than_the_one_the_table_names_is_refused(self):
        # The last column is headed "sa, k = 16, ratio 2": a saved bench of anything else would
        # put its speedups under that name.
        for row in ("w,sa,8,2,5,64,1.0", "w,sa,16,0,5,64,1.0", "w,prompt-lookup,16,2,5,64,1.0"):
            with self.subTest(row=row):
                self.write(speed=CEILING_SPEED.splitlines()[0] + "\n" + row + "\n")
                with self.assertRaises(SystemExit) as e:
                    self.sr.render_ceiling()
                self.assertIn("speed.csv", str(e.exception.code))
                self.assertIn("not of sa at k = 16 with --sa-draft-ratio 2", str(e.exception.code))

    def test_the_mean_context_is_over_every_reply_token(self):
        # Contexts of 3 and 4 tokens for the first reply, 5 for the second: a mean of 4.
        turns = [dict(CEILING_TURN, prompt=[1, 2, 3], reply=[4, 5]),
                 dict(CEILING_TURN, id="b", prompt=[1, 2, 3, 4, 5], reply=[6])]
        self.write(tokens="".join(json.dumps(t) + "\n" for t in turns))
        self.assertEqual(self.sr.mean_context(self.data / "tokens.jsonl"), 4)

    def test_bad_saved_data_is_named(self):
        bad_cost = dict(CEILING_COST)
        del bad_cost["prompt_tokens"]
        cases = [
            ({"cost": json.dumps(bad_cost)}, "cost.json", "prompt_tokens"),
            ({"cost": json.dumps(dict(CEILING_COST, verify=CEILING_COST["verify"][:8]))},
             "cost.json", "the cost curve stops at k = 8"),
            ({"tokens": "{oops\n"}, "tokens.jsonl:1", "not JSON"),
            ({"speed": "workload,drafter\nw,sa\n"}, "speed.csv", "speedup_median"),
            ({"speed": CEILING_SPEED.replace("1.0712", "fast")}, "speed.csv", "fast"),
            ({"speed": b"\xff\xfe"}, "speed.csv", "UTF-8"),
            ({"speed": CEILING_SPEED.replace("\nw,", "\nv,")}, "ceiling",
             "no replies or no bench row for workload 'w'"),
            ({"meta": "{}"}, "meta.json", "date"),
            ({"meta": "[]"}, "meta.json", "not a JSON object"),
        ]
        check_named(self, cases, (self.sr.render_ceiling, self.sr.render_ceiling_meta),
                    lambda: self.write(**{k: None for k in ("tokens", "cost", "meta", "speed")}))


# A saved speed table and its meta, for the main results renderers.
SPEED_CSV = ("workload,drafter,k,max_new_tokens,temperature,tokens_per_run,run_cost,"
             "decode_speedup,speedup_median,plain_tokens_per_s\n"
             "w,sa,5,64,0,2.5,1.25,2.0,1.8,400.4\n"
             "w,auto,5,64,0,1.5,,1.2,1.1,410\n")
AL_CSV = ("workload,drafter,tokens_per_run,tokens_per_run_turn2plus\n"
          "w,sa,2.5,\nchat,sa,1.5,2.25\n")
RESULTS_META = {"date": "2026-01-02", "machine": "a test CPU", "lab_impl": "solution",
                "threads": 2, "load_before": "0.5", "minutes": 2.2}


class ResultsTables(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.data = Path(self.tmp.name)
        self.write()
        self.sr = load_study_results()
        self.sr.DATA = self.data

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, speed=SPEED_CSV, al=AL_CSV, meta=None):
        (self.data / "speed.csv").write_text(speed, encoding="utf-8")
        (self.data / "al.csv").write_text(al, encoding="utf-8")
        (self.data / "meta.json").write_text(
            meta if meta is not None else json.dumps(RESULTS_META), encoding="utf-8")

    def test_the_tables_and_caption_from_good_data(self):
        self.assertEqual(self.sr.render_speed(self.data).splitlines()[2:],
                         ["| w | sa | 2.50 | 1.25 | 2.00× | 1.80× | 400 |",
                          "| w | auto | 1.50 | – | 1.20× | 1.10× | 410 |"])
        self.assertEqual(self.sr.render_al().splitlines()[2],
                         "| sa | 2.50 | 1.50 (2.25) |")
        text = self.sr.render_meta(self.data)
        for needle in ("Measured 2026-01-02 on a test CPU", "LAB_IMPL=solution",
                       "2 model threads", "greedy, $k = 5$, at most 64 new tokens a reply",
                       "load average 0.5", "ran at 400 to 410 tokens/s", "about 2 min here"):
            self.assertIn(needle, text)

    def test_a_sampled_run_is_not_called_greedy(self):
        self.write(speed=SPEED_CSV.replace(",64,0,", ",64,0.7,"))
        self.assertIn("temperature 0.7, $k = 5$", self.sr.render_meta(self.data))

    def test_bad_saved_data_is_named(self):
        header, *rows = SPEED_CSV.splitlines()
        cases = [
            ({"speed": header.replace(",speedup_median", "") + "\nw,sa,5,64,0,2.5,1.25,2.0,400\n"},
             "speed.csv", "speedup_median"),
            ({"speed": SPEED_CSV.replace("400.4", "fast")}, "speed.csv", "fast"),
            ({"speed": SPEED_CSV.replace("w,auto,5,64", "w,auto,8,64")}, "speed.csv",
             "the rows differ in k (5, 8)"),
            ({"al": "workload,drafter\nw,sa\n"}, "al.csv", "tokens_per_run"),
            ({"al": AL_CSV.replace("2.25", "lots")}, "al.csv", "lots"),
            ({"meta": json.dumps({k: v for k, v in RESULTS_META.items() if k != "machine"})},
             "meta.json", "machine"),
            ({"meta": json.dumps(dict(RESULTS_META, minutes="soon"))}, "meta.json", "soon"),
        ]
        check_named(self, cases, (lambda: self.sr.render_speed(self.data), self.sr.render_al,
                                  lambda: self.sr.render_meta(self.data)), self.write)


# Two rows of `speclab bench --batch`'s CSV, with its column names (those of the main mode's CSV
# for the same quantities).
BATCH_CSV = (
    "model,lab_impl,clock,temperature,max_new_tokens,repeats,workload,drafter,drafter_name,k,n,"
    "sa_draft_ratio,batch,target_runs,drafted,accepted,emitted,tokens_per_run,acceptance_rate,"
    "draft_us_per_token,plain_tokens_per_s,spec_tokens_per_s,speedup_median,decode_speedup,"
    "plain_seconds_median,spec_seconds_median,identical,mismatches,run_cost,"
    "core_round_trip_ns_min,core_round_trip_ns_max\n"
    "m,solution,cpu,0,48,1,code_edit,pool,p,5,3,,1,452,1746,944,1396,3.0885,0.540664,5.1,226.1,"
    "358.2,1.5843,2.2764,6.1733,3.8966,true,0,1.3568,80.5,81.6\n"
    "m,solution,cpu,0,48,1,code_edit,pool,p,5,3,,4,452,1746,944,1396,3.0885,0.540664,5.2,300.0,"
    "400.0,1.3333,1.5,4.0,3.0,true,0,1.9,80.5,81.6\n")


class Lab07BatchTable(unittest.TestCase):
    """tools/study_lab07's batch table, from the CSV `speclab bench --batch` writes."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.lab07 = load_study_results("study_lab07")
        self.lab07.DATA = Path(self.tmp.name)
        self.lab07.BATCHES = [1, 4]

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_table_reads_the_columns_by_their_names(self):
        (self.lab07.DATA / "batch.csv").write_text(BATCH_CSV, encoding="utf-8")
        self.assertEqual(self.lab07.render_batch().splitlines()[2:],
                         ["| 1 | pool | 3.09 | 1.36 | 2.28× | 1.58× |",
                          "| 4 | pool | 3.09 | 1.90 | 1.50× | 1.33× |"])

    def test_a_csv_without_a_column_the_table_reads_is_named(self):
        # The batch CSV called the AL 'al' where every other bench output says 'tokens_per_run'.
        (self.lab07.DATA / "batch.csv").write_text(
            BATCH_CSV.replace(",tokens_per_run,", ",al,"), encoding="utf-8")
        with self.assertRaises(SystemExit) as e:
            self.lab07.render_batch()
        self.assertIn("batch.csv has no column 'tokens_per_run'", str(e.exception))


class Lab07Meta(unittest.TestCase):
    """tools/study_lab07's caption: the thread count as a count, not 'thread(s)'."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.lab07 = load_study_results("study_lab07")
        self.lab07.DATA = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_one_thread_is_singular_and_two_are_plural(self):
        for threads, words in ((1, "1 model thread,"), (2, "2 model threads,")):
            (self.lab07.DATA / "meta.json").write_text(
                json.dumps(dict(RESULTS_META, threads=threads)), encoding="utf-8")
            text = self.lab07.render_meta()
            self.assertIn(words, text)
            self.assertNotIn("thread(s)", text)


class Plural(unittest.TestCase):
    def test_a_count_of_one_takes_the_singular(self):
        self.assertEqual(study.plural(1, "thread"), "1 thread")
        self.assertEqual(study.plural(2, "thread"), "2 threads")
        self.assertEqual(study.plural(0, "thread"), "0 threads")


class RoundTripText(unittest.TestCase):
    def test_the_meta_line_names_the_range_or_nothing(self):
        self.assertEqual(study.round_trip_text({}), "")
        self.assertEqual(study.round_trip_text({"core_round_trip_ns": [79.7, 83.6]}),
                         ", cross-core round trip 80 to 84 ns")
        self.assertEqual(study.round_trip_text({"core_round_trip_ns": [371.2, 371.4]}),
                         ", cross-core round trip 371 ns")


if __name__ == "__main__":
    unittest.main(verbosity=2)
