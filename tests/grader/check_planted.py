#!/usr/bin/env python3
"""Checks tools/grade's reports on the planted submissions (grade_planted.py) against
expected.json.

  check_planted.py --out DIR --submission NAME   one submission: its score, the status of each
                                                 case, its notes, and all three reports
  check_planted.py --out DIR --all              the run as a whole: every planted submission
                                                 has an expectation, summary.csv, and the hidden
                                                 tests never entered the grader's copy
  check_planted.py --out DIR --observed          prints what was observed, in expected.json's
                                                 form (to review, then paste)
"""
import argparse
import collections
import csv
import json
import os
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools"))
from grading.reports import validate_gradescope  # noqa: E402
from grading.submission import sha256  # noqa: E402


def load_expected():
    with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as f:
        return json.load(f)


def load(out, name, file):
    path = os.path.join(out, "grades", name, file)
    if not os.path.exists(path):
        raise AssertionError(f"{path} is missing: was '{name}' graded?")
    return path


def statuses(grade):
    return dict(sorted(collections.Counter(t["status"] for lab in grade["labs"]
                                           for t in lab["tests"]).items()))


def check_reports(grade, results, junit_path, timeout_slack):
    """What every report of every submission must satisfy."""
    problems = []
    tests = [t for lab in grade["labs"] for t in lab["tests"]]
    for t in tests:
        want = t["max_score"] if t["status"] == "passed" else 0
        if t["score"] != want:
            problems.append(f"'{t['name']}' is {t['status']} but scores {t['score']}")
        if t["max_score"] <= 0:
            problems.append(f"'{t['name']}' has no points")
        if t["seconds"] > timeout_slack:
            problems.append(f"'{t['name']}' ran {t['seconds']} s, past its time limit")
    if abs(sum(t["score"] for t in tests) - grade["score"]) > 1e-9:
        problems.append("grade.json: score is not the sum of its tests")
    problems += [f"results.json: {p}" for p in validate_gradescope(results)]
    gs = {t["name"]: t for t in results.get("tests", [])}
    for t in tests:
        entry = next((e for n, e in gs.items() if n.endswith(" / " + t["name"])), None)
        if entry is None:
            problems.append(f"results.json has no entry for '{t['name']}'")
            continue
        want = "after_due_date" if t["hidden"] else "visible"
        if entry["visibility"] != want:
            problems.append(f"results.json: '{t['name']}' has visibility {entry['visibility']}, "
                            f"expected {want}")
        if entry["score"] != t["score"] or entry["max_score"] != t["max_score"]:
            problems.append(f"results.json: '{t['name']}' scores differ from grade.json")
    root = ET.parse(junit_path).getroot()
    cases = list(root.iter("testcase"))
    builds = sum(1 for lab in grade["labs"] if lab["build"]["status"] != "ok")
    if len(cases) != len(tests) + builds or int(root.get("tests")) != len(cases):
        problems.append(f"junit.xml has {len(cases)} test cases, expected {len(tests) + builds}")
    bad = sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
    if bad != sum(1 for t in tests if t["status"] not in ("passed", "skipped")) + builds:
        problems.append("junit.xml's failures and errors do not match grade.json")
    if int(root.get("failures")) + int(root.get("errors")) != bad:
        problems.append("junit.xml's failures/errors attributes do not add up")
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    if skipped != sum(1 for t in tests if t["status"] == "skipped"):
        problems.append("junit.xml's skipped cases do not match grade.json")
    if int(root.get("skipped")) != skipped:
        problems.append("junit.xml's skipped attribute does not add up")
    return problems


