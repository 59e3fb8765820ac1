#!/usr/bin/env python3
"""The figures book/lab05_suffix_automaton.md quotes from the saved replies in
data/study/ceiling/tokens.jsonl: how often the token after a match's first occurrence is the
reply's next token, by match length, on code_edit (what `tools/ceiling.py --by-match` prints).
Prints CHAPTER<TAB>WHAT<TAB>PHRASE lines for tests/book/check_quoted.py (ctest label `book`)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import ceiling  # noqa: E402

CHAPTER = "book/lab05_suffix_automaton.md"
NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def main():
    turns = [t for t in ceiling.load_turns(ROOT / "data/study/ceiling/tokens.jsonl")
             if t["workload"] == "code_edit"]
    count = len(turns)
    print(f"{CHAPTER}\tthe code_edit replies saved\treplies to the "
          f"{NUMBERS[count] if count < len(NUMBERS) else count} `code_edit` prompts "
          f"({max(len(t['reply']) for t in turns)} tokens at most)")
    rows = ceiling.by_match(turns)["code_edit"]

    def share(length):
        n, right = rows[length]
        return f"{right / n:.0%}", f"({right} of {n})"

    (s1, c1), (s2, c2) = share(1), share(2)
    top = ceiling.BY_MATCH_TOP
    st, ct = share(top)
    print(f"{CHAPTER}\tright after a 1-, a 2- and a {top}+-token match\t"
          f"{s1} of the time after a 1-token match {c1}, {s2} after a 2-token match {c2} and "
          f"{st} after a match of {top} tokens or more {ct}")


if __name__ == "__main__":
    main()
