#!/usr/bin/env python3
"""Runs SpecLab's doctest cases one at a time, safely. ctest calls this for every test.

Each case runs in its own process with a time limit and a memory limit, so a case that throws,
crashes, loops forever or allocates without bound fails alone, with a message that says which.

  testrun.py case --exe EXE --case NAME [--timeout S] [--mem-mb M]
  testrun.py lab-case --build-dir B --lab labNN --case NAME [--timeout S] [--mem-mb M]
  testrun.py lab-build --build-dir B --lab labNN
  testrun.py mutant --build-dir B --lab labNN --mutant NAME
  testrun.py starter-check --build-dir B --lab labNN
  testrun.py stub-check --build-dir B --lab labNN
  testrun.py mutant-report --build-dir B [--clear]
  testrun.py skip-report --build-dir B

ctest runs `mutant-report --clear` and `skip-report --clear` before every run, and
`mutant-report` and `skip-report` after it (CTestCustom.cmake), so `ctest -L mutants` ends with
the list of test cases that killed each mutant, and any run with skipped tests ends with the
reason each was skipped (ctest itself shows it only with -V). With SPECLAB_CTEST_HOOKS=0 in the
environment both do nothing: a test that runs ctest itself (even `ctest --show-only` runs the
hooks) sets it, or it would clear the reports of the run it is part of.

LAB_IMPL (read when the tests run) picks the implementation a lab's cases test:
  solution (the default) or starter.
"""
import argparse
import math
import os
import re
import resource
import secrets
import shlex
import signal
import subprocess
import sys
import tempfile
import time

VALID_IMPLS = ("solution", "starter")
SKIP_CODE = 77
LOADER_FAILED = 127  # the exit code of a program the dynamic loader could not start
# The line tests/support/test_util.h's skip() prints before it exits with SKIP_CODE, followed by
# the line "speclab-case-skip TOKEN" with the case's token. Exit code 77 alone is no skip, nor is
# the SKIPPED line without the token: the code under test may print it and call exit(77) itself.
SKIP_LINE = re.compile(r"^SKIPPED: (.*)$", re.M)
# What is printed when an allocation fails: doctest's report of a std::bad_alloc that escaped the
# case or a check (its what() is "std::bad_alloc"), or the C++ runtime's when it escaped where
# nothing caught it (a noexcept function, a thread; then SIGABRT).
# A message that merely mentions bad_alloc (a what() of the code's own) is none of these.
BAD_ALLOC_CAUGHT = re.compile(r'(THREW exception|threw a DIFFERENT exception): "?std::bad_alloc"?'
                              r"[ \t]*$", re.M)
BAD_ALLOC_UNCAUGHT = re.compile(r"terminate called after throwing an instance of 'std::bad_alloc'"
                                r"|terminating due to uncaught exception of type std::bad_alloc\b")


def lab_impl():
    impl = os.environ.get("LAB_IMPL", "").strip() or "solution"
    if impl not in VALID_IMPLS:
        sys.stderr.write(f"LAB_IMPL='{impl}' is not valid. Valid values: "
                         f"{', '.join(VALID_IMPLS)} (unset means solution).\n")
        sys.exit(2)
    return impl


def lab_exe(build_dir, lab, impl):
    return os.path.join(build_dir, "labtests", f"{lab}_{impl}")


class CaseRun:
    """What one case did. status: passed, failed, exception, exited, skipped, timeout, crashed,
    memory, missing, nostart (the program could not start under its memory limit). signal: the
    signal's name when status is crashed. seconds: wall time."""

    def __init__(self, status, output, signal=None, seconds=0.0):
        self.status, self.output, self.signal, self.seconds = status, output, signal, seconds


OUTPUT_KEEP = 256 * 1024  # characters of a case's output kept from each end
TERM_GRACE_S = 3.0  # how long a case past its time limit has to report itself after SIGTERM


