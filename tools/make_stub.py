#!/usr/bin/env python3
"""Writes a lab's "do-nothing" stub: its starter with every todo(...) call replaced by the
function's default return, so that it compiles and runs but does none of the lab's work.

  make_stub.py STARTER OUT      (OUT's folder is made if it does not exist)

In a function that returns a value the call becomes `return {};` (an empty vector, a zero, a
default-constructed result); in a void function, a constructor or a destructor it is removed; in
a function that returns a reference, which has no default, it stays (and throws its TODO). A
submission like this is what a student hands in who deleted the TODOs and wrote nothing, and
no case of the lab may pass on it (the `starters` test "labNN: a stub that only returns defaults
passes no case", cmake/SpecLabTesting.cmake): a case it passes would give points for no work.

The starter must be laid out as the course's starters are (clang-format): each function
definition begins at column 0, and each todo(...) call is a statement of its own. A call that
cannot be placed in a function is an error, and so is a starter without any: the stub would
silently test nothing.

Exit status: 0 when OUT was written, 1 when the starter cannot be turned into a stub (the reason
is printed), 2 on bad usage.
"""
import os
import re
import sys

# A line at column 0 that does not begin a function definition.
NOT_A_DEFINITION = re.compile(r"^(//|/\*|\*|#|}|namespace\b|template\b|using\b|static_assert\b"
                              r"|struct\b|class\b|enum\b|extern\b)")
SPECIFIERS = {"inline", "static", "constexpr", "virtual", "explicit", "[[nodiscard]]"}


def call_end(text, start):
    """The index just past the `;` that ends the todo( call beginning at start, skipping string
    and character literals (a section name may hold a parenthesis)."""
    depth, i, quote = 0, start, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                rest = re.match(r"\s*;", text[i + 1:])
                if not rest:
                    return None
                return i + 1 + rest.end()
        i += 1
    return None


def default_return(signature):
    """What replaces the todo( call, from the text of the function's definition up to its
    parameter list: None to keep the call (a reference has no default value)."""
    head = signature.split("(", 1)[0].replace("&", " & ").split()
    kept = [w for w in head if w not in SPECIFIERS]
    if len(kept) <= 1 or kept[:-1] == ["void"]:  # X::X, X::~X, or a void function
        return "// stub: nothing"
    if "&" in kept[:-1]:
        return None
    return "return {};  // stub: the default value"


def make_stub(text):
    """The stub's text, or raises ValueError naming what could not be done."""
    out, pos, calls = [], 0, 0
    for m in re.finditer(r"^([ \t]*)todo\(", text, re.M):
        if m.start() < pos:
            continue
        calls += 1
        line_no = text.count("\n", 0, m.start()) + 1
        end = call_end(text, m.end() - 1)
        if end is None:
            raise ValueError(f"line {line_no}: the todo( call does not end with ');'")
        # The definition it belongs to: the last line at column 0 that begins one.
        signature = None
        for line in reversed(text[:m.start()].splitlines()):
            if line and not line[0].isspace() and not NOT_A_DEFINITION.match(line):
                signature = line
                break
        if signature is None:
            raise ValueError(f"line {line_no}: no function definition before this todo( call")
        replacement = default_return(signature)
        if replacement is None:
            continue
        out.append(text[pos:m.start()])
        out.append(m.group(1) + replacement)
        pos = end
    if calls == 0:
        raise ValueError("it calls todo( nowhere, so a stub of it would test nothing")
    out.append(text[pos:])
    return "".join(out)


def main(argv):
    if len(argv) != 3:
        print("usage: make_stub.py STARTER OUT", file=sys.stderr)
        return 2
    starter, dest = argv[1], argv[2]
    try:
        with open(starter, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"make_stub.py: cannot read the starter {starter}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        stub = make_stub(text)
    except ValueError as e:
        print(f"make_stub.py: {starter}: {e}", file=sys.stderr)
        return 1
    try:
        os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write(stub)
    except OSError as e:
        print(f"make_stub.py: cannot write {dest}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
