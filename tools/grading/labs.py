"""The labs as the grader sees them.

A lab is declared once in labs/CMakeLists.txt with speclab_add_lab(). Configuring writes
build/labtests/labNN.lab (its folder, timeout and memory limit) and building its solution writes
build/labtests/labNN.cases (its test cases), so the grader finds every lab without a list of its
own. What the grader needs beyond the build is one points file per lab, tests/labNN/points.txt.
"""
import glob
import math
import os
import re
from dataclasses import dataclass

from . import GradingError

LAB_NAME = re.compile(r"^lab\d\d$")


def editable_files(lab_dir):
    """The files a student edits for the lab in labs/<lab_dir>/, relative to the repository root
    (the one file speclab_add_lab compiles as the starter). A submission's other files are
    ignored."""
    return [f"labs/{lab_dir}/starter.cpp"]


def reference_file(lab_dir):
    """The reference solution of the lab's editable file, relative to the repository root: a
    correct submission's file, against which the grader checks its limits."""
    return f"solutions/{lab_dir}/solution.cpp"


def lab_headers(repo, lab_dir):
    """The headers of labs/<lab_dir>/, relative to the repository root: the student's file is
    compiled against the grading repository's copies, whatever the student's say."""
    return sorted(os.path.relpath(p, repo).replace(os.sep, "/")
                  for p in glob.glob(os.path.join(repo, "labs", lab_dir, "*.h")))


@dataclass(frozen=True)
class Lab:
    name: str        # "lab01"
    dir: str         # "lab01_prompt_lookup": labs/<dir>/, solutions/<dir>/
    timeout: float   # seconds one case may run (speclab_add_lab TIMEOUT)
    mem_mb: int      # address-space limit of one case

    @property
    def editable(self):
        return editable_files(self.dir)

    @property
    def reference(self):
        return reference_file(self.dir)

    @property
    def title(self):
        return self.dir.split("_", 1)[1].replace("_", " ") if "_" in self.dir else self.dir

    def points_path(self, tests_root):
        """tests_root/labNN/points.txt; tests_root is tests/ or a --hidden folder."""
        return os.path.join(tests_root, self.name, "points.txt")


def declared_labs(build_dir):
    """{name: Lab} for every lab the build at build_dir declares (labtests/labNN.lab)."""
    labs = {}
    for path in sorted(glob.glob(os.path.join(build_dir, "labtests", "lab*.lab"))):
        name = os.path.basename(path)[:-len(".lab")]
        if not LAB_NAME.match(name):
            continue
        fields = {}
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                fields[key] = value
        try:
            labs[name] = Lab(name, fields["dir"], float(fields["timeout"]), int(fields["mem_mb"]))
        except (KeyError, ValueError) as e:
            raise GradingError(f"{path} is malformed ({e}): reconfigure the build") from e
    return labs


def source_labs(repo):
    """{name: folder} for every labs/labNN_*/ folder with a starter.cpp (no build needed)."""
    labs = {}
    for path in sorted(glob.glob(os.path.join(repo, "labs", "lab[0-9][0-9]_*", "starter.cpp"))):
        folder = os.path.basename(os.path.dirname(path))
        labs.setdefault(folder[:5], folder)
    return labs


def read_cases(path):
    """The case names listed in a labNN.cases file, in order."""
    if not os.path.exists(path):
        raise GradingError(f"{path} is missing: the lab's solution was not built")
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


@dataclass
class Points:
    path: str
    values: dict  # case name -> points, in file order

    @property
    def total(self):
        return sum(self.values.values())


def read_points(path):
    """Parses a points file: '<points> <exact case name>' per line; '#' starts a comment line.
    Raises GradingError on a missing file, a malformed line, a negative or non-finite number, or
    a case named twice."""
    if not os.path.exists(path):
        raise GradingError(f"{path} is missing: every lab needs a points file that gives each of "
                           "its test cases its points (see book/instructors.md)")
    values, lines = {}, {}
    # utf-8-sig: an editor that saves a byte-order mark would otherwise put an invisible
    # character before the first line's points.
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        bad = e.object[e.start:e.start + 1]
        raise GradingError(f"{path} is not UTF-8 text (byte {e.start} is {bad!r}): save it as "
                           "UTF-8") from None
    for number, raw in enumerate(text.split("\n"), 1):  # as iterating the file would
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        where = f"{path}:{number}"
        if len(parts) != 2:
            raise GradingError(f"{where}: expected '<points> <case name>', got '{line}'")
        try:
            value = float(parts[0])
        except ValueError:
            raise GradingError(f"{where}: '{parts[0]}' is not a number of points") from None
        if not math.isfinite(value) or value < 0:
            raise GradingError(f"{where}: points must be a number >= 0, got {parts[0]}")
        name = parts[1]
        if name in values:
            raise GradingError(f"{where}: '{name}' already has points on line {lines[name]}")
        values[name], lines[name] = value, number
    if not values:
        raise GradingError(f"{path} gives no points to any case")
    return Points(path, values)


def load_points(path, cases, what):
    """read_points + check_points. A missing file is an error that prints a file to start from."""
    if not os.path.exists(path):
        raise GradingError(f"{path} is missing: every {what} test case needs its points. Start "
                           "from this, with the points you want:\n" +
                           "\n".join(f"1  {c}" for c in cases))
    points = read_points(path)
    check_points(points, cases, what)
    return points


def check_points(points, cases, what):
    """Raises GradingError unless `points` names exactly the cases in `cases` (what: 'lab01',
    'lab01 hidden'). The message lists the lines to add and the lines that name no case."""
    missing = [c for c in cases if c not in points.values]
    stale = [n for n in points.values if n not in set(cases)]
    if not missing and not stale:
        if points.total <= 0:
            raise GradingError(f"{points.path}: the {what} points add up to 0")
        return
    msg = []
    if missing:
        msg.append(f"{points.path} gives no points to {len(missing)} {what} test case(s); add "
                   "these lines with the points you want:\n" +
                   "\n".join(f"  1  {c}" for c in missing))
    if stale:
        msg.append(f"{points.path} names {len(stale)} case(s) that {what} does not have (renamed "
                   "or removed?):\n" + "\n".join(f"  {n}" for n in stale))
    raise GradingError("\n".join(msg))
