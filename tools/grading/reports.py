"""What tools/grade writes: a terminal table, grade.json, junit.xml and Gradescope's results.json.

grade.json is the complete record (format 'speclab-grade/1'). results.json follows Gradescope's
autograder specification (https://gradescope-autograders.readthedocs.io/en/latest/specs/):
a top-level score and one entry per test with name, score, max_score, status ('passed' or
'failed'), output and visibility; hidden tests are 'after_due_date'. The top-level output counts
and scores the visible tests only, so it reveals nothing about hidden ones before the due date.
junit.xml is for CI dashboards: a check that failed is a <failure>, a skipped case is <skipped/>
(it scores 0), and anything else that kept a test from passing (exception, crash, timeout,
memory, compile error) is an <error>.
"""
import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from .runner import STATUSES, trim

GRADE_FORMAT = "speclab-grade/1"
BUILD_OUTPUT_KEEP = 12000


@dataclass
class LabGrade:
    lab: object                 # labs.Lab
    build_status: str           # ok, compile_error, not_submitted
    build_output: str = ""      # compiler output (warnings too), paths relative to the repo
    file: str = None            # the graded file, repository-relative
    sha256: str = None
    tests: list = field(default_factory=list)  # [runner.TestResult]
    hidden_build_output: str = None  # the output of a failed build of the hidden tests alone
    build_timeout: float = None  # set when the build ran past this many seconds and was stopped

    @property
    def score(self):
        return sum(t.score for t in self.tests)

    @property
    def max_score(self):
        return sum(t.max_score for t in self.tests)


@dataclass
class Grade:
    name: str
    path: str
    labs: list                  # [LabGrade]
    notes: list
    manifest: dict = None
    seconds: float = 0.0
    settings: dict = field(default_factory=dict)
    check: list = field(default_factory=list)  # the notes a person must look at (also in notes)

    @property
    def score(self):
        return sum(lg.score for lg in self.labs)

    @property
    def max_score(self):
        return sum(lg.max_score for lg in self.labs)


def num(x):
    """2.0 -> 2, 2.5 -> 2.5, 0.125 -> 0.125: points as people write them. Rounded to 6 decimals,
    which only drops the error of adding floats (0.1 * 3): rounding to fewer would report a case
    of 0.125 points as 0.12 beside a total that counts it as 0.125, and the tests of
    results.json would not add up to its score."""
    x = round(float(x), 6)
    return int(x) if x.is_integer() else x


def test_title(t):
    where = t.suite or t.lab
    return f"{'[hidden] ' if t.hidden else ''}{where} / {t.name}"


# ---- terminal ----
def suites(lab_grade):
    """A lab's cases by suite ("[hidden] " before a hidden one's name), suites in the order of
    their first case, each suite's cases in their order. doctest lists cases by file and line,
    and a file may come back to a suite after another one."""
    groups = {}
    for t in lab_grade.tests:
        name = ("[hidden] " if t.hidden else "") + (t.suite or lab_grade.lab.name)
        groups.setdefault(name, []).append(t)
    return groups


def table(grade, verbose=True):
    lines = [f"== {grade.name}: {num(grade.score)} / {num(grade.max_score)}  ({grade.path})"]
    for lg in grade.labs:
        pub = [t for t in lg.tests if not t.hidden]
        hid = [t for t in lg.tests if t.hidden]
        parts = [f"{num(sum(t.score for t in pub))} / {num(sum(t.max_score for t in pub))}"]
        if hid:
            parts.append(f"hidden {num(sum(t.score for t in hid))} / "
                         f"{num(sum(t.max_score for t in hid))}")
        lines.append(f"  {lg.lab.name} ({lg.lab.title}): {num(lg.score)} / {num(lg.max_score)}"
                     f"  [{', '.join(parts)}]")
        if lg.build_status == "compile_error":
            lines.append(f"    BUILD STOPPED after {num(lg.build_timeout)} s (--build-timeout): "
                         "every case of this lab scores 0. Compiler output so far:"
                         if lg.build_timeout is not None else
                         "    COMPILE ERROR: every case of this lab scores 0. Compiler output:")
            out = lg.build_output.splitlines()
            lines += ["      " + line for line in out[:60]]
            if len(out) > 60:
                lines.append(f"      [... {len(out) - 60} more lines in grade.json ...]")
            continue
        if lg.build_status == "not_submitted":
            lines.append(f"    NOT SUBMITTED: the submission has no {lg.lab.editable[0]}")
            continue
        if lg.hidden_build_output is not None:
            lines.append("    HIDDEN TESTS DID NOT BUILD with this file: every hidden case scores "
                         "0. Build output:")
            out = lg.hidden_build_output.splitlines()
            lines += ["      " + line for line in out[:30]]
            if len(out) > 30:
                lines.append(f"      [... {len(out) - 30} more lines in grade.json ...]")
        if not verbose:
            continue
        lines.append(f"    {'status':<14}{'points':>9}  test")
        for suite_name, tests in suites(lg).items():
            lines.append(f"    {suite_name}")
            for t in tests:
                label = t.status if t.status == "passed" else t.status.upper()
                pts = f"{num(t.score)} / {num(t.max_score)}"
                lines.append(f"      {label:<12}{pts:>9}  {t.name}")
                if t.status != "passed":
                    lines.append(f"      {'':<12}{'':>9}    -> {t.summary}")
    for n in grade.notes:
        lines.append(f"  note: {n}")
    return "\n".join(lines)


