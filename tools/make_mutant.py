#!/usr/bin/env python3
"""Builds a mutant: a copy of a lab's solution with one classic mistake put back in.

A mutant file (tests/mutants/labNN/NAME.mutant) is a comment header followed by one or more
blocks:

    --- replace
    <lines exactly as they appear in the solution>
    --- with
    <the wrong lines>

Each `replace` text must occur exactly once in the solution, so a mutant can never silently turn
into the solution again when the solution is edited: the build fails and names the block.

usage: make_mutant.py SOLUTION.cpp NAME.mutant OUT.cpp
"""
import sys


def parse(path):
    blocks, mode, cur = [], None, {"replace": [], "with": []}
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            if line.strip() == "--- replace":
                if mode == "with":
                    blocks.append(cur)
                    cur = {"replace": [], "with": []}
                mode = "replace"
            elif line.strip() == "--- with":
                if mode != "replace":
                    sys.exit(f"{path}: '--- with' without a '--- replace' before it")
                mode = "with"
            elif mode:
                cur[mode].append(line)
    if mode == "with":
        blocks.append(cur)
    if not blocks:
        sys.exit(f"{path}: no '--- replace' / '--- with' blocks")
    return [("\n".join(b["replace"]), "\n".join(b["with"])) for b in blocks]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    solution, mutant, out = sys.argv[1:]
    with open(solution, encoding="utf-8") as f:
        text = f.read()
    for i, (old, new) in enumerate(parse(mutant), 1):
        count = text.count(old)
        if count != 1:
            sys.exit(f"{mutant}: block {i}: the replaced text occurs {count} times in {solution} "
                     f"(must be exactly once):\n{old}")
        if old == new:
            sys.exit(f"{mutant}: block {i}: replacement is identical to the original")
        text = text.replace(old, new)
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"// GENERATED from {solution} by {mutant}. Do not edit.\n{text}")


if __name__ == "__main__":
    main()
