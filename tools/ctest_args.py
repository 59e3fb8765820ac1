#!/usr/bin/env python3
"""Checks the arguments `tools/test` hands on to ctest, before the build and the suite run.

ctest (3.25) skips what it does not understand without a word and runs every test: an unknown
option (`--rerun-faild`), an option without its value (`-L` at the end), a form it does not read
(`--label-regex=lab01`, `-Llab01`) or a bare word (`lab01`). Through `tools/test` that is the whole
suite, about 20 minutes, instead of an error. This reads the options and the values they take
from `ctest --help` (so it follows the installed ctest) and refuses any argument ctest would
pass over.

  ctest_args.py [ARG ...]    exit 0 when ctest reads every ARG, 2 with a message naming the first
                             one it would not

Accepted, as `ctest --help` lists them: `-X VALUE` and `--long VALUE` for an option shown with a
<value>; `--long=VALUE` only where the help shows that form (`--preset=<preset>`,
`--show-only[=format]`, `--no-tests=<...>`); an optional value (`[<file>]`, `[0|1]`) given or
not; and `-jN` (ctest's own shorthand for `-j N`). Standard library only.
"""
import re
import subprocess
import sys
from dataclasses import dataclass


@dataclass
class Option:
    name: str  # as typed: "-L", "--label-regex", "--no-tests=" (a value attached after '=')
    value: str  # "required" (the next argument), "optional" or "none"


def split_outside_brackets(spec):
    """`spec` cut at the commas that are not inside <...> or [...]."""
    parts, depth, cur = [], 0, ""
    for ch in spec:
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_help(text):
    """The options of a `ctest --help` text: the lines that start with '  -' or '  /', up to the
    '= description' (which starts with '=' and a space, or ends the line)."""
    options = []
    for line in text.splitlines():
        if not re.match(r"  [-/]", line):
            continue
        spec = re.split(r"=(?:\s|$)", line, maxsplit=1)[0]
        for part in split_outside_brackets(spec):
            name, _, rest = part.partition(" ")
            rest = rest.strip()
            if "=" in name:  # --preset=<preset>, --no-tests=<[error|ignore]>, --show-only[=format]
                stem, sep, _ = name.partition("[=") if "[=" in name else name.partition("=")
                if sep == "[=":
                    options.append(Option(stem, "none"))
                options.append(Option(stem + "=", "required"))
            elif rest.startswith("<") or (rest and not rest.startswith("[")):
                options.append(Option(name, "required"))  # -L <regex>, --repeat until-fail:<n>
            elif rest.startswith("["):
                options.append(Option(name, "optional"))  # --version [<file>]
            else:
                options.append(Option(name, "none"))
    return options


# Options that `ctest --help` (3.25) lists without a value but that do read the next argument
# (the --build-and-test mode's, and a few dashboard ones): their value is allowed, not required.
VALUE_NOT_LISTED = {
    "--test-load", "--test-timeout", "--overwrite", "--submit-index", "--build-target",
    "--build-run-dir", "--build-exe-dir", "--build-generator", "--build-generator-platform",
    "--build-generator-toolset", "--build-project", "--build-makeprogram", "--build-options",
    "--build-config-sample", "--tests-information",
}


def option_table(options):
    """name -> how it takes a value. An option listed twice (-D <dashboard>, -D <var>:<type>=...)
    keeps its most lenient listing."""
    rank = {"none": 0, "optional": 1, "required": 2}
    table = {}
    for o in options:
        value = "optional" if o.name in VALUE_NOT_LISTED and o.value == "none" else o.value
        if o.name not in table or rank[value] < rank[table[o.name]]:
            table[o.name] = value
    return table


def check(args, options):
    """None when ctest reads every argument, else a message naming the first it would not."""
    table = option_table(options)
    i = 0
    while i < len(args):
        a = args[i]
        value = table.get(a)
        if a == "--test-command":
            return None  # the rest of the line is the command
        if value == "required":
            if i + 1 >= len(args):
                return f"ctest option '{a}' needs a value after it, and none was given"
            i += 2
        elif value == "optional":
            i += 2 if i + 1 < len(args) and not args[i + 1].startswith("-") else 1
        elif value == "none":
            i += 1
        elif re.fullmatch(r"-j[0-9]+", a):  # ctest's shorthand for -j N
            i += 1
        else:
            problem = problem_with(a, table)
            if problem:
                return problem
            i += 1
    return None


def problem_with(a, table):
    """For `a`, an argument that is none of ctest's options as typed: None when it is one with
    its value attached after '=' where ctest reads that form, else why ctest would pass over it."""
    stem, eq, value = a.partition("=")
    if eq and stem + "=" in table:
        if value:
            return None
        return f"ctest option '{a}' needs a value after the '='"
    if eq and table.get(stem) == "required":
        return (f"ctest does not read '{a}' (it would ignore it and run every test): "
                f"write '{stem} {value}'")
    # -Llab01: a short option with its value attached, which ctest ignores (-jN aside).
    attached = [n for n, v in table.items()
                if v == "required" and not n.startswith("--") and a.startswith(n) and a != n]
    if a.startswith("-") and not a.startswith("--") and attached:
        n = max(attached, key=len)
        return (f"ctest does not read '{a}' (it would ignore it and run every test): "
                f"write '{n} {a[len(n):]}'")
    if a.startswith("-") or a.startswith("/"):
        return (f"ctest has no option '{a}' (it would ignore it and run every test); "
                "`ctest --help` lists its options")
    return (f"'{a}' is not a ctest option (ctest would ignore it and run every test); "
            f"to run the tests labelled {a}, write '-L {a}'")


def main(argv):
    try:
        text = subprocess.run(["ctest", "--help"], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"tools/test: cannot read `ctest --help` to check the arguments: {e}",
              file=sys.stderr)
        return 2
    problem = check(argv, parse_help(text))
    if problem:
        print(f"tools/test: {problem}. Nothing was built or run.", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
