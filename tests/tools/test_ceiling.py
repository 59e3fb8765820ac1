#!/usr/bin/env python3
"""tools/ceiling.py: the oracle replays, priced with a cost curve, against figures worked out by
hand, and its refusals of bad input. Standard library only; well under a second.

The cost curve of these tests: a decode step of 1 ms, a prefill of 1 ms per token, and a verify
pass over d + 1 tokens of c(d) = 1 + d / 2 steps, for d = 1..8.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "ceiling.py"

COST = {"decode_step_ms": 1.0, "prefill_tokens_per_s": 1000.0, "kernel": "test", "threads": 1,
        "verify": [{"k": k, "relative_to_decode": 1 + k / 2} for k in range(1, 9)]}
PROMPT = [1, 2, 3, 4, 5, 6, 7, 8, 9]
REPLY = [1, 2, 3, 4, 5, 6, 100]


class Ceiling(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="speclab-ceiling-"))
        self.cost = self.dir / "cost.json"
        self.cost.write_text(json.dumps(COST))

    def tearDown(self):
        for p in self.dir.iterdir():
            p.unlink()
        self.dir.rmdir()

    def run_tool(self, turns, *args, raw=None):
        tokens = self.dir / "tokens.jsonl"
        tokens.write_text(raw if raw is not None else
                          "".join(json.dumps(t) + "\n" for t in turns))
        out = self.dir / "out.json"
        p = subprocess.run([sys.executable, str(TOOL), "--tokens", str(tokens), "--cost",
                            str(self.cost), "--json", str(out), *args],
                           capture_output=True, text=True, timeout=60)
        result = json.loads(out.read_text()) if p.returncode == 0 else None
        return p, result

    def oracle(self, result, workload, oracle, k):
        row = next(r for r in result["workloads"] if r["workload"] == workload)
        return row, next(o for o in row["oracles"] if o["oracle"] == oracle and o["k"] == k)

    def test_one_turn_by_hand(self):
        turn = {"workload": "w", "id": "a", "turn": 1, "prompt": PROMPT, "reply": REPLY}
        p, result = self.run_tool([turn], "--k", "2,8")
        self.assertEqual(p.returncode, 0, p.stderr)
        # Plain: 8 prompt tokens prefilled (the last is fed by the first step) + 7 steps.
        row, sa8 = self.oracle(result, "w", "sa", 8)
        self.assertEqual((row["turns"], row["reply_tokens"]), (1, 7))
        self.assertAlmostEqual(row["prefill_ms"], 8.0)
        self.assertAlmostEqual(row["plain_ms"], 15.0)
        # sa, k = 8: the context ends in 9 (never before): a plain step emits 1. Then "1" matched
        # once before, shorter than --min-match 2: a plain step emits 2. Then "1 2" matched at the
        # start: what followed, 3 4 5 6 (the budget leaves the reply's last token to the target),
        # all accepted, for c(4) = 3, with 100 from the same pass. 1 + 1 + 3 steps.
        self.assertEqual(sa8["rounds"], 3)
        self.assertAlmostEqual(sa8["spec_ms"], 8.0 + 5.0)
        self.assertAlmostEqual(sa8["speedup"], 15.0 / 13.0)
        self.assertAlmostEqual(sa8["decode_speedup"], 7.0 / 5.0)
        self.assertAlmostEqual(sa8["tokens_per_run"], 7.0 / 3.0)
        # k = 2: after the two plain steps, 3 4 for c(2) = 2, then "1 2 3 4 5" is the longest
        # earlier suffix and 6 is all the budget allows, for c(1) = 1.5.
        _, sa2 = self.oracle(result, "w", "sa", 2)
        self.assertEqual(sa2["rounds"], 4)
        self.assertAlmostEqual(sa2["decode_speedup"], 7.0 / 5.5)
        # copy, k = 8: 1 2 3 4 5 6 is in the prompt from the first round: c(6) = 4.
        _, copy8 = self.oracle(result, "w", "copy", 8)
        self.assertEqual(copy8["rounds"], 1)
        self.assertAlmostEqual(copy8["decode_speedup"], 7.0 / 4.0)
        self.assertAlmostEqual(copy8["speedup"], 15.0 / 12.0)
        # The table says the same.
        self.assertIn("1.40x", p.stdout)
        self.assertIn("1.75x", p.stdout)

    def test_a_shorter_draft_is_taken_where_it_is_cheaper(self):
        # A cost curve with a step: c(d) = 1 + d / 2 up to d = 4, then 6 steps for d = 5..8. The
        # reply is 1..9 then 100, and 1..9 is in the prompt. Drafting as far as it will be
        # accepted at k = 8: 1..8 for c(8) = 6 (9 from the pass), then 100 from a plain step: 7
        # steps. Cheaper: 1..4 for c(4) = 3 (5 from the pass), then 6..9 for 3 (100 from the
        # pass): 6 steps, what k = 4 reaches too. A larger k never does worse: it has every
        # choice of a smaller one. sa: two plain steps (11 is new, "1" too short a match), then
        # "1 2" drafts 3..9 for c(7) = 6 (100 from the pass): 8 steps; or 3..6 for 3, then
        # "1..7" drafts 8 9 for c(2) = 2: 7 steps.
        cost = dict(COST, verify=[{"k": k, "relative_to_decode": 1 + k / 2 if k <= 4 else 6.0}
                                  for k in range(1, 9)])
        self.cost.write_text(json.dumps(cost))
        turn = {"workload": "w", "id": "a", "turn": 1, "prompt": list(range(1, 12)),
                "reply": list(range(1, 10)) + [100]}
        p, result = self.run_tool([turn], "--k", "4,8")
        self.assertEqual(p.returncode, 0, p.stderr)
        for k in (4, 8):
            _, copy = self.oracle(result, "w", "copy", k)
            self.assertAlmostEqual(copy["decode_speedup"], 10.0 / 6.0, msg=k)
            self.assertEqual(copy["rounds"], 2, k)
            _, sa = self.oracle(result, "w", "sa", k)
            self.assertAlmostEqual(sa["decode_speedup"], 10.0 / 7.0, msg=k)
            self.assertEqual(sa["rounds"], 4, k)

    def test_min_match_holds_the_automaton_back(self):
        turn = {"workload": "w", "id": "a", "turn": 1, "prompt": PROMPT, "reply": REPLY}
        p, result = self.run_tool([turn], "--k", "8", "--min-match", "3")
        self.assertEqual(p.returncode, 0, p.stderr)
        # "1 2" is too short now: a third plain step, then "1 2 3" drafts 4 5 6: 1+1+1+c(3).
        _, sa8 = self.oracle(result, "w", "sa", 8)
        self.assertEqual(sa8["rounds"], 4)
        self.assertAlmostEqual(sa8["decode_speedup"], 7.0 / 5.5)

    def test_which_occurrence_and_which_context(self):
        # sa follows the first earlier occurrence: "1 2" first went on with 7, not with 3 (as its
        # second occurrence did), so that round drafts nothing useful: d = 0. Then "1 2 3" has
        # one earlier occurrence, which goes on with 4. 1 + 1 + 1 + c(1) = 4.5 steps.
        turn = {"workload": "w", "id": "a", "turn": 1, "prompt": [1, 2, 7, 5, 1, 2, 3, 4, 9],
                "reply": [1, 2, 3, 4, 0]}
        # copy searches the reply so far too: 50 51 52 comes again from the reply itself.
        echo = {"workload": "e", "id": "b", "turn": 1, "prompt": PROMPT,
                "reply": [50, 51, 52, 50, 51, 52, 53]}
        # A reply that ends in the middle of a copy: the last token comes from the verify pass,
        # so after two plain steps the budget is 3 (3 4 5) and 6 is the target's: c(3) = 2.5.
        tail = {"workload": "t", "id": "c", "turn": 1, "prompt": PROMPT,
                "reply": [1, 2, 3, 4, 5, 6]}
        p, result = self.run_tool([turn, echo, tail], "--k", "8")
        self.assertEqual(p.returncode, 0, p.stderr)
        _, sa = self.oracle(result, "w", "sa", 8)
        self.assertEqual(sa["rounds"], 4)
        self.assertAlmostEqual(sa["decode_speedup"], 5.0 / 4.5)
        _, copy = self.oracle(result, "e", "copy", 8)
        self.assertEqual(copy["rounds"], 4)  # three plain steps, then 50 51 52 for c(3) = 2.5
        self.assertAlmostEqual(copy["decode_speedup"], 7.0 / 5.5)
        _, sa = self.oracle(result, "t", "sa", 8)
        self.assertEqual(sa["rounds"], 3)
        self.assertAlmostEqual(sa["decode_speedup"], 6.0 / 4.5)

    def test_a_later_turn_prefills_only_what_is_new(self):
        # Turn 2's prompt is turn 1's prompt and reply, then two new tokens. The target holds
        # turn 1's prompt and reply but its last token: the prefill adds 100 and 11 (the last
        # prompt token, 12, is fed by the first decode step).
        one = {"workload": "w", "id": "a", "turn": 1, "prompt": PROMPT, "reply": REPLY}
        two = {"workload": "w", "id": "a", "turn": 2, "prompt": PROMPT + REPLY + [11, 12],
               "reply": [13]}
        other = {"workload": "v", "id": "b", "turn": 1, "prompt": PROMPT, "reply": [13]}
        p, result = self.run_tool([one, two, other], "--k", "8")
        self.assertEqual(p.returncode, 0, p.stderr)
        row, _ = self.oracle(result, "w", "sa", 8)
        self.assertEqual((row["turns"], row["reply_tokens"]), (2, 8))
        self.assertAlmostEqual(row["prefill_ms"], 8.0 + 2.0)
        self.assertAlmostEqual(row["plain_ms"], 8.0 + 2.0 + 8.0)
        # Another conversation starts from an empty target.
        row, _ = self.oracle(result, "v", "sa", 8)
        self.assertAlmostEqual(row["plain_ms"], 8.0 + 1.0)

    def test_by_match_counts_the_next_token_per_match_length(self):
        # --by-match needs no cost curve: at every reply position with an earlier match, is the
        # token after the match's first occurrence the reply's next token? (The statistic lab 05
        # quotes.) Turn w: position 0 ends in 9, never seen before: not counted. Positions 1..5
        # match "1", "1 2", ... "1 2 3 4 5" at the start of the prompt, followed by the reply's
        # next token; position 6 matches "1 .. 6", followed by 7, but the reply goes on with 100.
        # Turn v: 10..25 copies the prompt; positions 1..11 are right with matches of 1..11, and
        # positions 12..16 match 12..16 tokens (the 12+ row): 12..15 right, 16 followed by 26
        # where the reply has 99.
        w = {"workload": "w", "id": "a", "turn": 1, "prompt": PROMPT, "reply": REPLY}
        v = {"workload": "v", "id": "b", "turn": 1, "prompt": list(range(10, 30)),
             "reply": list(range(10, 26)) + [99]}
        tokens = self.dir / "tokens.jsonl"
        tokens.write_text(json.dumps(w) + "\n" + json.dumps(v) + "\n")
        p = subprocess.run([sys.executable, str(TOOL), "--tokens", str(tokens), "--by-match"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {}
        workload = None
        for line in p.stdout.splitlines():
            cells = line.split()
            if line.startswith("workload "):
                workload = cells[1]
            elif workload and len(cells) == 4 and cells[3].endswith("%"):
                rows[(workload, cells[0])] = (int(cells[1]), int(cells[2]), cells[3])
        for length in ("1", "2", "3", "4", "5"):
            self.assertEqual(rows[("w", length)], (1, 1, "100%"), length)
        self.assertEqual(rows[("w", "6")], (1, 0, "0%"))
        self.assertNotIn(("w", "7"), rows)
        for length in range(1, 12):
            self.assertEqual(rows[("v", str(length))], (1, 1, "100%"), length)
        self.assertEqual(rows[("v", "12+")], (5, 4, "80%"))
        self.assertEqual(len(rows), 6 + 12, p.stdout)
        # Without --by-match the cost curve is still required.
        p = subprocess.run([sys.executable, str(TOOL), "--tokens", str(tokens)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--cost", p.stderr)

    def test_bad_input_is_named(self):
        turn = {"workload": "w", "id": "a", "turn": 1, "prompt": PROMPT, "reply": REPLY}
        cases = [
            (["--k", "9"], None, "--k 9: the cost curve stops at k = 8"),
            (["--k", "0"], None, "each k must be at least 1"),
            (["--k", "2,2"], None, "given once"),
            (["--k", "x"], None, "comma-separated whole numbers"),
            (["--min-match", "0"], None, "--min-match must be at least 1"),
            ([], "", "no turns in it"),
            ([], json.dumps(turn) + "\n{oops\n", "tokens.jsonl:2: not JSON"),
            ([], json.dumps(dict(turn, reply=[])) + "\n", "tokens.jsonl:1: 'reply' must be"),
            ([], json.dumps({"workload": "w"}) + "\n", "tokens.jsonl:1: no 'id'"),
            ([], json.dumps(dict(turn, workload=["w"])) + "\n",
             "tokens.jsonl:1: 'workload' must be a string"),
            ([], json.dumps(dict(turn, id={"a": 1})) + "\n",
             "tokens.jsonl:1: 'id' must be a string"),
            ([], json.dumps(dict(turn, prompt=[True, 2])) + "\n",
             "tokens.jsonl:1: 'prompt' must be"),
            ([], json.dumps(dict(turn, turn="1")) + "\n", "tokens.jsonl:1: 'turn' must be"),
            ([], json.dumps(dict(turn, turn=2)) + "\n" + json.dumps(turn) + "\n",
             "tokens.jsonl:2: turn 1 of conversation 'a' comes after its turn 2"),
        ]
        for args, raw, needle in cases:
            p, _ = self.run_tool([turn], *args, raw=raw)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(needle, p.stderr, args)
            self.assertNotIn("Traceback", p.stderr)
        for cost, needle in [("{", "not JSON"), (json.dumps({"decode_step_ms": 1}),
                                                  "not speclab_bench_model --json output"),
                             (json.dumps(dict(COST, decode_step_ms=0)),
                              "decode_step_ms must be a positive number"),
                             (json.dumps(dict(COST, verify=COST["verify"][1:])),
                              "k = 1, 2, ... in order"),
                             (json.dumps(dict(COST, verify=5)), "'verify' must be a list"),
                             (json.dumps(dict(COST, verify=[5])), "'verify' must be a list"),
                             (json.dumps(dict(COST, verify=[])), "no verify passes"),
                             (json.dumps(dict(COST, verify=[dict(v, k=v["k"] + 0.5) for v in
                                                           COST["verify"]])), "whole number"),
                             (json.dumps([COST]), "not an object")]:
            self.cost.write_text(cost)
            p, _ = self.run_tool([turn])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(needle, p.stderr)
            self.assertNotIn("Traceback", p.stderr)
        self.cost.write_bytes(b"\xff\xfe")
        p, _ = self.run_tool([turn])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not UTF-8", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.cost.unlink()
        p, _ = self.run_tool([turn])
        self.assertEqual(p.returncode, 2)
        self.assertIn("--cost", p.stderr)
        self.assertIn("No such file", p.stderr)
        self.cost.write_text(json.dumps(COST))


if __name__ == "__main__":
    unittest.main()