def _read_output(f):
    """The case's output; a huge one keeps only its beginning and its end."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    if size <= 2 * OUTPUT_KEEP:
        return f.read().decode("utf-8", "replace")
    head = f.read(OUTPUT_KEEP).decode("utf-8", "replace")
    f.seek(size - OUTPUT_KEEP)
    tail = f.read().decode("utf-8", "replace")
    return f"{head}\n[... {size - 2 * OUTPUT_KEEP} bytes of output left out ...]\n{tail}"


def run_case_detail(exe, case, timeout=30.0, mem_mb=2048, env=None, output_mb=256, cwd=None):
    """Runs one doctest case in its own process group, under an address-space limit of mem_mb
    MiB (0: none; per process: a case's own child processes each get the same limit) and an
    output limit of output_mb MiB, in the folder `cwd` (None: this one). Returns a CaseRun."""
    if not os.path.exists(exe):
        return CaseRun("missing", f"test executable {exe} does not exist: build it first")
    # doctest splits filters at commas; a backslash escapes one.
    # --no-skipped-summary (doctest 2.4.9 has it, undocumented): the summary of one case would
    # otherwise count every other case of the program as "skipped".
    cmd = [exe, "--test-case=" + case.replace(",", "\\,"), "--no-version", "--no-colors",
           "--no-skipped-summary"]

    def limits():
        os.setsid()  # own process group: a timeout kills everything the case started
        if mem_mb and mem_mb > 0:
            cap = int(mem_mb) * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # The output goes to a file, capped, so a case that prints forever cannot exhaust the
        # runner's memory or the disk (it gets SIGXFSZ).
        cap = int(output_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    # The test program prints this token back once doctest has finished, with doctest's result
    # (tests/support/doctest_main.cpp): output alone, a copy of doctest's summary line, cannot
    # pass a case, nor can code that runs after doctest (an atexit handler) and changes the exit
    # code or prints a summary of its own.
    token = secrets.token_hex(16)
    env = dict(os.environ if env is None else env, SPECLAB_CASE_TOKEN=token)
    start = time.monotonic()
    with tempfile.TemporaryFile() as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=limits, env=env, cwd=cwd)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM first: doctest reports the case it stops, with what the case had logged
            # (tests/support/doctest_main.cpp), which says which of its calls hung. Then
            # everything the case started goes, whether or not it listened.
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            text = _read_output(f)
            if BAD_ALLOC_CAUGHT.search(text):
                # A memory hog: each check filled the limit again before its bad_alloc, until
                # the time ran out. What went wrong first is the memory.
                return _out_of_memory(text, case, mem_mb, time.monotonic() - start, (
                    f" again and again, and was killed when it ran past its time limit "
                    f"({timeout:g} s)"))
            return CaseRun("timeout", text + (
                f"\nTIMEOUT: '{case}' ran longer than {timeout:g} s and was stopped (doctest "
                "reports the stop as CRASHED: SIGTERM, with what the case had logged). Look for "
                "a loop that never ends.\n"), seconds=time.monotonic() - start)
        text = _read_output(f)
    seconds = time.monotonic() - start
    end = re.search(rf"\nspeclab-case-end {token} (-?\d+)\n", text)
    finished = end is not None
    # doctest's own output is what came before the marker; anything after it was printed once
    # doctest had finished, by code that is not the tests.
    doctest_text = text[:end.start()] if end else text
    doctest_rc = int(end.group(1)) if end else None
    if end:
        text = text[:end.start()] + "\n" + text[end.end():]
    skip_line = f"\nspeclab-case-skip {token}\n"
    skipped = skip_line in text
    text = text.replace(skip_line, "\n")
    if rc < 0:
        name = signal.Signals(-rc).name
        if name == "SIGABRT" and BAD_ALLOC_UNCAUGHT.search(text):
            return _out_of_memory(text, case, mem_mb, seconds)
        if name == "SIGXFSZ":
            why = f"it wrote more than {output_mb} MiB of output. Look for a print in a loop."
        elif "[doctest]" not in text:
            # doctest prints its header before any case runs: the program died before main, or
            # at load, where static data past the address-space limit kills it.
            why = ("it crashed before doctest started: look in code that runs before main (a "
                   "global object's constructor)" +
                   (f", or for static data larger than the {mem_mb} MiB memory limit."
                    if mem_mb and mem_mb > 0 else "."))
        else:
            why = "Look for an out-of-range index or an invalid pointer."
        return CaseRun("crashed", text + f"\nCRASH: '{case}' was killed by {name}: {why}\n",
                       name, seconds)
    if rc == SKIP_CODE and skipped and SKIP_LINE.search(text):
        return CaseRun("skipped", text, seconds=seconds)
    if rc == LOADER_FAILED and mem_mb and mem_mb > 0 and "[doctest]" not in text:
        # doctest prints its header before any case runs: this program never got that far. Under
        # an address-space limit of a few MiB the dynamic loader cannot map the C++ libraries.
        # Without the loader's complaint, code that runs before main may have called exit(127).
        by_loader = "error while loading shared libraries" in text
        return CaseRun("nostart", text + (
            f"\nERROR: the test program exited with code {rc} before doctest started: its "
            f"{mem_mb} MiB memory limit may be too small for the program to start" +
            ("" if by_loader else ", or code that runs before main (a global object's "
             "constructor) ended the program") + ".\n"),
            seconds=seconds)
    # doctest's own summary is the last one before the marker: code under test may print lines
    # like it, before or after.
    summaries = list(re.finditer(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed", doctest_text))
    m = summaries[-1] if summaries else None
    if m and int(m.group(1)) != 1 and finished:
        return CaseRun("missing", text + (
            f"\nERROR: the filter for '{case}' selected {m.group(1)} test cases instead of 1. "
            "Rebuild, then run ctest again.\n"), seconds=seconds)
    if rc == 0 and doctest_rc == 0 and m and int(m.group(2)) == 1:
        return CaseRun("passed", text, seconds=seconds)
    if BAD_ALLOC_CAUGHT.search(text):
        return _out_of_memory(text, case, mem_mb, seconds)
    if not finished and "Sanitizer" not in text:
        # doctest never returned (whatever summary the output shows) and no sanitizer stopped
        # the program: the code under test ended the process itself.
        return CaseRun("exited", text + (
            f"\nEXITED: '{case}' ended the process with exit code {rc} before the test finished. "
            "Look for a call to exit().\n"), seconds=seconds)
    if "THREW exception" in text:
        return CaseRun("exception", text, seconds=seconds)
    return CaseRun("failed", text, seconds=seconds)


def _out_of_memory(text, case, mem_mb, seconds, then=""):
    limit = (f"ran out of its {mem_mb} MiB memory limit" if mem_mb and mem_mb > 0 else
             "ran out of memory (no memory limit was set)")
    return CaseRun("memory", text + f"\nMEMORY: '{case}' {limit}{then}.\n", seconds=seconds)


def run_case(exe, case, timeout=30.0, mem_mb=2048, env=None):
    """Runs one doctest case. Returns (status, output) with status one of passed, failed,
    exception, exited, skipped, timeout, crashed, memory, missing, nostart."""
    r = run_case_detail(exe, case, timeout, mem_mb, env)
    return r.status, r.output


# Signals whose backtrace points at the faulty line.
DEBUGGABLE = ("SIGSEGV", "SIGABRT", "SIGFPE", "SIGBUS", "SIGILL")


def crash_hint(exe, case):
    """For a case that crashed: the command that shows where, under gdb."""
    filt = "--test-case=" + case.replace(",", "\\,")
    return ("To see the line it crashed on, run the case under gdb (tools/setup installs it):\n"
            "  gdb -batch -ex 'set print frame-arguments none' -ex run -ex bt --args "
            f"{shlex.quote(exe)} {shlex.quote(filt)}\n"
            "The first frame in a file of yours (starter.cpp) names the function and line.\n")


def hang_hint(exe, case):
    """For a case that ran out of time: how to see where it loops, and how to stop waiting."""
    filt = "--test-case=" + case.replace(",", "\\,")
    return ("To see where it loops, run the case under gdb, press Ctrl-C after a few seconds, "
            "then type bt:\n"
            f"  gdb -ex run --args {shlex.quote(exe)} {shlex.quote(filt)}\n"
            "Every other case that calls the same code waits its full time limit too: add "
            "--stop-on-failure to the ctest command to stop at the first failure.\n")


def finish(status, output):
    sys.stdout.write(output)
    sys.stdout.flush()
    if status == "passed":
        return 0
    if status == "skipped":
        return SKIP_CODE
    return 1


def read_cases(build_dir, lab):
    path = os.path.join(build_dir, "labtests", f"{lab}.cases")
    if not os.path.exists(path):
        sys.exit(f"{path} is missing: build the project first (cmake --build {build_dir})")
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


def run_and_report(exe, case, timeout, mem_mb, build_dir, skip_name):
    """Runs one case for ctest: its output, a skip noted for skip-report, a crash's gdb hint."""
    r = run_case_detail(exe, case, timeout, mem_mb)
    output = r.output
    if r.status == "skipped":
        record_skip(build_dir, skip_name, output)
    if r.status == "crashed" and r.signal in DEBUGGABLE:
        output += crash_hint(exe, case)
    if r.status == "timeout":
        output += hang_hint(exe, case)
    return finish(r.status, output)


def cmd_case(a):
    if not (os.path.isfile(a.exe) and os.access(a.exe, os.X_OK)):
        print(f"testrun: --exe {a.exe} is not an executable file", file=sys.stderr)
        return 2
    return run_and_report(a.exe, a.case, a.timeout, a.mem_mb, build_dir_of(a.exe), a.case)


def cmd_lab_case(a):
    exe = lab_exe(a.build_dir, a.lab, lab_impl())
    return run_and_report(exe, a.case, a.timeout, a.mem_mb, a.build_dir, f"{a.lab}: {a.case}")


def known_labs():
    """The labs of this source tree: labs/labNN_<topic> folders, as their labNN names."""
    labs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "labs")
    return sorted(m.group(1) for m in (re.match(r"(lab\d\d)_", d) for d in os.listdir(labs)) if m)


