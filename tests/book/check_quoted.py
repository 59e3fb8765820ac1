#!/usr/bin/env python3
"""The figures a chapter types by hand must be what the project's own code gives.

  check_quoted.py PRODUCER [ARGS...]

Runs PRODUCER ARGS (a program that computes a chapter's figures deterministically: a build of
the reference solutions, or a script over saved data; never a timing). Every line it prints is

  CHAPTER<TAB>WHAT<TAB>PHRASE

CHAPTER a file under book/ (book/lab04_ngram_pool.md), WHAT the figure in words, and PHRASE the
words around it that CHAPTER must contain, line breaks and runs of spaces aside. A producer that
tests a claim rather than a number ("on every seed") prints its phrase only when the claim holds,
and otherwise a phrase that says what holds instead, which the chapter then lacks.

Exit status 1 naming every phrase a chapter lacks (and what the producer computed), or when the
producer fails or prints nothing; 0 when every phrase is there.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def flat(text):
    return " ".join(text.split())


def quotes(output, producer):
    """[(chapter, what, phrase)] from the producer's output; exits on a malformed line."""
    found = []
    for number, line in enumerate(output.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(f.strip() for f in fields):
            sys.exit(f"{producer}: line {number} is not CHAPTER<TAB>WHAT<TAB>PHRASE: {line!r}")
        found.append(tuple(fields))
    if not found:
        sys.exit(f"{producer} printed no figure: nothing would be checked")
    return found


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    producer = sys.argv[1:]
    # The program's name, not its interpreter's, in the messages.
    scripted = Path(producer[0]).name.startswith("python") and len(producer) > 1
    name = Path(producer[1] if scripted else producer[0]).name
    try:
        run = subprocess.run(producer, capture_output=True, text=True, timeout=120)
    except OSError as e:
        sys.exit(f"cannot run {producer[0]}: {e.strerror} (build it first)")
    if run.returncode != 0:
        sys.exit(f"{name} exited {run.returncode}:\n{run.stdout}{run.stderr}")
    texts, missing = {}, []
    for chapter, what, phrase in quotes(run.stdout, name):
        path = ROOT / chapter
        if not (chapter.startswith("book/") and path.is_file()):
            sys.exit(f"{name}: '{chapter}' is not a chapter under book/")
        if chapter not in texts:
            texts[chapter] = flat(path.read_text(encoding="utf-8"))
        if flat(phrase) not in texts[chapter]:
            missing.append(f"{chapter}: {what}: the code gives\n    {flat(phrase)}")
    if missing:
        print("\n".join(missing))
        print(f"\n{len(missing)} figure(s) typed in the text differ from what {name} computes: "
              "correct the text (or, if the code changed on purpose, the figure with it).")
        return 1
    checked = len(quotes(run.stdout, name))
    print(f"{name}: the {checked} figures it quotes are in {', '.join(sorted(texts))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