def summary_table(grades, errors):
    labs = sorted({lg.lab.name for g in grades for lg in g.labs})
    width = max([10] + [len(g.name) for g in grades] + [len(n) for n in errors])
    lines = [f"{'submission':<{width}}  " + "  ".join(f"{lab:>8}" for lab in labs) +
             f"  {'total':>11}"]
    for g in grades:
        cells = []
        for lab in labs:
            lg = next((x for x in g.labs if x.lab.name == lab), None)
            cells.append(f"{num(lg.score) if lg else '-':>8}")
        lines.append(f"{g.name:<{width}}  " + "  ".join(cells) +
                     f"  {num(g.score):>5} / {num(g.max_score):<4}" +
                     ("  CHECK BY HAND (see its notes)" if g.check else ""))
    for name, (_, why) in errors.items():
        lines.append(f"{name:<{width}}  NOT GRADED: {why.splitlines()[0]}")
    return "\n".join(lines)


# ---- grade.json ----
def grade_json(grade):
    return {
        "format": GRADE_FORMAT,
        "submission": {"name": grade.name, "path": grade.path, "manifest": grade.manifest},
        "score": num(grade.score),
        "max_score": num(grade.max_score),
        "labs": [{
            "lab": lg.lab.name,
            "title": lg.lab.title,
            "score": num(lg.score),
            "max_score": num(lg.max_score),
            "build": {"status": lg.build_status, "timed_out": lg.build_timeout is not None,
                      "output": trim(lg.build_output, BUILD_OUTPUT_KEEP)} | (
                {"hidden_output": trim(lg.hidden_build_output, BUILD_OUTPUT_KEEP)}
                if lg.hidden_build_output is not None else {}),
            "file": lg.file,
            "sha256": lg.sha256,
            "tests": [{
                "name": t.name, "suite": t.suite, "hidden": t.hidden,
                "score": num(t.score), "max_score": num(t.max_score), "status": t.status,
                "summary": t.summary, "output": t.output, "seconds": round(t.seconds, 3),
            } for t in lg.tests],
        } for lg in grade.labs],
        "notes": grade.notes,
        "seconds": round(grade.seconds, 2),
        "settings": grade.settings,
        "statuses": STATUSES,
    }


# ---- Gradescope results.json ----
GS_VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
GS_TOP_FIELDS = {"score", "execution_time", "output", "output_format", "test_output_format",
                 "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
                 "leaderboard"}
GS_TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output",
                  "output_format", "tags", "visibility", "extra_data"}


def gradescope_json(grade):
    tests = []
    for lg in grade.labs:
        if lg.build_status != "ok":
            if lg.build_timeout is not None:
                why = (f"'s build ran past its time limit of {num(lg.build_timeout)} s and was "
                       "stopped; every case of the lab scores 0. Compiler output so far:\n\n")
            elif lg.build_status == "compile_error":
                why = " did not compile; every case of the lab scores 0. Compiler output:\n\n"
            else:
                why = f" was not submitted: the submission has no {lg.lab.editable[0]}."
            if lg.build_status == "compile_error":
                why += trim(lg.build_output, BUILD_OUTPUT_KEEP)
            tests.append({"name": f"{lg.lab.name}: build", "score": 0, "max_score": 0,
                          "status": "failed", "output": f"{lg.lab.name}{why}",
                          "visibility": "visible"})
        for t in lg.tests:
            if t.status == "passed":
                output = f"Passed ({t.seconds:.2f} s)."
            else:
                output = f"{t.summary}\n\n{t.output}".rstrip()
            tests.append({
                "name": test_title(t),
                "score": num(t.score),
                "max_score": num(t.max_score),
                "status": "passed" if t.status == "passed" else "failed",
                "output": output,
                "visibility": "after_due_date" if t.hidden else "visible",
                "tags": [lg.lab.name, t.status],
            })
    # Students read this before the due date: it counts and scores the visible cases only, so
    # it says nothing about hidden ones (not even that there are any).
    summary = []
    for lg in grade.labs:
        pub = [t for t in lg.tests if not t.hidden]
        state = {"compile_error": "did not compile; ",
                 "not_submitted": "not submitted; "}.get(lg.build_status, "")
        if lg.build_timeout is not None:
            state = "its build did not finish in time; "
        summary.append(f"{lg.lab.name} ({lg.lab.title}): {state}"
                       f"{num(sum(t.score for t in pub))} / {num(sum(t.max_score for t in pub))} "
                       f"points from its {len(pub)} visible test cases "
                       f"({sum(t.status == 'passed' for t in pub)} passed)")
    output = "\n".join(summary + [f"Note: {n}" for n in grade.notes])
    return {"score": num(grade.score), "execution_time": int(round(grade.seconds)),
            "output": output, "tests": tests}


