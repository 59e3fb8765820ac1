"""tools/grade: grades submissions with the repository's own tests (book/instructors.md).

  tools/grade SUBMISSION... [--lab labNN]... [--hidden DIR] [--out DIR]
  tools/grade --check-points [--build-dir build] [--hidden DIR]

SUBMISSION is a folder or a .zip made by tools/submit; only the labs' editable files are taken
from it. Grading happens in an isolated copy of the repository (--work, default build/grading)
with a grading build that is configured once and reused, so a submission costs one compile of
its lab file plus the test run.

Which labs: --lab (repeatable), else the labs in the submission's MANIFEST.json, else every lab
whose editable file the submission contains.

Each lab is graded on its own file only: a lab that builds on earlier labs (lab07's LAB_DEPS) is
linked with their reference solutions, so its grade does not depend on the submission's other
labs, on which labs are graded, or on their order.

Outputs (--out DIR): grade.json, results.json (Gradescope) and junit.xml. With one SUBMISSION
they go into DIR (default grades/NAME); with several, into DIR/NAME/ (default DIR: grades), plus
DIR/summary.csv (a row per submission: NAME, path, each lab's score and status, the total, and
'check': what a person must look at, such as a file that used a reference solution).
NAME is the folder or zip name; submissions that share one are qualified by their parent folders
(sec1/alice.zip, sec2/alice.zip: sec1-alice, sec2-alice).

Exit status: 0 when every submission was graded, whatever the scores; 1 when grading could not
run (the reason is printed: a points file that misses a case, a reference solution that fails, a
--build-timeout too short for the reference's build, an unreadable submission, a --hidden folder
with files but no labNN/ folder or that is part of the repository's build (tests/), a --work
folder that holds files the grader did not put there, a hidden test that changed while a
submission was graded, ...); 2 for a usage error (an unknown flag, no SUBMISSION, a --lab that
is not a lab name or is named twice, an empty --hidden, --work or --out, a --work that is the
repository or holds it, a --work or --out that is a file or lies inside one, a --timeout,
--build-timeout or --jobs that is not > 0, a --mem-mb that is neither 0 nor at least 64).
"""
import argparse
import csv
import math
import os
import shutil
import sys
import time

