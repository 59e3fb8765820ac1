"""The grader's isolated copy of the repository and its grading build.

    WORK/src/    a copy of the repository's source files (no build outputs, no .git)
    WORK/build/  a Release build of WORK/src, configured once and reused by every run
    WORK/lock    one grader at a time per WORK folder
    WORK/.speclab-grading   says the folder is the grader's: it refreshes WORK/src by deleting
                 what the repository does not hold, so it never takes over a folder that holds
                 files it did not put there

The instructor's checkout is only ever read. Each run refreshes WORK/src from it, writing only
the files whose content changed, so the build stays incremental: grading a submission recompiles
the lab's starter target and relinks its test executables, nothing else. The run keeps what it
copied (and the hidden tests) in memory: a student's code runs with the grader's permissions, so
after a submission's cases whatever they changed in WORK is put back (undo_changes) and a change
to the checkout or the hidden tests is found (checkout_changes), before the next submission. A student's file is
written into WORK/src only; hidden tests are compiled from where they live
(SPECLAB_HIDDEN_TESTS_DIR) and never enter WORK/src. The earlier labs a lab builds on (LAB_DEPS)
are linked as their reference solutions (SPECLAB_REFERENCE_LAB_DEPS), so no lab's test
executables depend on another lab's placed file.
"""
import fcntl
import glob
import os
import re
import resource
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from . import GradingError
from .labs import declared_labs, read_cases

# The address space of each build process (cmake, make, a compiler): far above what compiling a
# lab takes (under 1 GiB), far below what a runaway compiler would take from the machine.
BUILD_MEM_MB = 4096

EXCLUDED_TOP = re.compile(r"^(build[^/]*|\.git|\.venv|out|grades|__pycache__)(/|$)")