def validate_gradescope(obj):
    """Problems with obj as a Gradescope results.json (an empty list when it is valid): the
    documented fields only, with the documented types, and a score that adds up."""
    problems = []

    def isnum(x):
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if not isinstance(obj, dict):
        return ["results.json is not a JSON object"]
    problems += [f"unknown top-level field '{k}'" for k in obj if k not in GS_TOP_FIELDS]
    if not isnum(obj.get("score")):
        problems.append("top-level 'score' is missing or not a number")
    tests = obj.get("tests")
    if not isinstance(tests, list):
        return problems + ["'tests' is missing or not a list"]
    for i, t in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where} is not an object")
            continue
        problems += [f"{where}: unknown field '{k}'" for k in t if k not in GS_TEST_FIELDS]
        for key in ("name", "output"):
            if not isinstance(t.get(key), str):
                problems.append(f"{where}: '{key}' is missing or not a string")
        for key in ("score", "max_score"):
            if not isnum(t.get(key)):
                problems.append(f"{where}: '{key}' is missing or not a number")
        if t.get("status") not in ("passed", "failed"):
            problems.append(f"{where}: 'status' must be 'passed' or 'failed'")
        if t.get("visibility") not in GS_VISIBILITY:
            problems.append(f"{where}: 'visibility' must be one of {sorted(GS_VISIBILITY)}")
        if isnum(t.get("score")) and isnum(t.get("max_score")) and t["score"] > t["max_score"]:
            problems.append(f"{where}: score exceeds max_score")
    if isnum(obj.get("score")) and all(isinstance(t, dict) and isnum(t.get("score"))
                                       for t in tests):
        total = sum(t["score"] for t in tests)
        if abs(total - obj["score"]) > 1e-6:
            problems.append(f"top-level score {obj['score']} != sum of test scores {total}")
    return problems


# ---- JUnit XML ----
_XML_BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text):
    return _XML_BAD.sub("?", text)


def junit_xml(grade):
    root = ET.Element("testsuites", name=_x(f"SpecLab grade: {grade.name}"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for lg in grade.labs:
        groups = suites(lg)
        if lg.build_status != "ok":
            groups = {f"{lg.lab.name}: build": []} | groups
        for suite_name, tests in groups.items():
            suite = ET.SubElement(root, "testsuite", name=_x(suite_name))
            counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
            if not tests:  # the build entry
                case = ET.SubElement(suite, "testcase", classname=lg.lab.name, name="build")
                err = ET.SubElement(case, "error", type=lg.build_status,
                                    message=f"{lg.lab.name}: {lg.build_status}")
                err.text = _x(trim(lg.build_output, BUILD_OUTPUT_KEEP))
                counts["tests"] += 1
                counts["errors"] += 1
            for t in tests:
                case = ET.SubElement(suite, "testcase", classname=_x(suite_name),
                                     name=_x(t.name), time=f"{t.seconds:.3f}")
                props = ET.SubElement(case, "properties")
                for k, v in (("points", num(t.score)), ("max_points", num(t.max_score)),
                             ("status", t.status), ("hidden", str(t.hidden).lower())):
                    ET.SubElement(props, "property", name=k, value=str(v))
                counts["tests"] += 1
                if t.status == "skipped":  # scores 0, but neither a failure nor an error
                    counts["skipped"] += 1
                    el = ET.SubElement(case, "skipped", message=_x(t.summary))
                    el.text = _x(t.output)
                elif t.status != "passed":
                    kind = "failure" if t.status == "failed" else "error"
                    counts["failures" if kind == "failure" else "errors"] += 1
                    el = ET.SubElement(case, kind, type=t.status, message=_x(t.summary))
                    el.text = _x(t.output)
            for k, v in counts.items():
                suite.set(k, str(v))
                totals[k] += v
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("time", f"{grade.seconds:.2f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


REPORT_FILES = ("grade.json", "results.json", "junit.xml")  # what write_all writes


def write_all(grade, out_dir):
    """Writes grade.json, results.json and junit.xml into out_dir; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    texts = (json.dumps(grade_json(grade), indent=2) + "\n",
             json.dumps(gradescope_json(grade), indent=2) + "\n", junit_xml(grade))
    for name, text in zip(REPORT_FILES, texts):
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        paths[name] = path
    return paths
