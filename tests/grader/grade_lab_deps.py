#!/usr/bin/env python3
"""Grades planted lab07 submissions in one tools/grade run and checks that lab07, which builds on
labs 01-05 (LAB_DEPS in labs/CMakeLists.txt), is graded on its own file only: the grading build
links the reference solutions of labs 01-05 (book/instructors.md, "Labs that build on earlier
labs"), so neither the student's earlier labs nor which labs are graded, in which order, change
lab07's grade.

The submissions (generated; each folder's MANIFEST.json names the labs to grade, in order):
  lab07-alone             lab07's reference as labs/lab07_real_model/starter.cpp, nothing else
  lab05-todo-first        the untouched lab05 starter (its TODOs), then lab07's reference
  lab05-broken-first      a lab05 file that does not compile, then lab07's reference
  all-solutions-07-first  every lab's reference, lab07 graded before lab05

Expected: lab07 scores the same in all four, case by case: every case passes, except that the
"real model:" cases need the SmolLM2 file (tests/support/model_path.h): without it they are
skipped and score 0. lab05 scores 0 (every case throws its TODO), a compile error, and full marks.
The run uses --no-reference-check (the planted lab01 run covers that check); without the model
the check would stop grading, because the reference's model cases are skipped too.

usage: grade_lab_deps.py --out DIR --work DIR [--jobs N]
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
from grade_planted import folder, read  # noqa: E402
from grading.labs import read_points, source_labs  # noqa: E402
from grading.submission import MANIFEST, MANIFEST_FORMAT  # noqa: E402

LAB, DEP = "lab07", "lab05"
MODEL_PREFIX = "real model:"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_present():
    """Whether the lab07 model cases find the model: the rule of tests/support/model_path.h."""
    path = os.environ.get("SPECLAB_MODEL")
    if not path:
        cache = os.environ.get("SPECLAB_CACHE") or (
            os.path.join(os.environ["HOME"], ".cache", "speclab") if os.environ.get("HOME")
            else None)
        if not cache:
            return False
        path = os.path.join(cache, MODEL_FILE)
    return os.path.isfile(path)


def editable(folder_name):
    return f"labs/{folder_name}/starter.cpp"


def solution(folder_name):
    return read(os.path.join(REPO, "solutions", folder_name, "solution.cpp"))


def head_file(rel):
    """A file as committed (a student's untouched starter), or the working tree's outside git."""
    try:
        return subprocess.run(["git", "-C", REPO, "show", f"HEAD:{rel}"], check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return read(os.path.join(REPO, rel))


def make_submissions(root, labs):
    """{name: path} of the planted submissions, in grading order."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    lab, dep = editable(labs[LAB]), editable(labs[DEP])
    ours = {lab: solution(labs[LAB])}
    todo = head_file(dep)
    plans = {
        "lab07-alone": (ours, [LAB]),
        "lab05-todo-first": ({dep: todo, **ours}, [DEP, LAB]),
        "lab05-broken-first": ({dep: todo + b"\nthis line does not compile;\n", **ours},
                               [DEP, LAB]),
        "all-solutions-07-first": ({editable(d): solution(d) for d in labs.values()},
                                   [LAB, DEP]),
    }
    subs = {}
    for name, (files, order) in plans.items():
        manifest = json.dumps({"format": MANIFEST_FORMAT, "labs": order}).encode()
        subs[name] = folder(root, name, {**files, MANIFEST: manifest})
    return subs


def lab_grade(grade, name):
    return next((lg for lg in grade["labs"] if lg["lab"] == name), None)


def check(grades_dir, subs, with_model):
    problems = []
    points = read_points(os.path.join(REPO, "tests", LAB, "points.txt")).values
    dep_points = read_points(os.path.join(REPO, "tests", DEP, "points.txt")).values
    want = {n: "passed" if with_model or not n.startswith(MODEL_PREFIX) else "skipped"
            for n in points}
    want_score = sum(p for n, p in points.items() if want[n] == "passed")
    want_dep = {"lab07-alone": None, "lab05-todo-first": (0, "ok"),
                "lab05-broken-first": (0, "compile_error"),
                "all-solutions-07-first": (sum(dep_points.values()), "ok")}
    for name in subs:
        d = os.path.join(grades_dir, name)
        try:
            with open(os.path.join(d, "grade.json"), encoding="utf-8") as f:
                grade = json.load(f)
            with open(os.path.join(d, "results.json"), encoding="utf-8") as f:
                results = json.load(f)
        except OSError as e:
            problems.append(f"{name}: no reports ({e})")
            continue
        problems += [f"{name}: {p}" for p in check_reports(grade, results,
                                                           os.path.join(d, "junit.xml"), 45)]
        g = lab_grade(grade, LAB)
        if g is None:
            problems.append(f"{name}: {LAB} was not graded")
            continue
        got = {t["name"]: t for t in g["tests"]}
        for case, status in want.items():
            t = got.get(case)
            if t is None:
                problems.append(f"{name}: {LAB} has no result for '{case}'")
            elif t["status"] != status:
                problems.append(f"{name}: {LAB} '{case}' is {t['status']} ({t['summary']}), "
                                f"expected {status}")
            elif status == "skipped" and "model" not in t["summary"]:
                problems.append(f"{name}: {LAB} '{case}' was skipped without saying it lacks "
                                f"the model: {t['summary']}")
        if g["score"] != want_score:
            problems.append(f"{name}: {LAB} scores {g['score']}, expected {want_score}")
        dep = lab_grade(grade, DEP)
        if want_dep[name] is None:
            if dep is not None:
                problems.append(f"{name}: {DEP} was graded, but the manifest names only {LAB}")
            continue
        score, build = want_dep[name]
        if dep is None:
            problems.append(f"{name}: {DEP} was not graded")
            continue
        if (dep["score"], dep["build"]["status"]) != (score, build):
            problems.append(f"{name}: {DEP} scores {dep['score']} with build "
                            f"{dep['build']['status']}, expected {score} with build {build}")
        if name == "lab05-todo-first":
            bad = [t["name"] for t in dep["tests"]
                   if t["status"] != "exception" or f"TODO({DEP})" not in t["summary"]]
            if bad:
                problems.append(f"{name}: {len(bad)} {DEP} cases do not throw the starter's "
                                f"TODO, such as '{bad[0]}': was the planted file graded?")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    labs = source_labs(REPO)
    subs = make_submissions(os.path.join(a.out, "submissions"), labs)
    grades = os.path.join(a.out, "grades")
    shutil.rmtree(grades, ignore_errors=True)
    # The planted lab01 run's --hidden (it holds no lab05 or lab07 tests), so both runs share one
    # configuration of the grading build.
    cmd = [sys.executable, os.path.join(REPO, "tools", "grade"), *subs.values(),
           "--hidden", os.path.join(HERE, "hidden"), "--no-reference-check", "--brief",
           "--out", grades, "--work", a.work, "--jobs", str(a.jobs)]
    print("running:", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    if rc != 0:
        print(f"tools/grade exited with {rc}: grading the planted submissions must work (exit 0)")
        return 1
    with_model = model_present()
    print(f"the SmolLM2 model is {'present' if with_model else 'absent'}: lab07's "
          f"'{MODEL_PREFIX}' cases are expected to {'pass' if with_model else 'be skipped'}")
    problems = check(grades, subs, with_model)
    if problems:
        print(f"{len(problems)} problem(s):\n  " + "\n  ".join(problems))
        return 1
    print(f"{LAB} is graded on its own file only, in all {len(subs)} planted submissions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
