"""tools/book_site/plots.py, which makes the book's figures and toy-target tables from `speclab
trace` runs: the tables are the data's own counts, and a claim the book makes about a figure
(its caption, or the chapter's prose around it) fails the build when the data contradict it.

Run with the project's Python (matplotlib): tools/pytest_run.py tests/tools/test_plots.py
SPECLAB_BIN names the speclab binary (default build/bin/speclab).
"""
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLOTS = ROOT / "tools" / "book_site" / "plots.py"
SPECLAB = Path(os.environ.get("SPECLAB_BIN", ROOT / "build" / "bin" / "speclab"))
# A small drafter-cost CSV, so that the runs below need not wait for lab 05's benchmark.
COST_CSV = ("drafter,context_len,median_ns\n"
            "lab01 prompt lookup (n=3),1024,3000\nlab01 prompt lookup (n=3),131072,300000\n"
            "lab05 suffix automaton,1024,40\nlab05 suffix automaton,131072,120\n")

# A stand-in for speclab trace: every round drafts k tokens and keeps them all, whatever the
# workload, so on markov text (where the book says drafts are rare and mostly rejected) the
# data contradict the book.
ALWAYS_ACCEPTED = """#!/usr/bin/env python3
import json, sys
args = sys.argv[1:]
k = int(args[args.index("--k") + 1])
left = int(args[args.index("--max-new-tokens") + 1])
position = 16
with open(args[args.index("--out") + 1], "w") as f:
    for i in range(10 ** 6):
        if left == 0:
            break
        d = min(k, left - 1)
        draft = list(range(d))
        f.write(json.dumps({"round": i, "position": position, "draft": draft, "accepted": d,
                            "emitted": draft + [7], "last": "bonus" if d else "plain",
                            "draft_s": 0.0, "verify_s": 0.0}) + "\\n")
        position += d + 1
        left -= d + 1
"""


def run_plots(tmp_path: Path, speclab: Path) -> subprocess.CompletedProcess:
    cost = tmp_path / "cost.csv"
    cost.write_text(COST_CSV)
    return subprocess.run([sys.executable, str(PLOTS), "--speclab", str(speclab), "--out",
                           str(tmp_path / "out"), "--drafter-cost", str(cost)],
                          capture_output=True, text=True, timeout=300)


def test_data_that_contradict_the_book_fail_the_build(tmp_path):
    fake = tmp_path / "speclab"
    fake.write_text(ALWAYS_ACCEPTED)
    fake.chmod(0o755)
    result = run_plots(tmp_path, fake)
    assert result.returncode != 0, "plots.py drew figures whose captions the data contradict"
    # Each contradicted claim is named, with the figure and the numbers that contradict it.
    assert "accept_hist" in result.stderr
    assert "Markov text rarely offers a match" in result.stderr
    assert "random text never gains" in result.stderr
    assert "tokens_per_run_vs_k" in result.stderr


@pytest.mark.skipif(not SPECLAB.is_file(), reason=f"{SPECLAB} is not built")
def test_the_real_traces_keep_every_claim_and_the_table_counts_them(tmp_path):
    result = run_plots(tmp_path, SPECLAB)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    for md in sorted((out / "figures").glob("*.md")):
        svg = re.search(r"\]\(figures/([\w-]+\.svg)\)", md.read_text())
        assert svg, f"{md.name} shows no figure: {md.read_text()}"
        assert (out / "figures" / svg[1]).stat().st_size > 0
    # Each row of the results table, recounted from the saved traces.
    rows = {}
    for line in (out / "results_toy.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and cells[1].isdigit():
            rows[(cells[0], int(cells[1]))] = cells
    assert len(rows) == 40
    for (workload, k), cells in rows.items():
        traces = [[json.loads(line) for line in path.read_text().splitlines()]
                  for path in sorted((out / "data").glob(f"{workload.replace(' ', '_')}_k{k}_s*"))]
        assert len(traces) == 3
        assert all(sum(len(r["emitted"]) for r in t) == 512 for t in traces)
        runs = statistics.mean(len(t) for t in traces)
        drafted = statistics.mean(sum(len(r["draft"]) for r in t) for t in traces)
        accepted = statistics.mean(sum(r["accepted"] for r in t) for t in traces)
        assert cells[2] == f"{runs:.1f}", (workload, k)
        assert cells[3] == f"{statistics.mean(512 / len(t) for t in traces):.2f}", (workload, k)
        assert cells[4] == f"{drafted:.1f}" and cells[5] == f"{accepted:.1f}", (workload, k)
        assert cells[7] == f"{100 * (1 - runs / 512):.1f}%", (workload, k)
        # Nothing drafted (random text) has no acceptance rate; 0.0% would read as all rejected.
        assert (cells[6] == "–") == (drafted == 0), (workload, k, cells[6])