def cmd_lab_build(a):
    impl = lab_impl()
    target = f"{a.lab}_tests_{impl}"
    # The lab's cases are registered when its solution binary is built. In a tree where it never
    # was (only a starter target built), build it too, so that the next ctest run finds them.
    cases = os.path.join(a.build_dir, "labtests", f"{a.lab}.cases")
    unregistered = not os.path.exists(cases)
    targets = [target] + ([f"{a.lab}_tests_solution"] if unregistered and impl != "solution"
                          else [])
    print(f"LAB_IMPL={impl}: building {' '.join(targets)}", flush=True)
    rc = subprocess.call(["cmake", "--build", a.build_dir, "--target", *targets])
    if rc != 0:
        print(f"\nBUILD FAILED for LAB_IMPL={impl} ({a.lab}). The compiler errors are above; "
              "every test of this lab is reported as not run until it builds.")
    elif unregistered and os.path.exists(cases):
        print(f"\n{a.lab}'s cases were not registered in this build tree, so this ctest run "
              "cannot run them (its 'NOT BUILT' test fails): they are now. Run the same ctest "
              "command again.")
    return rc


def report_dir(build_dir):
    return os.path.join(build_dir, "labtests", "mutant-reports")


def take_reports(d, clear):
    """The report files in folder d, in name order. With clear, deletes them and returns []."""
    if not os.path.isdir(d):
        return []
    paths = [os.path.join(d, n) for n in sorted(os.listdir(d))]
    if clear:
        for p in paths:
            os.remove(p)
        return []
    return paths


