#!/usr/bin/env python3
"""Every test that runs lab cases through tools/testrun.py gives them the lab's own limits.

The lab's cases (lab-case), its starter and stub checks (starter-check, stub-check) and its
mutants (mutant) must run each case under the same --timeout and --mem-mb, the ones the build was
configured with (SPECLAB_CASE_TIMEOUT, SPECLAB_CASE_MEMORY_MB, a lab's TIMEOUT): otherwise an
instructor's limits would not reach them, and in an AddressSanitizer build (no memory limit) the
starter checks would crash under testrun.py's default 2 GiB. Reads `ctest --show-only=json-v1` of
the build given as the first argument, without disturbing the ctest run it is part of. Standard
library only.
"""
import json
import os
import subprocess
import tempfile
import sys
from collections import defaultdict

CHECKED = ("lab-case", "starter-check", "stub-check", "mutant")


def option(cmd, name):
    return cmd[cmd.index(name) + 1] if name in cmd else None


def show_only(build_dir):
    """`ctest --show-only=json-v1` of the build, with the report hooks off (tools/testrun.py):
    ctest runs them even here, and the pre-test hook would clear the mutant and skip reports of
    the ctest run this test is part of. Fails if a report file does not survive the call."""
    reports = os.path.join(build_dir, "labtests", "mutant-reports")
    os.makedirs(reports, exist_ok=True)
    fd, sentinel = tempfile.mkstemp(prefix="zz-limits-test-", dir=reports)
    os.close(fd)
    try:
        out = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True,
                             env=dict(os.environ, SPECLAB_CTEST_HOOKS="0")).stdout
        if not os.path.exists(sentinel):
            raise SystemExit("FAIL: ctest --show-only cleared the mutant reports of this run")
    finally:
        if os.path.exists(sentinel):
            os.remove(sentinel)
    # Read the first JSON document: anything a hook printed after it is not ours.
    return json.JSONDecoder().raw_decode(out)[0]


def main(build_dir):
    limits = defaultdict(lambda: defaultdict(set))  # lab -> subcommand -> {(timeout, mem)}
    problems = []
    for test in show_only(build_dir)["tests"]:
        cmd = test.get("command") or []
        runner = [i for i, c in enumerate(cmd) if c.endswith("testrun.py")]
        if not runner or len(cmd) <= runner[0] + 1 or cmd[runner[0] + 1] not in CHECKED:
            continue
        sub = cmd[runner[0] + 1]
        pair = (option(cmd, "--timeout"), option(cmd, "--mem-mb"))
        if None in pair:
            problems.append(f"{test['name']}: no {'--timeout' if pair[0] is None else '--mem-mb'}")
        limits[option(cmd, "--lab")][sub].add(pair)
    labs = [lab for lab in limits if "lab-case" in limits[lab]]
    if not labs:
        problems.append("no lab cases found: the check would prove nothing")
    for lab in labs:
        want = limits[lab]["lab-case"]
        for sub in ("starter-check", "stub-check", "mutant"):
            if sub in limits[lab] and limits[lab][sub] != want:
                problems.append(f"{lab}: {sub} runs with {sorted(limits[lab][sub])}, "
                                f"its cases with {sorted(want)}")
    for p in problems:
        print("FAIL:", p)
    print(f"{len(labs)} labs checked: {', '.join(sorted(labs))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