def check_one(out, name, exp, settings):
    grade = json.load(open(load(out, name, "grade.json"), encoding="utf-8"))
    results = json.load(open(load(out, name, "results.json"), encoding="utf-8"))
    problems = check_reports(grade, results, load(out, name, "junit.xml"),
                             settings["timeout_s"] + 5)
    if grade["max_score"] != settings["max_score"]:
        problems.append(f"max_score {grade['max_score']}, expected {settings['max_score']}")
    if "score" in exp and grade["score"] != exp["score"]:
        problems.append(f"score {grade['score']}, expected {exp['score']}")
    if "statuses" in exp and statuses(grade) != exp["statuses"]:
        problems.append(f"statuses {statuses(grade)}, expected {exp['statuses']}")
    lab = grade["labs"][0]
    if lab["build"]["status"] != exp.get("build", "ok"):
        problems.append(f"build status {lab['build']['status']}, expected "
                        f"{exp.get('build', 'ok')}")
    for text in exp.get("build_output_contains", []):
        if text not in lab["build"]["output"]:
            problems.append(f"the build output lacks '{text}':\n{lab['build']['output']}")
        entry = next((t for t in results["tests"] if t["name"].endswith(": build")), None)
        if entry is None or text not in entry["output"]:
            problems.append(f"results.json's build entry lacks '{text}'")
    if "/src/labs/" in lab["build"]["output"]:
        problems.append("the build output shows the grader's absolute paths")
    for text in exp.get("notes_contain", []):
        if not any(text in n for n in grade["notes"]):
            problems.append(f"no note mentions '{text}'; notes: {grade['notes']}")
    if "same_file_as" in exp:
        with open(os.path.join(REPO, exp["same_file_as"]), "rb") as f:
            if lab["sha256"] != sha256(f.read()):
                problems.append(f"the graded file is not {exp['same_file_as']}")
    return grade, problems


def check_all(out, expected):
    problems = []
    graded = {d for d in os.listdir(os.path.join(out, "grades"))
              if os.path.isdir(os.path.join(out, "grades", d))}
    made = {os.path.splitext(d)[0] for d in os.listdir(os.path.join(out, "submissions"))
            if not d.startswith("_")}
    want = set(expected["submissions"])
    if made - want:
        problems.append("planted submissions without an expectation in expected.json (run "
                        f"check_planted.py --observed): {sorted(made - want)}")
    if want - made:
        problems.append(f"expected.json names submissions that were not made: "
                        f"{sorted(want - made)}")
    if made - graded:
        problems.append(f"submissions without reports: {sorted(made - graded)}")
    with open(os.path.join(out, "grades", "summary.csv"), encoding="utf-8") as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    for name, exp in expected["submissions"].items():
        if "score" in exp and (name not in rows or float(rows[name]["score"]) != exp["score"]):
            problems.append(f"summary.csv: {name} does not score {exp['score']}")
        if name not in rows:
            continue
        status = {"ok": "graded"}.get(exp.get("build", "ok"), exp.get("build"))
        if rows[name].get("lab01_status") != status:
            problems.append(f"summary.csv: {name}'s lab01_status is "
                            f"{rows[name].get('lab01_status')}, expected {status}")
        if not os.path.exists(rows[name].get("path") or "/nonexistent"):
            problems.append(f"summary.csv: {name}'s path {rows[name].get('path')!r} does not "
                            "exist")
    with open(os.path.join(out, "hidden_in_copy.json"), encoding="utf-8") as f:
        leaked = json.load(f)  # written by grade_planted.py right after grading
    if leaked:
        problems.append(f"hidden test files were copied into the grader's source copy: {leaked}")
    return problems


def observed(out, expected):
    result = {}
    for name in sorted(os.listdir(os.path.join(out, "grades"))):
        path = os.path.join(out, "grades", name, "grade.json")
        if os.path.exists(path):
            g = json.load(open(path, encoding="utf-8"))
            result[name] = {"score": g["score"], "statuses": statuses(g)}
            if g["labs"][0]["build"]["status"] != "ok":
                result[name]["build"] = g["labs"][0]["build"]["status"]
            old = expected["submissions"].get(name, {})
            for key in ("notes_contain", "build_output_contains", "same_file_as", "about"):
                if key in old:
                    result[name][key] = old[key]
    print(json.dumps(result, indent=2))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--submission")
    g.add_argument("--all", action="store_true")
    g.add_argument("--observed", action="store_true")
    a = p.parse_args()
    expected = load_expected()
    if a.observed:
        observed(a.out, expected)
        return 0
    if a.all:
        problems = check_all(a.out, expected)
        label = "the planted run"
    else:
        exp = expected["submissions"].get(a.submission)
        if exp is None:
            print(f"expected.json has no entry for '{a.submission}'")
            return 1
        try:
            grade, problems = check_one(a.out, a.submission, exp, expected["settings"])
        except AssertionError as e:
            print(e)
            return 1
        print(f"{a.submission}: {grade['score']} / {grade['max_score']}  {statuses(grade)}")
        label = a.submission
    if problems:
        print(f"{label}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
        return 1
    print(f"{label}: as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
