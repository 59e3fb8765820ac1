#!/usr/bin/env python3
"""The figures book/lab01_prompt_lookup.md quotes from `speclab demo`: the toy table of
"Tokens per run: the metric" (tokens per run at the demo's k for each ToyTarget regime).

  figures_lab01.py SPECLAB

Runs SPECLAB demo --model toy (deterministic, well under a second) with the reference drafters,
whatever LAB_IMPL says, and prints CHAPTER<TAB>WHAT<TAB>PHRASE lines for
tests/book/check_quoted.py (ctest label `book`). The chapter's words are claims about the
measured value: "above 4" (more than 4), "a little above 1" (more than 1 and less than 1.5),
"exactly 1.00" (as many target runs as plain decoding); a claim that does not hold prints the
measured value instead, which the chapter then lacks.
"""
import os
import re
import subprocess
import sys

CHAPTER = "book/lab01_prompt_lookup.md"
ROWS = {  # regime: (the chapter's description, the claim, whether the row makes it)
    "periodic": ("a repeating pattern", "above 4", lambda al, plain, spec: al > 4),
    "markov": ("a few likely successors per token", "a little above 1",
               lambda al, plain, spec: 1 < al < 1.5),
    "random": ("never repeats a token", "exactly 1.00", lambda al, plain, spec: plain == spec),
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    # The book's figures come from the reference drafters, whatever LAB_IMPL says.
    env = {k: v for k, v in os.environ.items() if k != "LAB_IMPL"}
    run = subprocess.run([sys.argv[1], "demo", "--model", "toy", "--no-color"],
                         capture_output=True, text=True, timeout=60, env=env)
    if run.returncode != 0:
        sys.exit(f"speclab demo exited {run.returncode}:\n{run.stdout}{run.stderr}")
    k = re.search(r"prompt lookup n=\d+, k=(\d+)", run.stdout)
    if not k:
        sys.exit(f"speclab demo printed no 'k=' in its header:\n{run.stdout}")
    print(f"{CHAPTER}\tthe demo's k in the table's header\t"
          f"| regime | what the text looks like | tokens per run at k = {k.group(1)} |")
    for regime, (looks, claim, holds) in ROWS.items():
        row = re.search(rf"^{regime}\s+(\d+)\s+(\d+)\s+([\d.]+)\s", run.stdout, re.MULTILINE)
        if not row:
            sys.exit(f"speclab demo printed no {regime} row:\n{run.stdout}")
        plain, spec, al = int(row.group(1)), int(row.group(2)), float(row.group(3))
        said = claim if holds(al, plain, spec) else f"{al:.2f}"
        print(f"{CHAPTER}\ttokens per run on {regime} text\t| {regime} | {looks} | {said} |")


if __name__ == "__main__":
    main()