from . import GradingError, SubmissionError, printable
from . import reports, runner, submission, workspace
from .labs import LAB_NAME, declared_labs, lab_headers, load_points, read_cases, source_labs
from .workspace import Workspace

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def available_cpus(cpu_max="/sys/fs/cgroup/cpu.max",
                   cfs_quota="/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
    """The CPUs this process may use, -j's default: its affinity mask, capped by the CPU quota of
    its cgroup (v2 cpu.max, or v1 cpu.cfs_quota_us beside cpu.cfs_period_us), rounded up. A
    container started with a CPU quota, as Gradescope's autograder is, sees the host's cores in
    os.cpu_count(); running that many cases at once would time out correct code."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 2
    quota = None
    try:
        with open(cpu_max) as f:
            q, period = f.read().split()[:2]
        quota = None if q == "max" else int(q) / int(period)
    except (OSError, ValueError):
        try:
            with open(cfs_quota) as f, \
                    open(os.path.join(os.path.dirname(cfs_quota), "cpu.cfs_period_us")) as g:
                q, period = int(f.read()), int(g.read())
            quota = q / period if q > 0 and period > 0 else None
        except (OSError, ValueError):
            pass
    if quota is not None:
        n = min(n, math.ceil(quota))
    return max(1, n)


def cases_text(n):
    """'1 case', '20 cases'."""
    return f"{n} case" if n == 1 else f"{n} cases"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class LabSetup:
    """Everything about one lab that does not depend on the submission."""

    def __init__(self, lab, cases, points, hidden_cases, hidden_points, timeout, mem_mb):
        self.lab, self.cases, self.points = lab, cases, points
        self.hidden_cases, self.hidden_points = hidden_cases, hidden_points
        self.timeout, self.mem_mb = timeout, mem_mb


def hidden_cases_and_points(ws, lab, public_names):
    """([(case, suite)], Points) of the lab's hidden tests, read from its built hidden reference
    executable, or ([], None) when the lab has none. Raises GradingError on a hidden folder
    without sources, a case without points, or a case named like a public one."""
    if not ws.hidden:
        return [], None
    folder = os.path.join(ws.hidden, lab.name)
    if not ws.hidden_sources(lab):
        if os.path.isdir(folder):
            raise GradingError(f"{folder} holds no .cpp test sources")
        return [], None
    cases = ws.cases(lab, hidden=True)
    points = load_points(lab.points_path(ws.hidden), [n for n, _ in cases], f"{lab.name} hidden")
    clash = sorted(set(points.values) & set(public_names))
    if clash:
        raise GradingError(f"hidden {lab.name} cases share names with public ones: "
                           f"{', '.join(clash)}. Rename them.")
    return cases, points


def check_hidden_layout(hidden):
    """Raises GradingError when the --hidden folder holds files but no labNN/ folder (a wrong
    folder, such as the one above hidden/, would grade without the hidden tests, as if there
    were none), or is a folder of the repository's build (tests/: the grading copy leaves
    --hidden out, so its configure would fail). An empty folder is a course without hidden
    tests, and is said so. Needs no build: checked before the workspace is touched."""
    entries = os.listdir(hidden)
    labs = [d for d in entries if LAB_NAME.match(d) and os.path.isdir(os.path.join(hidden, d))]
    if not entries:
        log(f"grade: --hidden {hidden} is empty: no hidden tests")
    elif not labs:
        raise GradingError(f"--hidden {hidden} holds no labNN/ folder, so no hidden test would "
                           "run: give the folder that holds lab01/, lab02/, ...")
    real, repo = os.path.realpath(hidden), os.path.realpath(REPO)
    if real == repo or real.startswith(repo + os.sep):
        for dirpath, _, filenames in os.walk(hidden):
            if "CMakeLists.txt" in filenames:
                raise GradingError(
                    f"--hidden {hidden} is part of the repository's build (it holds "
                    f"{os.path.join(dirpath, 'CMakeLists.txt')}), and grading leaves --hidden "
                    "out of its copy of the repository: give the folder of your hidden tests "
                    "alone (DIR/labNN/*.cpp and DIR/labNN/points.txt)")


def check_hidden_labs(hidden, declared):
    """Raises GradingError when the --hidden folder has a labNN/ folder for a lab this
    repository does not declare (its tests would never run)."""
    labs = [d for d in os.listdir(hidden)
            if LAB_NAME.match(d) and os.path.isdir(os.path.join(hidden, d))]
    unknown = sorted(d for d in labs if d not in declared)
    if unknown:
        raise GradingError(f"--hidden {hidden} has tests for {', '.join(unknown)}, which this "
                           f"repository does not have (it has {', '.join(declared)}); rename or "
                           "remove them")


def check_hidden_folders(hidden, declared):
    """check_hidden_layout, then check_hidden_labs."""
    check_hidden_layout(hidden)
    check_hidden_labs(hidden, declared)


# --build-timeout must be at least this many times the reference's build as a submission. That
# build is timed once, a student's correct file may hold more code than the reference's, and the
# same build on a shared machine can take twice as long from one run to the next.
BUILD_TIMEOUT_MARGIN = 2


def check_build_timeout(ws, lab, limit):
    """Builds the lab as grade_submission builds a submission's, with the reference solution as
    the submission's file: written over the lab's editable file in WORK/src (put back when grading
    ends, as a submission's is), so only it recompiles and the lab's test executables relink, each
    build under `limit`. Returns the seconds the longer build took. Raises GradingError when a
    build runs past the limit, takes more than 1 / BUILD_TIMEOUT_MARGIN of it, or fails."""
    rel = lab.editable[0]
    with open(os.path.join(REPO, lab.reference), "rb") as f:
        ws.place(rel, f.read())
    public, *hidden = ws.targets(lab, "starter")
    took = 0.0
    limit_text = (f"--build-timeout {reports.num(limit)} s is too short for {lab.name} on this "
                  "machine")
    advice = ("Give a longer --build-timeout (the default is 300 s) or grade on a less busy "
              "machine; --no-reference-check skips this check.")
    for targets in ([public], hidden):
        if not targets:
            continue
        t = time.monotonic()
        ok, out = ws.build_targets(targets, limit)
        took = max(took, time.monotonic() - t)
        if ok is None:
            raise GradingError(
                f"{limit_text}: the reference solution of {lab.name}, built in place of a "
                "submission's file, did not finish within it and was stopped, so every "
                f"submission would score 0 as compile_error. {advice}")
        if not ok:
            raise GradingError(
                f"the reference solution of {lab.name} ({lab.reference}) does not build in place "
                f"of {rel}, as a submission's file, so --build-timeout cannot be checked against "
                f"it:\n{ws.clean_build_output(out)[-8000:]}")
    if took * BUILD_TIMEOUT_MARGIN > limit:
        raise GradingError(
            f"{limit_text}: built in place of a submission's file (that file recompiled, the "
            f"lab's tests relinked), the reference solution of {lab.name} took {took:.1f} s, and "
            f"the limit must be at least twice that ({math.ceil(took * BUILD_TIMEOUT_MARGIN)} s): "
            "a correct submission may take longer to compile than the reference, and a busy "
            f"machine builds slower. {advice}")
    return took


def prepare_lab(ws, lab, args):
    """Builds the lab's reference, reads and checks its points, and (unless
    --no-reference-check) checks the limits against the reference: that its file, built as a
    submission's, takes at most half of --build-timeout, and that it passes every case within
    the case timeout. Raises GradingError."""
    ws.build_reference(lab)
    cases = ws.cases(lab)
    points = load_points(lab.points_path(os.path.join(REPO, "tests")), [n for n, _ in cases],
                         lab.name)
    hidden_cases, hidden_points = hidden_cases_and_points(ws, lab, points.values)
    timeout = args.timeout or lab.timeout
    mem_mb = args.mem_mb if args.mem_mb is not None else lab.mem_mb
    setup = LabSetup(lab, cases, points.values, hidden_cases,
                     hidden_points.values if hidden_points else {}, timeout, mem_mb)
    if not args.no_reference_check:
        took = check_build_timeout(ws, lab, args.build_timeout)
        log(f"grade: {lab.name} reference builds as a submission in {took:.1f} s "
            f"(--build-timeout {reports.num(args.build_timeout)} s)")
        t = time.monotonic()
        bad = []
        for hidden, group, pts in ((False, cases, setup.points),
                                   (True, hidden_cases, setup.hidden_points)):
            results = runner.run_cases(ws.exe(lab, "solution", hidden), group, pts, lab.name,
                                       hidden, timeout, mem_mb, args.jobs)
            bad += [r for r in results if r.status != "passed"]
        if bad:
            raise GradingError(
                f"the reference solution of {lab.name} does not pass every case, so its scores "
                "would be wrong:\n" + "\n".join(f"  {runner.describe(r)}" for r in bad))
        log(f"grade: {lab.name} reference passes all {len(cases) + len(hidden_cases)} cases "
            f"({time.monotonic() - t:.1f} s)")
    return setup


def choose_labs(sub, requested, declared):
    if requested:
        return requested
    listed = sub.manifest_labs()
    for n in sorted({n for n in listed if listed.count(n) > 1}):
        sub.notes.append(f"{submission.MANIFEST} names {n} twice: graded once")
    listed = list(dict.fromkeys(listed))
    names = [n for n in listed if n in declared]
    for n in listed:
        if n not in declared:
            sub.notes.append(f"{submission.MANIFEST} names {n}, which this repository does not "
                             "have: not graded")
    if not names:
        names = [n for n, lab in declared.items() if lab.editable[0] in sub.files]
    if not names and sub.nested:
        raise SubmissionError(f"nothing to grade: {sub.nested_note}")
    if not names:
        example = next(iter(declared.values())).editable[0]
        raise SubmissionError(
            f"nothing to grade: the submission holds no lab's editable file (such as {example}) "
            "and no MANIFEST.json; pass --lab labNN to grade it anyway")
    return names


def changed_headers(sub, lab):
    """Notes for the lab's headers whose sha256 in the submission's MANIFEST.json (tools/submit
    records them) differs from this repository's: the file was written against a changed copy,
    and a compile error may come from that, not from the file."""
    notes = []
    recorded = {h.get("path"): h.get("sha256") for h in (sub.manifest or {}).get("headers") or []
                if isinstance(h, dict)}
    for rel in lab_headers(REPO, lab.dir):
        if rel not in recorded:
            continue
        with open(os.path.join(REPO, rel), "rb") as f:
            if submission.sha256(f.read()) != recorded[rel]:
                notes.append(f"{rel} differs from the one the submission was made with "
                             f"({submission.MANIFEST}): grading uses the course's copy, so code "
                             "that needs a change to it does not compile here")
    return notes


HIDDEN_BUILD_FAILED = ("not run: the lab's file compiled with the public tests but did not build "
                       "with the hidden tests")


# Where the system's headers live (the C++ library, Eigen, doctest): outside the grading copy, a
# graded file may read nothing else.
SYSTEM_HEADERS = ("/usr/",)


def foreign_dependency(dep, repo, work):
    """Why a file the compiler read for a graded file must be looked at, or None when it may be
    read. dep: relative to the grading copy when inside it (Workspace.starter_dependencies), else
    absolute. Inside the copy the reference solutions and the tests are off limits; the grading
    folder `work` (the copy and its build) is otherwise fine. Outside it everything is off limits
    but the system's headers, and the instructor's checkout `repo` always is (it holds the
    solutions, and the copy is all a build needs)."""
    if not os.path.isabs(dep):
        if dep.split(os.sep)[0] in ("solutions", "tests"):
            return "a graded file may not use the reference solutions or the tests"
        return None
    real = os.path.realpath(dep)
    if real.startswith(os.path.realpath(work) + os.sep):
        return None
    if real.startswith(os.path.realpath(repo) + os.sep):
        return ("a file of the instructor's checkout, outside the grading copy; a graded file "
                "may not use the reference solutions or the tests")
    if not dep.startswith(SYSTEM_HEADERS):
        return ("a file outside the grading copy and the system's headers "
                f"({', '.join(SYSTEM_HEADERS)})")
    return None


def grade_submission(ws, sub, lab_names, setups, args):
    start = time.monotonic()
    notes = list(sub.notes)
    check = []  # the notes a person must look at: summary.csv's 'check' column
    # Another lab's file (lab02's zip handed in for lab01, say) would otherwise leave only "not
    # submitted" in the report, with no word of the file that did come.
    graded = {setups[name].lab.editable[0] for name in lab_names}
    for rel in sorted(set(sub.files) - graded):
        notes.append(f"{rel} was not graded: this run grades {', '.join(lab_names)} only")
    lab_grades = []
    for name in lab_names:
        s = setups[name]
        lab = s.lab
        rel = lab.editable[0]
        data = sub.files.get(rel)
        if data is None and sub.flat_starter is not None and len(lab_names) == 1:
            data = sub.flat_starter
            notes.append(f"took the submission's top-level starter.cpp as {rel}")
        public = dict(points=s.points, lab=lab.name, hidden=False)
        hidden = dict(points=s.hidden_points, lab=lab.name, hidden=True)
        if data is None:
            why = runner.STATUSES["not_submitted"]
            tests = (runner.not_run(s.cases, status="not_submitted", why=why, **public) +
                     runner.not_run(s.hidden_cases, status="not_submitted", why=why, **hidden))
            lab_grades.append(reports.LabGrade(lab, "not_submitted", tests=tests))
            continue
        notes += changed_headers(sub, lab)
        for inc in submission.suspicious_includes(data):
            check.append(f"{rel} includes \"{inc}\", a file outside its lab's folder: check it "
                         "by hand")
            notes.append(check[-1])
        lg = reports.LabGrade(lab, "ok", file=rel, sha256=submission.sha256(data))
        ws.place(rel, data)
        log(f"grade: {sub.name}: building {lab.name}")
        # The public tests first, alone: the compiler output students see (results.json's
        # visible build entry) must come from a build that never touched the hidden tests.
        public_target, *hidden_targets = ws.targets(lab, "starter")
        ok, out = ws.build_targets([public_target], args.build_timeout)
        # printable: the compiler quotes the student's source lines as they are, escapes too.
        lg.build_output = printable(ws.clean_build_output(out))
        if not ok:
            lg.build_status = "compile_error"
            why = runner.STATUSES["compile_error"]
            if ok is None:  # stopped at --build-timeout: slow code, or a busy machine
                lg.build_timeout = args.build_timeout
                why = (f"not run: the lab's build ran past its time limit "
                       f"({reports.num(args.build_timeout)} s, --build-timeout) and was stopped")
                check.append(f"{rel}: the build of {lab.name} ran past --build-timeout "
                             f"({reports.num(args.build_timeout)} s) and was stopped, so every "
                             "case scores 0; on a busy machine, grade it again with a longer "
                             "limit")
                notes.append(check[-1])
            lg.tests = (runner.not_run(s.cases, status="compile_error", why=why, **public) +
                        runner.not_run(s.hidden_cases, status="compile_error", why=why, **hidden))
            lab_grades.append(lg)
            continue
        # What the compiler read, whatever the #include spelled (a macro, say): a graded file
        # may use its lab's headers, the engine's and the standard library's, never the
        # reference solutions or the tests.
        for dep in ws.starter_dependencies(lab):
            why = foreign_dependency(dep, ws.repo, ws.work)
            if why:
                check.append(f"{rel} compiled {dep} into the graded code (the compiler's "
                             f"dependency list): {why}; check it by hand")
                notes.append(check[-1])
        hidden_ok = True
        if hidden_targets and s.hidden_cases:
            # The hidden tests compiled with the reference, so only linking the student's file
            # can fail here (a function only the hidden tests call, say).
            hidden_ok, out = ws.build_targets(hidden_targets, args.build_timeout)
            if not hidden_ok:
                lg.hidden_build_output = printable(ws.clean_build_output(out))
        log(f"grade: {sub.name}: running {lab.name}'s "
            f"{len(s.cases) + len(s.hidden_cases)} cases")
        common = dict(timeout=s.timeout, mem_mb=s.mem_mb, jobs=args.jobs,
                      clean=ws.relative_paths)
        ws.stamp()
        lg.tests = runner.run_cases(ws.exe(lab, "starter"), s.cases, **public, **common)
        if s.hidden_cases and hidden_ok:
            lg.tests += runner.run_cases(ws.exe(lab, "starter", hidden=True), s.hidden_cases,
                                         **hidden, **common)
        elif s.hidden_cases:
            lg.tests += runner.not_run(s.hidden_cases, status="compile_error",
                                       why=HIDDEN_BUILD_FAILED, **hidden)
        # The cases ran the student's code with the grader's permissions: what it changed in
        # the grading folder is put back before anything else is built or run there.
        try:
            changed = ws.undo_changes()
        except OSError as e:
            raise GradingError(
                f"could not put the grading folder back after {sub.name}'s {lab.name} cases "
                f"({e}): its code may have changed permissions there. Grading stopped, since "
                f"later submissions would be graded in a changed folder; look at {rel}, delete "
                f"the grading folder ({ws.work}) and grade the rest again") from e
        if changed:
            check.append(f"{rel}: its code changed {len(changed)} file(s) of the grading folder "
                         f"while {lab.name}'s cases ran ({listing(changed)}); they were put "
                         "back before the next build; check it by hand")
            notes.append(check[-1])
            log(f"grade: {sub.name}: WARNING: {check[-1]}")
        lab_grades.append(lg)
    settings = {name: {"timeout_s": setups[name].timeout, "mem_mb": setups[name].mem_mb}
                for name in lab_names}
    settings["hidden_tests"] = bool(ws.hidden)
    return reports.Grade(sub.name, sub.path, lab_grades, notes, sub.manifest,
                         time.monotonic() - start, settings, check)


def unique_names(paths):
    """A name per submission for its report folder and summary row: the folder or zip name
    (without .zip). Submissions that share a name are qualified by their parent folders, as many
    as it takes, joined by '-' (sec1/alice.zip, sec2/alice.zip: sec1-alice, sec2-alice). Only the
    same path given twice is told apart by a number, after its whole path (/t/alice.zip twice:
    t-alice, t-alice-2)."""
    parts = []
    for p in paths:
        comps = [c for c in os.path.abspath(p).split(os.sep) if c]
        if comps and comps[-1].lower().endswith(".zip"):
            comps[-1] = comps[-1][:-4]
        parts.append(comps or ["submission"])
    levels = [1] * len(paths)

    def name(i):
        return "-".join(parts[i][-levels[i]:])

    while True:
        names = [name(i) for i in range(len(paths))]
        clashes = [i for i, n in enumerate(names) if names.count(n) > 1]
        grown = False
        for i in clashes:
            if levels[i] < len(parts[i]):
                levels[i] += 1
                grown = True
        if not grown:
            break
    # summary.csv shares the report folder: a submission named so (summary.csv.zip) is numbered.
    # Names are printable: a folder's name that is not UTF-8 would break the reports.
    seen, unique = {"summary.csv": 1}, []
    for n in (printable(n) for n in names):
        seen[n] = seen.get(n, 0) + 1
        unique.append(n if seen[n] == 1 else f"{n}-{seen[n]}")
    return unique


def lab_status(lg):
    """A lab's column in summary.csv: graded, compile_error, not_submitted, or
    hidden_compile_error (the file built with the public tests only)."""
    if lg.build_status != "ok":
        return lg.build_status
    return "graded" if lg.hidden_build_output is None else "hidden_compile_error"


def csv_text(text):
    """A text cell for summary.csv that a spreadsheet shows and does not run: one that starts
    like a formula (=, +, -, @, a tab or a carriage return) gets a leading '. Submission names
    and paths come from the students' folders and zips."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_summary(out_root, grades, errors):
    """summary.csv: a row per submission with its path, each lab's score and status, the
    total, and the notes a person must check. errors: {name: (path, why)} for the submissions
    that could not be graded."""
    labs = sorted({lg.lab.name for g in grades for lg in g.labs})
    path = os.path.join(out_root, "summary.csv")
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submission", "path"] + [c for lab in labs for c in (lab, f"{lab}_status")] +
                   ["score", "max_score", "status", "check"])
        for g in grades:
            by_lab = {lg.lab.name: lg for lg in g.labs}
            cells = []
            for lab in labs:
                lg = by_lab.get(lab)
                cells += [reports.num(lg.score), lab_status(lg)] if lg else ["", "not_graded"]
            w.writerow([csv_text(g.name), csv_text(g.path)] + cells +
                       [reports.num(g.score), reports.num(g.max_score), "graded",
                        csv_text(" | ".join(g.check))])
        for name, (sub_path, why) in errors.items():
            w.writerow([csv_text(name), csv_text(sub_path)] + ["", "not_graded"] * len(labs) +
                       ["", "", "error: " + why.splitlines()[0], ""])
    return path


