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


def read(path):
    """The text of `path`, or exits with a message that names the problem."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as e:
        sys.exit(f"{path}: not UTF-8 text (byte {e.start})")
    except OSError as e:
        sys.exit(f"{path}: cannot read it: {e.strerror}")


def parse(path):
    blocks, mode, cur = [], None, {"replace": [], "with": []}
    for line in read(path).splitlines():
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
    for i, b in enumerate(blocks, 1):
        if not "".join(b["replace"]).strip():
            sys.exit(f"{path}: block {i}: '--- replace' is followed by no text to replace")
    return [("\n".join(b["replace"]), "\n".join(b["with"])) for b in blocks]


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    solution, mutant, out = sys.argv[1:]
    text = read(solution)
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
