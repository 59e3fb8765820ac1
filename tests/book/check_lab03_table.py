#!/usr/bin/env python3
"""Lab 03's filler_top_k table must be what bench_nasd_enrichment measures.

  check_lab03_table.py BENCH [CHAPTER]

Runs BENCH (build/bin/bench_nasd_enrichment; deterministic, under a second) and checks that
CHAPTER (default book/lab03_nasd.md) holds its sampled table line for line, quotes the greedy
periodic figures at top-k 1 and 3 as measured, and that its claim about the default holds:
filler_top_k = 3 is within 0.02 tokens per run of the best top-k on every sampled workload.
Exit status 1 with a message naming what differs; 0 when all agree.
"""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tables(output):
    """{'sampled': [lines], 'greedy': [lines]}: the Markdown table under each heading."""
    found, current = {}, None
    for line in output.splitlines():
        if line.startswith("sampled") or line.startswith("greedy"):
            current = found.setdefault(line.split()[0], [])
        elif current is not None and line.startswith("|"):
            current.append(line)
    return found


def cells(row):
    return [c.strip() for c in row.strip("|").split("|")]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    chapter = Path(sys.argv[2]) if len(sys.argv) == 3 else ROOT / "book" / "lab03_nasd.md"
    if not (Path(sys.argv[1]).is_file() and os.access(sys.argv[1], os.X_OK)):
        sys.exit(f"{sys.argv[1]} is not an executable file: build it first "
                 "(cmake --build build --target bench_nasd_enrichment)")
    if not chapter.is_file():
        sys.exit(f"{chapter} is not a file: give the lab 03 chapter")
    run = subprocess.run([sys.argv[1]], capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        sys.exit(f"{sys.argv[1]} exited {run.returncode}:\n{run.stdout}{run.stderr}")
    measured = tables(run.stdout)
    if set(measured) != {"sampled", "greedy"} or not all(len(t) == 5 for t in measured.values()):
        sys.exit(f"could not read the bench's two tables from its output:\n{run.stdout}")
    text = chapter.read_text(encoding="utf-8")
    problems = []

    block = "\n".join(measured["sampled"])
    if block not in text:
        problems.append(
            f"{chapter.name}'s filler_top_k table is not what the bench measures; the bench gives\n"
            f"{block}")

    periodic = cells(measured["greedy"][2])
    sentence = f"periodic {periodic[1]} at top-k 1, {periodic[3]} at top-k 3"
    if sentence not in text:
        problems.append(f"{chapter.name} should quote the greedy trend as '{sentence}'")

    for row in measured["sampled"][2:]:
        name, *per_run = cells(row)[:5]
        values = [float(v) for v in per_run]
        if max(values) - values[2] > 0.02:
            problems.append(f"{name}: top-k 3 ({values[2]}) is more than 0.02 below the best "
                            f"({max(values)}); the chapter says the default is within 0.02")
    if "within 0.02 tokens per run" not in text:
        problems.append(f"{chapter.name} no longer states the 0.02 claim this check tests")

    if problems:
        print("\n\n".join(problems))
        return 1
    print(f"{chapter.name}: the filler_top_k table matches the bench")
    return 0


if __name__ == "__main__":
    sys.exit(main())