def _repo_files(repo, excluded):
    """Repository-relative paths of the source files: what git tracks plus untracked files it
    does not ignore (a lab in progress counts), or, outside git, every file but build outputs."""
    try:
        out = subprocess.run(["git", "-C", repo, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        files = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(repo):
            rel = os.path.relpath(dirpath, repo).replace(os.sep, "/")
            rel = "" if rel == "." else rel + "/"
            dirnames[:] = [d for d in dirnames if not EXCLUDED_TOP.match(rel + d)]
            files += [rel + f for f in filenames]
    keep = []
    for rel in files:
        if EXCLUDED_TOP.match(rel) or "__pycache__/" in rel or rel.endswith(".pyc"):
            continue
        if any(rel == e or rel.startswith(e + "/") for e in excluded):
            continue
        if os.path.isfile(os.path.join(repo, rel)):
            keep.append(rel)
    return keep


def _write_if_changed(path, data):
    """Writes data unless the file already holds it. A write always gets a fresh mtime, so make
    rebuilds what depends on it. A symbolic link at path is replaced, never written through.
    Returns True when it wrote."""
    if os.path.islink(path):
        os.remove(path)
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return True


def parse_depfile(text):
    """The prerequisites of a make-style dependency file (gcc -MD): every path after the first
    ':' of each rule, with line continuations joined and '\\ ' read as a space."""
    deps = []
    text = text.replace("\\\n", " ")
    for line in text.splitlines():
        if ":" not in line:
            continue
        rest = line.split(":", 1)[1].replace("\\ ", "\0")
        deps += [p.replace("\0", " ") for p in rest.split()]
    return deps


def _inside(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root + os.sep)


def holds(work, repo):
    """Whether the folder `work` is the repository `repo` or a folder above it."""
    return _inside(repo, work)


MARKER = ".speclab-grading"


def _claim(work):
    """Makes `work` the grader's folder, or raises GradingError when it holds files the grader did
    not put there. A new or empty folder is claimed; so is one made before the marker existed
    (it holds the grader's lock and src/)."""
    marker = os.path.join(work, MARKER)
    if os.path.isfile(marker):
        return
    if os.path.isdir(work) and os.listdir(work):
        legacy = (os.path.isfile(os.path.join(work, "lock")) and
                  os.path.isdir(os.path.join(work, "src")))
        if not legacy:
            raise GradingError(
                f"--work {work} holds files tools/grade did not put there, and grading deletes "
                "what it does not need in its own folder: give a new or empty folder (default "
                "build/grading)")
    os.makedirs(work, exist_ok=True)
    with open(marker, "w", encoding="utf-8") as f:
        f.write("tools/grade's folder: its copy of the repository (src/) and its build (build/).\n"
                "It may delete anything in here; delete the whole folder when you like.\n")


class Workspace:
    def __init__(self, repo, work, hidden=None, jobs=2, log=None):
        self.repo = os.path.realpath(repo)
        self.work = os.path.abspath(work)
        self.src = os.path.join(self.work, "src")
        self.build = os.path.join(self.work, "build")
        self.hidden = os.path.realpath(hidden) if hidden else None
        self.jobs = max(1, int(jobs))
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._lock = None
        self._placed = set()
        self._snapshot = {}  # repository-relative path -> content, as sync() copied it
        self._seen = {}  # the same for the checkout as checkout_changes() last saw it
        self._hidden_seen = {}  # absolute path -> content of each --hidden file, likewise
        self._stamp = None  # st_mtime_ns of WORK/cases-started, written by stamp()
        self._reports = {}  # real path -> content of each report this run wrote (wrote_reports)

    # ---- lifetime ----
    def __enter__(self):
        if holds(self.work, self.repo):
            raise GradingError(f"--work {self.work} is the repository or holds it: give a "
                               "folder of its own (default build/grading)")
        _claim(self.work)
        self._lock = open(os.path.join(self.work, "lock"), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.log(f"grade: waiting for another grader that uses {self.work}")
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        try:
            self.restore_editable()
        finally:
            self._lock.close()

    # ---- the copy ----
    def _read_repo(self):
        """{repository-relative path: content} of the repository's source files now."""
        excluded = []
        for path in (self.hidden, self.work):
            if path and _inside(path, self.repo):
                excluded.append(os.path.relpath(path, self.repo).replace(os.sep, "/"))
        out = {}
        for rel in _repo_files(self.repo, excluded):
            with open(os.path.join(self.repo, rel), "rb") as f:
                out[rel] = f.read()
        return out

    def _read_hidden(self):
        """{absolute path: content} of the files under --hidden now."""
        out = {}
        if self.hidden:
            for dirpath, _, filenames in os.walk(self.hidden):
                for name in filenames:
                    path = os.path.join(dirpath, name)
                    with open(path, "rb") as f:
                        out[path] = f.read()
        return out

    def sync(self):
        """Makes WORK/src hold exactly the repository's source files, and keeps them (and the
        hidden tests) in memory for undo_changes and checkout_changes."""
        self._snapshot = self._read_repo()
        if not self._snapshot:
            raise GradingError(f"{self.repo} holds no source files")
        self._seen = dict(self._snapshot)
        self._hidden_seen = self._read_hidden()
        return len(self._write_copy())

    def _write_copy(self):
        """Makes WORK/src hold exactly the snapshot; returns the WORK/src-relative paths it had
        to delete or write. What is not in the snapshot goes first, a link to a folder included,
        so that no write goes through a link out of WORK/src."""
        changed = []
        for dirpath, dirnames, filenames in os.walk(self.src, topdown=False):
            for name in filenames + [d for d in dirnames
                                     if os.path.islink(os.path.join(dirpath, d))]:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, self.src).replace(os.sep, "/")
                if rel not in self._snapshot:
                    os.remove(full)
                    changed.append(rel)
            if dirpath != self.src and not os.listdir(dirpath):
                os.rmdir(dirpath)
        changed += [rel for rel, data in self._snapshot.items()
                    if _write_if_changed(os.path.join(self.src, rel), data)]
        return changed

    def restore_editable(self):
        """Puts the repository's own editable files back into WORK/src, as the run found them."""
        for rel in self._placed:
            if rel in self._snapshot:
                _write_if_changed(os.path.join(self.src, rel), self._snapshot[rel])
        self._placed = set()

    # ---- what a submission's code changed ----
    def stamp(self):
        """Marks the moment before a submission's code runs (its cases): undo_changes then
        treats a build file modified after it as the code's doing. The mark is a file's mtime,
        so that it comes from the same clock as the build files' own."""
        path = os.path.join(self.work, "cases-started")
        with open(path, "w", encoding="utf-8") as f:
            f.write("the last time a submission's cases started (tools/grade)\n")
        self._stamp = os.stat(path).st_mtime_ns

    def undo_changes(self):
        """After a submission's cases: puts WORK back as it was before they ran, and returns what
        had changed, as WORK-relative paths (src/..., build/...), sorted. WORK/src is written
        from the snapshot sync() took (the placed files too: back to the repository's), so a
        change the code made to the checkout does not reach it either. A build file modified
        after stamp() is deleted, and the build configured again, so that the next build makes
        it afresh. Requires stamp() first."""
        placed = set(self._placed)
        self._placed = set()
        changed = ["src/" + rel for rel in self._write_copy() if rel not in placed]
        stale = []
        for dirpath, dirnames, filenames in os.walk(self.build):
            for name in filenames + [d for d in dirnames
                                     if os.path.islink(os.path.join(dirpath, d))]:
                full = os.path.join(dirpath, name)
                if os.lstat(full).st_mtime_ns > self._stamp:
                    stale.append(full)
        for full in stale:
            os.remove(full)
            changed.append(os.path.relpath(full, self.work).replace(os.sep, "/"))
        if stale:
            self.configure()
        return sorted(changed)

    def wrote_reports(self, paths):
        """Notes files the run itself wrote (a submission's reports), as they are now: wherever
        they lie (--out results/ in the checkout, say), checkout_changes does not take them for a
        change that a later submission's code made, unless their content changed since."""
        for path in paths:
            with open(path, "rb") as f:
                self._reports[os.path.realpath(path)] = f.read()

    def checkout_changes(self):
        """The files of the checkout (its source files) and of --hidden that were changed, added
        or removed since the last call (the first: since sync()), as absolute paths, sorted, so
        that each change is named once. Nothing here writes to either, and the copy is still
        written from what sync() read."""
        changed = []
        now_repo, now_hidden = self._read_repo(), self._read_hidden()
        for before, now, root in ((self._seen, now_repo, self.repo),
                                  (self._hidden_seen, now_hidden, None)):
            for key in set(before) | set(now):
                if before.get(key) == now.get(key):
                    continue
                path = os.path.join(root, key) if root else key
                ours = self._reports.get(os.path.realpath(path))
                if ours is None or ours != now.get(key):
                    changed.append(path)
        self._seen, self._hidden_seen = now_repo, now_hidden
        return sorted(changed)

    def place(self, rel, data):
        """Writes a student's file into WORK/src (never into the repository)."""
        self._placed.add(rel)
        _write_if_changed(os.path.join(self.src, rel), data)

    # ---- the build ----
    def _cmake(self, args, timeout, mem_limit=False):
        """Runs cmake; returns (exit code or None on timeout, output). A timeout stops the whole
        process group, compilers included. With mem_limit (the builds, which compile students'
        files) every process of it has BUILD_MEM_MB of address space: a file that includes
        /dev/zero grows the compiler by hundreds of MB a second, and would exhaust the machine
        long before the build timeout."""
        def limits():
            if mem_limit:
                cap = BUILD_MEM_MB * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

        p = subprocess.Popen(["cmake"] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=limits)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            return None, (out.decode("utf-8", "replace") +
                          f"\nThe build was stopped after {timeout:g} s.")
        return p.returncode, out.decode("utf-8", "replace")

    def configure(self):
        hidden = self.hidden or ""
        t = time.monotonic()
        for stale in glob.glob(os.path.join(self.build, "labtests", "*.lab")):
            os.remove(stale)  # configuring writes one per declared lab; a removed lab leaves none
        # SPECLAB_REFERENCE_LAB_DEPS: a lab's starter links its LAB_DEPS' reference solutions, so
        # a lab's grade depends on its own file only (book/instructors.md, "Labs that build on
        # earlier labs").
        rc, out = self._cmake(["-S", self.src, "-B", self.build, "-DCMAKE_BUILD_TYPE=Release",
                               "-DSPECLAB_ASAN=OFF", "-DSPECLAB_REFERENCE_LAB_DEPS=ON",
                               f"-DSPECLAB_HIDDEN_TESTS_DIR={hidden}"], 600)
        if rc != 0:
            raise GradingError(f"configuring the grading build in {self.build} failed:\n"
                               f"{out[-6000:]}")
        self.log(f"grade: configured {self.build} ({time.monotonic() - t:.1f} s)")

    def labs(self):
        return declared_labs(self.build)

    def build_targets(self, targets, timeout):
        """Builds targets; returns (ok, output). ok is True when they built, False when the build
        failed, and None when it ran past timeout seconds and was stopped. A stopped build's
        compilers are killed and may leave half-written objects; the placed files then get a
        fresh mtime, so the next build compiles them again even when the same file is placed."""
        rc, out = self._cmake(["--build", self.build, "-j", str(self.jobs), "--target"] + targets,
                              timeout, mem_limit=True)
        if rc is None:
            for rel in self._placed:
                path = os.path.join(self.src, rel)
                if os.path.exists(path):
                    os.utime(path)
        return (None if rc is None else rc == 0), out

    def hidden_sources(self, lab):
        if not self.hidden:
            return []
        d = os.path.join(self.hidden, lab.name)
        return sorted(f for f in os.listdir(d) if f.endswith(".cpp")) if os.path.isdir(d) else []

    def targets(self, lab, impl):
        """The test executables of `lab` for impl (solution or starter)."""
        t = [f"{lab.name}_tests_{impl}"]
        if self.hidden_sources(lab):
            t.append(f"{lab.name}_hidden_{impl}")
        return t

    def starter_dependencies(self, lab):
        """The files the compiler read to build lab's starter (its dependency list, written by
        the last build), relative to the grading copy when inside it, else absolute."""
        deps = []
        pattern = os.path.join(self.build, "labs", "CMakeFiles", f"{lab.name}_starter.dir",
                               "**", "*.o.d")
        for path in glob.glob(pattern, recursive=True):
            with open(path, encoding="utf-8", errors="replace") as f:
                deps += parse_depfile(f.read())
        out = []
        for dep in deps:
            full = os.path.realpath(dep if os.path.isabs(dep) else os.path.join(self.build, dep))
            out.append(os.path.relpath(full, self.src) if _inside(full, self.src) else full)
        return sorted(set(out))

    def exe(self, lab, impl, hidden=False):
        name = f"{lab.name}_hidden_{impl}" if hidden else f"{lab.name}_{impl}"
        return os.path.join(self.build, "labtests", name)

    def build_reference(self, lab):
        """Builds the lab's public and hidden test executables with the reference solution.
        Raises GradingError naming which of the two does not build: the reference with the
        public tests, or the hidden tests (an instructor's file) with the reference."""
        t = time.monotonic()
        public, *hidden = self.targets(lab, "solution")
        ok, out = self.build_targets([public], 1800)
        if not ok:
            raise GradingError(f"the reference solution of {lab.name} does not build in the "
                               f"grading build:\n{self.clean_build_output(out)[-8000:]}")
        if hidden:
            ok, out = self.build_targets(hidden, 1800)
            if not ok:
                folder = os.path.join(self.hidden, lab.name)
                out = self.clean_build_output(out, show_hidden=True)
                named = [f for f in self.hidden_sources(lab) if f in out]
                raise GradingError(
                    f"the hidden tests of {lab.name} do not build (target {hidden[0]}, from "
                    f"{folder}/: {', '.join(self.hidden_sources(lab))}); "
                    + (f"the errors are in {', '.join(named)}. " if named else "")
                    + "A hidden test can include what the lab's public tests include (the lab's "
                    f"header, tests/{lab.name}/, tests/support/, the engine) and sees their "
                    f"compile definitions. Compiler output:\n{out[-8000:]}")
        self.log(f"grade: {lab.name} reference built ({time.monotonic() - t:.1f} s)")

    def cases(self, lab, hidden=False):
        """[(case name, suite)] of the lab's public or hidden cases, from the built solution."""
        listed = list_cases(self.exe(lab, "solution", hidden))
        if hidden:
            return listed
        names = read_cases(os.path.join(self.build, "labtests", f"{lab.name}.cases"))
        suites = dict(listed)
        if set(names) != set(suites):
            raise GradingError(f"{lab.name}.cases and the test executable disagree: rebuild")
        return [(n, suites[n]) for n in names]

    def clean_build_output(self, text, show_hidden=False):
        """Build output as a student should see it: compiler messages with paths relative to
        the repository, without make's progress lines. show_hidden keeps the hidden tests'
        folder as it is (for the instructor) instead of <hidden>/."""
        keep = []
        for line in text.splitlines():
            if re.match(r"^\[\s*\d+%\]|^g?make(\[\d+\])?: |^Consolidate compiler|^-- ", line):
                continue
            keep.append(line)
        out = "\n".join(keep)
        return self.relative_paths(out, show_hidden).strip()

    def relative_paths(self, text, show_hidden=False):
        text = text.replace(self.src + "/", "").replace(self.build + "/", "build/")
        if self.hidden and not show_hidden:
            text = text.replace(self.hidden + "/", "<hidden>/")
        return text


def list_cases(exe):
    """[(case name, suite)] from a doctest executable, in file order."""
    try:
        p = subprocess.run([exe, "--list-test-cases", "--reporters=xml", "--no-version"],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GradingError(f"listing the test cases of {exe} failed: {e}") from None
    if p.returncode != 0:
        raise GradingError(f"listing the test cases of {exe} failed (exit {p.returncode})")
    try:
        root = ET.fromstring(p.stdout)
    except ET.ParseError as e:
        raise GradingError(f"{exe} listed its test cases in a form the grader cannot read: "
                           f"{e}") from None
    return [(tc.get("name"), tc.get("testsuite") or "") for tc in root.iter("TestCase")]
