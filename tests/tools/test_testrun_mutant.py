#!/usr/bin/env python3
"""`tools/testrun.py mutant` tells a mutant that no case could check from one that survived.

A mutant is caught when one of its group's cases fails on it, and survives when every case that
ran passed. A case that skips (it lacks a GPU, say) checks nothing: a mutant whose cases all
skipped was not checked at all, and must be reported as skipped, with the cases' reason, rather
than as a survivor (a failure) or as caught (a pass that proves nothing). The GPU mutants depend
on this: on a machine without a GPU every case of theirs skips.

Each check builds a scratch build folder holding a cases file and a stand-in test program that
behaves like a doctest program of tests/support (a SKIPPED line and exit 77, or doctest's summary
and the case token). Standard library only.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTRUN = ROOT / "tools" / "testrun.py"
GROUP, MUTANT = "demo", "broken"
CASES = ["first case", "second case"]

# The stand-in test program: the case named by --test-case= does what BEHAVIOUR says for it.
PROGRAM = r'''#!/usr/bin/env python3
import os, sys
BEHAVIOUR = %r
case = next(a for a in sys.argv if a.startswith("--test-case=")).split("=", 1)[1]
what = BEHAVIOUR[case]
token = os.environ["SPECLAB_CASE_TOKEN"]
if what == "skip":
    print("SKIPPED: no CUDA device is present on this machine")
    print(f"speclab-case-skip {token}")
    sys.exit(77)
ok = what == "pass"
print(f"[doctest] test cases: 1 | {int(ok)} passed | {int(not ok)} failed | 0 skipped")
print(f"\nspeclab-case-end {token} {int(not ok)}")
sys.exit(0 if ok else 1)
'''


def run_mutant(behaviour):
    """Runs `testrun.py mutant` on a scratch build whose cases behave as `behaviour` says.
    Returns (exit code, output, the mutant report's text, the skip reports' text)."""
    with tempfile.TemporaryDirectory(prefix="speclab-testrun-") as build:
        tests = Path(build) / "labtests"
        tests.mkdir()
        (tests / f"{GROUP}.cases").write_text("\n".join(CASES) + "\n", encoding="utf-8")
        exe = tests / f"{GROUP}_mutant_{MUTANT}"
        exe.write_text(PROGRAM % (behaviour,), encoding="utf-8")
        exe.chmod(0o755)
        p = subprocess.run([sys.executable, str(TESTRUN), "mutant", "--build-dir", build,
                            "--lab", GROUP, "--mutant", MUTANT, "--timeout", "30",
                            "--mem-mb", "0"], capture_output=True, text=True)
        reports = tests / "mutant-reports"
        report = "".join(f.read_text(encoding="utf-8") for f in sorted(reports.glob("*")))
        skips = tests / "skip-reports"
        skipped = "".join(f.read_text(encoding="utf-8") for f in sorted(skips.glob("*")))
        return p.returncode, p.stdout + p.stderr, report, skipped


def expect(cond, what, out):
    if not cond:
        print(f"FAIL: {what}\n--- output:\n{out}")
        sys.exit(1)


def main():
    rc, out, report, skipped = run_mutant({c: "skip" for c in CASES})
    expect(rc == 77, f"every case skipped: exit {rc}, not 77 (ctest's skip)", out)
    expect("not checked" in out and "no CUDA device is present" in out,
           "every case skipped: the output does not say the mutant was not checked, and why", out)
    expect("NOT CHECKED" in report and "SURVIVED" not in report,
           "every case skipped: the mutant report does not say NOT CHECKED", report)
    expect("no CUDA device is present" in skipped and f"{GROUP}/{MUTANT}" in skipped,
           "every case skipped: the skip report lacks the mutant and the reason", skipped)

    rc, out, report, _ = run_mutant({"first case": "skip", "second case": "pass"})
    expect(rc == 1 and "SURVIVED" in report, "a skip and a pass: the mutant must survive", out)

    rc, out, report, _ = run_mutant({"first case": "skip", "second case": "fail"})
    expect(rc == 0 and "caught by 1 of 1" in report,
           "a skip and a failure: the mutant must be caught by 1 of 1 cases that ran", out)

    rc, out, report, _ = run_mutant({c: "pass" for c in CASES})
    expect(rc == 1 and "SURVIVED" in report, "every case passed: the mutant must survive", out)
    print("ok: skipped-only mutants are reported as not checked; the rest as before")


if __name__ == "__main__":
    main()