def listing(paths, most=5):
    """Up to `most` paths, comma-separated, and how many more."""
    shown = ", ".join(printable(p) for p in paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def check_checkout(ws, g):
    """After a submission: a change to the checkout or the hidden tests while it was graded is
    likely its code's doing. The checkout is named in the submission's check column (this run
    goes on with the copy it started with); changed hidden tests stop the run, since every later
    build would compile them."""
    changed = ws.checkout_changes()
    if not changed:
        return
    hidden = [p for p in changed if ws.hidden and p.startswith(ws.hidden + os.sep)]
    if hidden:
        raise GradingError(
            f"the hidden tests changed while {g.name} was graded ({listing(hidden)}): grading "
            f"stopped, since later builds would compile them. Put them back, look at "
            f"{g.name}'s file, and grade the rest again")
    g.check.append(f"your checkout changed while {g.name} was graded ({listing(changed)}): its "
                   "code may have done it, unless someone edited the checkout meanwhile; this "
                   "run went on with the files it started with, and nothing was put back in "
                   "your checkout (git status shows the change); check it by hand")
    g.notes.append(g.check[-1])
    log(f"grade: {g.name}: WARNING: {g.check[-1]}")


def remove_reports(out_dir):
    """Removes the reports an earlier run left for a submission this run could not grade, so that
    its folder does not show an old score beside this run's summary.csv."""
    for name in reports.REPORT_FILES:
        path = os.path.join(out_dir, name)
        if os.path.isfile(path) and not os.path.islink(path):
            os.remove(path)


def check_usage(p, args):
    """The usage errors (exit 2) that need neither the submissions nor a build."""
    for lab in args.lab:
        if not LAB_NAME.match(lab):
            p.error(f"--lab {lab}: expected a name like lab01")
    for lab in dict.fromkeys(args.lab):
        if args.lab.count(lab) > 1:
            p.error(f"--lab {lab} is named twice: each lab is graded once")
    if args.hidden == "":
        p.error("--hidden '': give the folder of hidden tests (DIR/labNN/), or leave the flag "
                "out")
    if args.work == "":
        p.error("--work '': give a folder for the grader's copy and build (default "
                "build/grading)")
    if workspace.holds(args.work, REPO):
        p.error(f"--work {args.work} is the repository or holds it: give a folder of its own "
                "(default build/grading)")
    if args.build_dir == "":
        p.error("--build-dir '': give the build --check-points reads (default build)")
    if args.out == "":
        p.error("--out '': give a folder for the reports, or leave the flag out")
    if args.out and os.path.lexists(args.out) and not os.path.isdir(args.out):
        p.error(f"--out {args.out} is a file: give a folder for the reports")
    for flag, path in (("--work", args.work), ("--out", args.out)):
        if path and os.path.lexists(path) and not os.path.isdir(path):
            p.error(f"{flag} {path} is a file: give a folder")
        file_above = _file_above(path) if path else None
        if file_above:
            p.error(f"{flag} {path} is inside {file_above}, which is a file: give a folder")


def _file_above(path):
    """The nearest existing folder above `path` when it is not a folder (a file), else None."""
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    return None if os.path.isdir(parent) else parent


def grade(args):
    known = source_labs(REPO)
    unknown = [lab for lab in args.lab if lab not in known]
    if unknown:  # before the workspace is touched
        raise GradingError(f"unknown lab(s) {', '.join(unknown)}; this repository has "
                           f"{', '.join(known)}")
    if args.hidden and not os.path.isdir(args.hidden):
        raise GradingError(f"--hidden {args.hidden} is not a folder")
    if args.hidden:
        check_hidden_layout(args.hidden)
    for path in args.submissions:
        if not os.path.exists(path):
            raise GradingError(f"submission {path} does not exist")
    several = len(args.submissions) > 1
    out_root = args.out or "grades"
    names = unique_names(args.submissions)
    grades, errors, setups = [], {}, {}
    with Workspace(REPO, args.work, args.hidden, args.jobs, log) as ws:
        t = time.monotonic()
        ws.sync()
        ws.configure()
        declared = ws.labs()
        if not declared:
            raise GradingError("the grading build declares no labs (labs/CMakeLists.txt)")
        unknown = [lab for lab in args.lab if lab not in declared]
        if unknown:
            raise GradingError(f"unknown lab(s) {', '.join(unknown)}; this repository has "
                               f"{', '.join(declared)}")
        if ws.hidden:
            check_hidden_labs(ws.hidden, declared)
        editable = {rel for lab in declared.values() for rel in lab.editable}
        log(f"grade: workspace ready ({time.monotonic() - t:.1f} s)")
        # Every submission is read, and every lab one of them will be graded on is set up and
        # checked against its reference, before anyone is graded: a lab that cannot be graded
        # stops the run before it has graded some of the class and not the rest.
        def report_dir(name):
            return os.path.join(out_root, name) if (several or not args.out) else out_root

        def not_graded(path, name, e):
            """A submission that cannot be graded: alone, the run's error; in a class, a row.
            Either way the reports an earlier run left for it go, so that no old score stands
            beside this run's error."""
            remove_reports(report_dir(name))
            if not several:
                raise e
            errors[name] = (printable(os.path.abspath(path)), printable(str(e)))
            log(f"grade: {name}: NOT GRADED: {e}")

        loaded = []
        for path, name in zip(args.submissions, names):
            try:
                sub = submission.load(path, editable)
                sub.name = name
                loaded.append((path, sub, choose_labs(sub, args.lab, declared)))
            except SubmissionError as e:
                not_graded(path, name, e)
        for _, _, lab_names in loaded:
            for lab in lab_names:
                if lab not in setups:
                    setups[lab] = prepare_lab(ws, declared[lab], args)
        for path, sub, lab_names in loaded:
            name = sub.name
            try:
                g = grade_submission(ws, sub, lab_names, setups, args)
            except SubmissionError as e:
                not_graded(path, name, e)
                continue
            check_checkout(ws, g)
            out_dir = report_dir(name)
            ws.wrote_reports(reports.write_all(g, out_dir).values())
            grades.append(g)
            print(reports.table(g, verbose=not (several or args.brief)), flush=True)
            print(f"  reports: {out_dir}/{{grade.json,results.json,junit.xml}}\n", flush=True)
    if several:
        os.makedirs(out_root, exist_ok=True)
        path = write_summary(out_root, grades, errors)
        print(reports.summary_table(grades, errors))
        print(f"\nsummary: {path}")
    return 1 if errors else 0


def check_points_cmd(args):
    """Checks that every case of every lab built in --build-dir has points. With --hidden, also
    the hidden tests: their cases are listed from the grading build (--work), which builds each
    lab's hidden tests with its reference solution."""
    labs = declared_labs(args.build_dir)
    if not labs:
        raise GradingError(f"{args.build_dir}/labtests holds no labNN.lab files: configure and "
                           f"build first (cmake --preset default && cmake --build build)")
    if args.hidden and not os.path.isdir(args.hidden):
        raise GradingError(f"--hidden {args.hidden} is not a folder")
    problems, public = [], {}
    for name, lab in labs.items():
        try:
            cases = read_cases(os.path.join(args.build_dir, "labtests", f"{name}.cases"))
            public[name] = load_points(lab.points_path(os.path.join(REPO, "tests")), cases, name)
        except GradingError as e:
            problems.append(str(e))
    hidden = {}
    if args.hidden:
        check_hidden_folders(args.hidden, labs)
        with Workspace(REPO, args.work, args.hidden, args.jobs, log) as ws:
            ws.sync()
            ws.configure()
            grading_labs = ws.labs()
            for name in labs:
                lab = grading_labs.get(name)
                if lab is None:
                    continue
                try:
                    if not ws.hidden_sources(lab):
                        hidden_cases_and_points(ws, lab, [])  # a folder without sources
                    elif name in public:  # else its public points are already a problem
                        ws.build_reference(lab)
                        hidden[name] = hidden_cases_and_points(ws, lab, public[name].values)
                except GradingError as e:
                    problems.append(str(e))
    for name, points in public.items():
        line = f"{name}: {cases_text(len(points.values))}, {reports.num(points.total)} points"
        if name in hidden:
            cases, hp = hidden[name]
            line += (f"; hidden: {cases_text(len(cases))}, {reports.num(hp.total)} points; "
                     f"total {reports.num(points.total + hp.total)} points")
        print(line)
    if problems:
        raise GradingError("\n".join(problems))
    return 0


def _number(kind, low, strict, high):
    """An argparse type: a finite number of `kind` that is > low (strict) or >= low, and at
    most high (beyond it the system's own limits overflow: a timeout's milliseconds, rlimit)."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got '{text}'") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
        if value <= low if strict else value < low:
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low}, "
                                             f"got {text}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:g}, got {text}")
        return value
    return parse


MAX_SECONDS = 1e6           # about 11 days: a timeout in milliseconds still fits 32 bits
MAX_MEM_MB = 1 << 24        # 16 TiB: an address-space limit in bytes still fits
MAX_JOBS = 1024


# The smallest --mem-mb other than 0. A lab's test program needs 6-8 MiB of address space just to
# start (the dynamic loader maps the C++ libraries); below that every case "fails" before doctest
# runs. 64 MiB leaves room for the cases themselves.
MIN_MEM_MB = 64


def _mem_mb(text):
    """An argparse type for --mem-mb: 0 (no limit) or at least MIN_MEM_MB."""
    value = _number(int, 0, False, MAX_MEM_MB)(text)
    if 0 < value < MIN_MEM_MB:
        raise argparse.ArgumentTypeError(
            f"must be 0 (no limit) or at least {MIN_MEM_MB} MiB: a test program needs several MiB "
            f"just to start, got {text}")
    return value


HELP_WIDTH = 100  # the description above is typed to fit it; the options are wrapped to it


def _help_formatter(prog):
    # argparse wraps the options to the terminal's width: on a wide one they ran past the typed
    # description. At most HELP_WIDTH, less on a narrower terminal.
    width = min(HELP_WIDTH, shutil.get_terminal_size().columns - 2)
    return argparse.RawDescriptionHelpFormatter(prog, width=width)


def parser():
    p = argparse.ArgumentParser(prog="tools/grade", description=__doc__,
                                formatter_class=_help_formatter)
    p.add_argument("submissions", nargs="*", metavar="SUBMISSION",
                   help="a folder or a .zip made by tools/submit")
    p.add_argument("--lab", action="append", default=[], metavar="labNN",
                   help="grade this lab (repeatable)")
    p.add_argument("--hidden", metavar="DIR",
                   help="instructor-only tests: DIR/labNN/*.cpp with DIR/labNN/points.txt")
    p.add_argument("--out", metavar="DIR", help="where the reports go (see above)")
    p.add_argument("--work", metavar="DIR", default=os.path.join(REPO, "build", "grading"),
                   help="the grader's copy of the repository and its build: a new or empty "
                        "folder, or one it made before (default: build/grading)")
    p.add_argument("--timeout", type=_number(float, 0, True, MAX_SECONDS), metavar="S",
                   help="seconds one test case may run (default: the lab's own, as in ctest)")
    p.add_argument("--mem-mb", type=_mem_mb, metavar="M",
                   help=f"address-space limit of each process of one test case in MiB, at "
                        f"least {MIN_MEM_MB}, or 0 for none (default: the lab's own)")
    p.add_argument("--build-timeout", type=_number(float, 0, True, MAX_SECONDS), default=300,
                   metavar="S",
                   help="seconds a submission's lab may take to compile (default 300); a "
                        "build past it is stopped and scores 0 as a compile_error, flagged "
                        "in summary.csv's check column. Before grading, the reference "
                        "solution is built in a submission's place, and grading stops "
                        "unless that took at most half of S")
    p.add_argument("-j", "--jobs", type=_number(int, 0, True, MAX_JOBS),
                   default=available_cpus(),
                   help="parallel compile jobs and test cases (default: the CPUs it may use, "
                        "within a container's CPU quota)")
    p.add_argument("--brief", action="store_true", help="one line per lab, no per-test table")
    p.add_argument("--no-reference-check", action="store_true",
                   help="skip checking the limits against the reference solution: that it "
                        "passes every case within the case timeout, and that its build in a "
                        "submission's place takes at most half of --build-timeout")
    p.add_argument("--check-points", action="store_true",
                   help="only check that every case of every built lab has points and print "
                        "each lab's total, then exit; with --hidden, the hidden cases too "
                        "(built in --work) and the public + hidden totals")
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                   help="the build --check-points reads (default: build)")
    return p


def main(argv=None):
    p = parser()
    args = p.parse_args(argv)
    check_usage(p, args)
    try:
        if args.check_points:
            return check_points_cmd(args)
        if not args.submissions:
            parser().error("give at least one SUBMISSION (a folder or a .zip)")
        return grade(args)
    except GradingError as e:
        print(f"grade: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grade: interrupted", file=sys.stderr)
        return 130
