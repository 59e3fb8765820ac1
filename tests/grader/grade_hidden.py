#!/usr/bin/env python3
"""Grades lab06 with the example hidden tests (tests/grader/hidden/lab06/), which use what the
lab's public tests use: their helper header tests/lab06/lab06_util.h and their compile definition
SPECLAB_DATA_DIR (book/instructors.md, "Hidden tests"). Then checks that a hidden source that does
not compile stops grading with a message that names the hidden tests, their target and the file.

The submissions (generated):
  solution                  lab06's reference: every public and hidden case passes
  starter                   the untouched starter (from git HEAD): every case throws its TODO
  mutant-always_speculate   tests/mutants/lab06/always_speculate.mutant: the hidden choose_k
                            case catches it

Last, tools/grade --check-points --hidden: it prints each lab's public + hidden totals, and a
hidden case without points is an error that names it.

usage: grade_hidden.py --out DIR --work DIR --build-dir BUILD [--jobs N]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools"))
from check_planted import check_reports  # noqa: E402
from grade_planted import folder, head_starter, read  # noqa: E402
from grading.labs import read_points  # noqa: E402

LAB, LAB_DIR = "lab06", "lab06_economics"
EDITABLE = f"labs/{LAB_DIR}/starter.cpp"
SOLUTION = os.path.join(REPO, "solutions", LAB_DIR, "solution.cpp")
HIDDEN = os.path.join(HERE, "hidden")
CHOOSE_K = "hidden: choose_k is the best k for every profile on the CPU-like toy cost model"
BROKEN = "test_hidden_broken.cpp"


def mutant_of(name, gen):
    """lab06's solution with the mutant `name` applied (grade_planted.mutant works on lab01's)."""
    out = os.path.join(gen, name + ".cpp")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_mutant.py"), SOLUTION,
                    os.path.join(REPO, "tests", "mutants", LAB, name + ".mutant"), out],
                   check=True)
    return read(out)


def tools_grade(args):
    cmd = [sys.executable, os.path.join(REPO, "tools", "grade"), *args]
    print("running:", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(p.stdout[-4000:] + p.stderr[-4000:], flush=True)
    return p


def check_graded(grades, name, public_pts, hidden_pts, want_hidden):
    """want_hidden: {case: status} for the hidden cases."""
    problems = []
    d = os.path.join(grades, name)
    try:
        with open(os.path.join(d, "grade.json"), encoding="utf-8") as f:
            grade = json.load(f)
        with open(os.path.join(d, "results.json"), encoding="utf-8") as f:
            results = json.load(f)
    except OSError as e:
        return [f"{name}: {e}"]
    problems += [f"{name}: {p}" for p in check_reports(grade, results,
                                                       os.path.join(d, "junit.xml"), 10**6)]
    (lab,) = grade["labs"]
    hidden = {t["name"]: t["status"] for t in lab["tests"] if t["hidden"]}
    if hidden != want_hidden:
        problems.append(f"{name}: hidden cases {hidden}, expected {want_hidden}")
    want_max = public_pts.total + hidden_pts.total
    if lab["max_score"] != want_max:
        problems.append(f"{name}: max_score {lab['max_score']}, expected {want_max} "
                        f"({public_pts.total} public + {hidden_pts.total} hidden)")
    if "hidden" in results["output"].lower():
        problems.append(f"{name}: results.json's top-level output mentions hidden cases")
    return problems


def check_points(a, public_pts, hidden_pts):
    """tools/grade --check-points --hidden: public + hidden totals per lab, and a hidden case
    without points is an error."""
    problems = []
    common = ["--check-points", "--build-dir", a.build_dir, "--work", a.work,
              "--jobs", str(a.jobs)]
    r = tools_grade([*common, "--hidden", HIDDEN])
    if r.returncode != 0:
        problems.append(f"--check-points --hidden exited {r.returncode}, expected 0")
    for lab in ("lab01", LAB):
        pub = read_points(os.path.join(REPO, "tests", lab, "points.txt"))
        hid = read_points(os.path.join(HIDDEN, lab, "points.txt"))
        n = lambda x: int(x) if float(x).is_integer() else x  # noqa: E731
        want = (f"{lab}: {len(pub.values)} cases, {n(pub.total)} points; hidden: "
                f"{len(hid.values)} cases, {n(hid.total)} points; total "
                f"{n(pub.total + hid.total)} points")
        if want not in r.stdout.splitlines():
            problems.append(f"--check-points --hidden does not print '{want}'")
    if hidden_pts.total != 4 or public_pts.total <= 0:
        problems.append("the example's hidden lab06 points changed: update this test")
    missing = os.path.join(a.out, "hidden-missing-points")
    shutil.copytree(HIDDEN, missing)
    pts = os.path.join(missing, LAB, "points.txt")
    with open(pts, encoding="utf-8") as f:
        lines = [line for line in f if CHOOSE_K not in line]
    with open(pts, "w", encoding="utf-8") as f:
        f.writelines(lines)
    r = tools_grade([*common, "--hidden", missing])
    if r.returncode != 1 or f"gives no points to 1 {LAB} hidden test case" not in r.stderr \
            or CHOOSE_K not in r.stderr:
        problems.append(f"--check-points with a hidden case without points exited "
                        f"{r.returncode} without naming the case")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--build-dir", required=True, help="the project's build (for --check-points)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    root = os.path.join(a.out, "submissions")
    gen = os.path.join(a.out, "generated")
    os.makedirs(gen)
    subs = [folder(root, "solution", {EDITABLE: read(SOLUTION)}),
            folder(root, "starter", {EDITABLE: head_starter(EDITABLE)}),
            folder(root, "mutant-always_speculate",
                   {EDITABLE: mutant_of("always_speculate", gen)})]
    public_pts = read_points(os.path.join(REPO, "tests", LAB, "points.txt"))
    hidden_pts = read_points(os.path.join(HIDDEN, LAB, "points.txt"))
    problems = []

    grades = os.path.join(a.out, "grades")
    r = tools_grade([*subs, "--lab", LAB, "--hidden", HIDDEN, "--out", grades, "--work", a.work,
                     "--jobs", str(a.jobs)])
    if r.returncode != 0:
        problems.append(f"tools/grade exited with {r.returncode}: grading lab06 with hidden tests "
                        "that include tests/lab06/lab06_util.h and use SPECLAB_DATA_DIR must work")
    else:
        every = {n: "passed" for n in hidden_pts.values}
        problems += check_graded(grades, "solution", public_pts, hidden_pts, every)
        problems += check_graded(grades, "starter", public_pts, hidden_pts,
                                 {n: "exception" for n in hidden_pts.values})
        problems += check_graded(grades, "mutant-always_speculate", public_pts, hidden_pts,
                                 every | {CHOOSE_K: "failed"})
        with open(os.path.join(grades, "solution", "grade.json"), encoding="utf-8") as f:
            if json.load(f)["score"] != public_pts.total + hidden_pts.total:
                problems.append("the reference does not get full marks")

    # A hidden source that does not compile: grading stops, and says so in words that name the
    # hidden tests, their target and the file (not "the reference solution does not build").
    broken = os.path.join(a.out, "hidden-broken")
    shutil.copytree(HIDDEN, broken)
    with open(os.path.join(broken, LAB, BROKEN), "w", encoding="utf-8") as f:
        f.write('#include <doctest/doctest.h>\n#include "economics.h"\n'
                'TEST_CASE("hidden: broken") { CHECK(speclab::no_such_function(1) == 2); }\n')
    with open(os.path.join(broken, LAB, "points.txt"), "a", encoding="utf-8") as f:
        f.write("1  hidden: broken\n")
    r = tools_grade([subs[0], "--lab", LAB, "--hidden", broken, "--out",
                     os.path.join(a.out, "grades-broken"), "--work", a.work, "--jobs",
                     str(a.jobs)])
    if r.returncode != 1:
        problems.append(f"with a hidden source that does not compile tools/grade exited "
                        f"{r.returncode}, expected 1")
    for text in (f"the hidden tests of {LAB} do not build", f"target {LAB}_hidden_solution",
                 f"the errors are in {BROKEN}", "no_such_function"):
        if text not in r.stderr:
            problems.append(f"the message for a hidden source that does not compile lacks "
                            f"'{text}'")
    if "the reference solution" in r.stderr:
        problems.append("a hidden source that does not compile is blamed on the reference")

    problems += check_points(a, public_pts, hidden_pts)
    if problems:
        print(f"{len(problems)} problem(s):\n  " + "\n  ".join(problems))
        return 1
    print("lab06 graded with hidden tests that use the public tests' helpers: as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
