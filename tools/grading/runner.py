"""Runs a lab's cases against one implementation and turns each run into a scored result.

Every case runs in its own process through tools/testrun.py (the runner ctest uses), with a
timeout and a memory limit, so a case that throws, crashes, aborts, hangs or allocates without
bound scores 0 on its own and the others still count.
"""
import ctypes
import os
import re
import signal
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import testrun  # noqa: E402  (tools/testrun.py)

from . import printable  # noqa: E402

# Every status a graded case can have, with the words the reports use for it.
STATUSES = {
    "passed": "passed",
    "failed": "a check failed",
    "exception": "threw an exception",
    "segfault": "crashed with a segmentation fault",
    "abort": "aborted",
    "crashed": "was killed by a signal",
    "timeout": "exceeded its time limit",
    "memory": "exceeded its memory limit",
    "output_limit": "printed more output than allowed",
    "exited": "ended the test process (exit())",
    "skipped": "was skipped",
    "error": "could not be run",
    "compile_error": "not run: the lab did not compile",
    "not_submitted": "not run: the submission has no file for this lab",
}
OUTPUT_KEEP = 8000  # characters of a case's output kept in the reports, from each end


@dataclass
class TestResult:
    lab: str
    name: str
    suite: str
    hidden: bool
    max_score: float
    score: float
    status: str
    summary: str   # one line: what happened
    output: str    # the case's output, trimmed
    seconds: float = 0.0


def classify(run):
    """The grading status of a testrun.CaseRun."""
    if run.status == "crashed":
        return {"SIGSEGV": "segfault", "SIGBUS": "segfault", "SIGABRT": "abort",
                "SIGXFSZ": "output_limit"}.get(run.signal, "crashed")
    if run.status in ("missing", "nostart"):
        return "error"
    return run.status if run.status in STATUSES else "error"


def summarize(status, output, run=None, name=""):
    """One line that says what went wrong, for the table and the reports."""
    if status == "passed":
        return "passed"
    if status == "exception":
        m = re.search(r"THREW exception: (.*)", output)
        return (f"threw an exception: {m.group(1).strip().strip(chr(34))[:300]}" if m
                else STATUSES[status])
    if status == "failed":
        m = re.search(r"ERROR: (.*)", output)
        return m.group(1).strip()[:300] if m else STATUSES[status]
    if status == "skipped":
        return f"{STATUSES[status]}: {testrun.skip_reason(output)}"[:300]
    if status in ("segfault", "abort", "crashed", "output_limit") and run is not None:
        return f"{STATUSES[status]} (killed by {run.signal})"
    # The last such line is the one testrun.py added; the case may have printed others.
    lines = re.findall(r"^(?:TIMEOUT|MEMORY|EXITED|ERROR): (.*)$", output, re.M)
    if not lines:
        return STATUSES[status]
    return lines[-1].replace(f"'{name}' ", "", 1).strip()[:300]


def describe(result):
    """One line for a case: its name, then its status and summary, the status only once (a
    summary such as "was skipped: ..." already says it)."""
    said = result.summary.startswith(STATUSES.get(result.status, result.status))
    what = result.summary if said else f"{result.status}: {result.summary}"
    return f"{'[hidden] ' if result.hidden else ''}{result.name}: {what}"


def trim(text, keep=OUTPUT_KEEP):
    if len(text) <= 2 * keep:
        return text
    return f"{text[:keep]}\n[... {len(text) - 2 * keep} characters left out ...]\n{text[-keep:]}"


def run_cases(exe, cases, points, lab, hidden, timeout, mem_mb, jobs, clean=lambda s: s):
    """Runs every (name, suite) in cases against exe; returns [TestResult] in the same order.
    The cases run in a scratch folder of their own, removed afterwards: a file a student's code
    writes to its current folder (a debug log) lands there, not where the grader was started."""
    scratch = tempfile.TemporaryDirectory(prefix="speclab-case-", ignore_cleanup_errors=True)

    def one(case):
        name, suite = case
        run = testrun.run_case_detail(exe, name, timeout=timeout, mem_mb=mem_mb, output_mb=16,
                                      cwd=scratch.name)
        status = classify(run)
        output = trim(printable(clean(run.output)))  # no escapes reach the terminal
        score = points[name] if status == "passed" else 0.0
        return TestResult(lab, name, suite, hidden, points[name], score, status,
                          summarize(status, output, run, name), output,
                          run.seconds)

    become_subreaper()
    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, cases))
        kill_strays()
    finally:
        scratch.cleanup()
    return results


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper():
    """Makes the processes the cases leave behind this process's children, even those that
    started a session of their own (which a timeout's killpg misses), so kill_strays finds
    them. Linux only; elsewhere strays stay where they are."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children():
    me, pids = os.getpid(), []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me:
            pids.append(int(entry))
    return pids


def kill_strays():
    """Kills and reaps every child of this process: after run_cases those can only be what a
    student's code started and left running (a fork() that outlived its case, a daemon), which
    would use the CPU while later cases and students are timed. Each kill hands the stray's own
    children to this process, so it goes on until none are left."""
    for _ in range(1000):
        pids = _children()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def not_run(cases, points, lab, hidden, status, why):
    """Results for cases that could not run (compile error, nothing submitted): 0 each."""
    return [TestResult(lab, name, suite, hidden, points[name], 0.0, status, why, "")
            for name, suite in cases]