def hooks_off():
    """True when SPECLAB_CTEST_HOOKS=0: the report commands then leave the reports alone."""
    return os.environ.get("SPECLAB_CTEST_HOOKS") == "0"


def cmd_mutant_report(a):
    if hooks_off():
        return 0
    paths = take_reports(report_dir(a.build_dir), a.clear)
    if paths:
        print("\nMutants and the test cases that caught them:")
    for p in paths:
        with open(p, encoding="utf-8") as f:
            sys.stdout.write(f.read())
    return 0


def build_dir_of(path):
    """The CMake build tree holding `path` (the nearest folder above it with a CMakeCache.txt),
    or None."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.exists(os.path.join(d, "CMakeCache.txt")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def skip_dir(build_dir):
    return os.path.join(build_dir, "labtests", "skip-reports")


def skip_reason(output):
    """The reason a skipped case printed ('SKIPPED: reason', tests/support/test_util.h)."""
    m = SKIP_LINE.search(output)
    return m.group(1).strip() if m else "(the case printed no reason)"


def record_skip(build_dir, case, output):
    """Notes a skipped case for skip-report: ctest shows why a test skipped only with -V."""
    if not build_dir:
        return
    os.makedirs(skip_dir(build_dir), exist_ok=True)
    fd, _ = tempfile.mkstemp(suffix=".txt", dir=skip_dir(build_dir))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"{skip_reason(output)}\n{case}\n")


def cmd_skip_report(a):
    if hooks_off():
        return 0
    paths = take_reports(skip_dir(a.build_dir), a.clear)
    by_reason = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            reason, case = (f.read().split("\n") + [""])[:2]
        by_reason.setdefault(reason, []).append(case)
    if not by_reason:
        return 0
    print(f"\nSkipped test cases ({len(paths)}), and why:")
    for reason, cases in sorted(by_reason.items()):
        print(f"  {reason}")
        for case in sorted(cases)[:5]:
            print(f"      {case}")
        if len(cases) > 5:
            print(f"      ... and {len(cases) - 5} more")
    return 0


def cmd_mutant(a):
    exe = lab_exe(a.build_dir, a.lab, f"mutant_{a.mutant}")
    killers, survivors, skip_output = [], [], None
    for case in read_cases(a.build_dir, a.lab):
        status, out = run_case(exe, case, timeout=a.timeout, mem_mb=a.mem_mb)
        if status == "missing":
            print(f"ERROR: {exe} is missing or stale; build the project first.")
            return 1
        if status == "nostart":  # it catches nothing: no case ran
            print(out.strip().splitlines()[-1])
            return 1
        if status == "skipped":  # a case that did not run (no GPU, missing data) checks nothing
            skip_output = skip_output or out
            continue
        (survivors if status == "passed" else killers).append((case, status))
    if skip_output is not None and not killers and not survivors:
        # Not a survivor: nothing could check it here (the GPU mutants on a machine without one).
        why = skip_reason(skip_output)
        print(f"mutant {a.lab}/{a.mutant}: not checked: every case was skipped ({why})")
        record_skip(a.build_dir, f"mutants: {a.lab}/{a.mutant} is caught", skip_output)
        os.makedirs(report_dir(a.build_dir), exist_ok=True)
        with open(os.path.join(report_dir(a.build_dir), f"{a.lab}_{a.mutant}.txt"), "w",
                  encoding="utf-8") as f:
            f.write(f"  {a.lab}/{a.mutant}: NOT CHECKED (every case was skipped: {why})\n")
        return SKIP_CODE
    print(f"mutant {a.lab}/{a.mutant}: {len(killers)} of {len(killers) + len(survivors)} "
          "cases caught it")
    for case, status in killers:
        print(f"  killed by: {case} ({status})")
    lines = [f"  {a.lab}/{a.mutant}: " +
             (f"caught by {len(killers)} of {len(killers) + len(survivors)} cases"
              if killers else "SURVIVED (no test case fails on it)")]
    lines += [f"      {case} ({status})" for case, status in killers]
    os.makedirs(report_dir(a.build_dir), exist_ok=True)
    with open(os.path.join(report_dir(a.build_dir), f"{a.lab}_{a.mutant}.txt"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    if not killers:
        print(f"SURVIVED: no {a.lab} test case fails on this mutant. Add a test that does.")
        return 1
    return 0


def run_lab_cases(a, impl):
    """Runs every case of the lab on its `impl` program (starter, stub) under the lab's limits.
    Returns (the cases, [(case, status, output)] of those that did not skip, the skipped cases),
    or None after saying why no case could run (a program missing or that cannot start)."""
    exe = lab_exe(a.build_dir, a.lab, impl)
    cases = read_cases(a.build_dir, a.lab)
    ran, skipped = [], []
    for case in cases:
        status, out = run_case(exe, case, timeout=a.timeout, mem_mb=a.mem_mb)
        if status == "missing":
            print(f"ERROR: {exe} is missing or stale; build the project first.")
            return None
        if status == "nostart":
            print(out.strip().splitlines()[-1])
            return None
        if status == "skipped":
            skipped.append(case)  # it skips before reaching the student's code (missing data)
        else:
            ran.append((case, status, out))
    for case in skipped:
        print(f"  skipped, not checked: {case}")
    return cases, ran, skipped


def cmd_starter_check(a):
    runs = run_lab_cases(a, "starter")
    if runs is None:
        return 1
    cases, ran, skipped = runs
    bad = [(case, status) for case, status, out in ran
           if status == "passed" or f"TODO({a.lab})" not in out]
    if bad:
        print(f"{len(bad)} of {len(cases)} {a.lab} cases do not fail with a TODO({a.lab}) "
              "message on the untouched starter:")
        for case, status in bad:
            print(f"  {case} ({status})")
        return 1
    print(f"all {len(ran)} {a.lab} cases that ran fail on the starter with a "
          f"TODO({a.lab}) message ({len(skipped)} skipped)")
    return 0


def cmd_stub_check(a):
    """Every case fails on the lab's stub (tools/make_stub.py: every TODO returns a default), and
    fails with a message: a check or an exception, not a crash or a hang."""
    runs = run_lab_cases(a, "stub")
    if runs is None:
        return 1
    cases, ran, skipped = runs
    passed = [case for case, status, _ in ran if status == "passed"]
    unexplained = [(case, status) for case, status, _ in ran
                   if status not in ("passed", "failed", "exception")]
    if passed:
        print(f"{len(passed)} of {len(cases)} {a.lab} cases pass on a stub whose every TODO only "
              "returns a default (tools/make_stub.py), so they give points for no work. Make "
              "each one also require the student's code to do its job:")
        for case in passed:
            print(f"  {case}")
    if unexplained:
        print(f"{len(unexplained)} of {len(cases)} {a.lab} cases do not fail a check on that stub "
              "but crash, hang or exit: a student who returns a default sees a signal, not a "
              "message. The test's own code indexes or dereferences what the student's code "
              "returned; REQUIRE its size (or that it is not null) first:")
        for case, status in unexplained:
            print(f"  {case} ({status})")
    if passed or unexplained:
        return 1
    print(f"all {len(ran)} {a.lab} cases that ran fail on the stub with a check or an exception "
          f"({len(skipped)} skipped)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def at_least(kind, low, strict):
        """An argparse type: a finite `kind` > low (strict) or >= low."""
        def parse(text):
            try:
                value = kind(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
            if not math.isfinite(value):
                raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
            if value <= low if strict else value < low:
                raise argparse.ArgumentTypeError(
                    f"must be {'>' if strict else '>='} {low}, got {text}")
            return value
        return parse

    def common(sp, lab=True):
        if lab:
            sp.add_argument("--build-dir", required=True)
            sp.add_argument("--lab", required=True)
        sp.add_argument("--timeout", type=at_least(float, 0, True), default=30.0)
        sp.add_argument("--mem-mb", type=at_least(int, 0, False), default=2048)

    sp = sub.add_parser("case")
    sp.add_argument("--exe", required=True)
    sp.add_argument("--case", required=True)
    common(sp, lab=False)
    sp.set_defaults(fn=cmd_case)
    sp = sub.add_parser("lab-case")
    sp.add_argument("--case", required=True)
    common(sp)
    sp.set_defaults(fn=cmd_lab_case)
    sp = sub.add_parser("lab-build")
    common(sp)
    sp.set_defaults(fn=cmd_lab_build)
    sp = sub.add_parser("mutant")
    sp.add_argument("--mutant", required=True)
    common(sp)
    sp.set_defaults(fn=cmd_mutant)
    sp = sub.add_parser("starter-check")
    common(sp)
    sp.set_defaults(fn=cmd_starter_check)
    sp = sub.add_parser("stub-check")
    common(sp)
    sp.set_defaults(fn=cmd_stub_check)
    for name, fn in (("mutant-report", cmd_mutant_report), ("skip-report", cmd_skip_report)):
        sp = sub.add_parser(name)
        sp.add_argument("--build-dir", required=True)
        sp.add_argument("--clear", action="store_true")
        sp.set_defaults(fn=fn)
    a = p.parse_args()
    # The report commands read and clear folders inside the build tree: a mistyped one is named,
    # not taken for a tree with nothing to report.
    if a.cmd in ("mutant-report", "skip-report") and not os.path.isfile(
            os.path.join(a.build_dir, "CMakeCache.txt")):
        print(f"testrun.py {a.cmd}: --build-dir {a.build_dir} is not a CMake build folder "
              "(no CMakeCache.txt)", file=sys.stderr)
        return 2
    # A mutant's --lab may name a group of mutants that is not a lab (cuda-host).
    if a.cmd in ("lab-build", "lab-case", "starter-check", "stub-check") and \
            a.lab not in known_labs():
        print(f"There is no lab '{a.lab}' in this course; the labs are "
              f"{', '.join(known_labs())}.")
        return 2
    if a.cmd in ("mutant", "starter-check", "stub-check"):
        a.timeout = min(a.timeout, 10.0)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
