"""Reading a submission: a folder or a zip (such as one made by tools/submit).

Only the editable files of the labs count (labs/<dir>/starter.cpp). Everything else is ignored and
reported: test and build files by name, because a submission that carries them may be trying to
change how it is graded, and other files by count. Nothing from a submission is ever extracted
except the editable files, each read with a size limit; symbolic links and unsafe paths are
refused.
"""
import hashlib
import json
import os
import posixpath
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field

from . import SubmissionError, printable

# What tools/grade writes into a report folder (reports.REPORT_FILES, and cli's summary.csv). Not
# imported from reports: tools/submit, on a student's machine, loads this module without it.
REPORT_NAMES = ("grade.json", "results.json", "junit.xml", "summary.csv")
MANIFEST = "MANIFEST.json"
MANIFEST_FORMAT = "speclab-submission/1"
MAX_FILE_BYTES = 1 << 20      # an editable file larger than this is refused
MAX_ENTRIES = 100_000         # a folder with more entries than this is not a submission
SKIPPED_DIRS = {".git", ".venv", "__pycache__", "node_modules"}  # never walked into
TEST_TOP_DIRS = {"tests", "cmake", "tools", ".ci", "solutions"}
TEST_NAMES = re.compile(r"^(test_.*|.*_tests?\.(cpp|h|py)|points\.txt|CMakeLists\.txt|.*\.cmake|"
                        r"CMakePresets\.json|doctest.*\.h)$")
# What a desktop adds to a zip or a folder of its own accord (macOS Finder's resource forks and
# folder settings, Windows' thumbnails): dropped before the submission's root is looked for.
DESKTOP_JUNK = re.compile(r"(^|/)(__MACOSX/|\._[^/]*$|\.DS_Store$|Thumbs\.db$|desktop\.ini$)")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


@dataclass
class Submission:
    name: str                   # for reports: the folder or zip name without .zip
    path: str
    files: dict                 # repository-relative path -> bytes, editable files only
    flat_starter: bytes = None  # a starter.cpp at the submission's root (a lone uploaded file)
    manifest: dict = None
    ignored_tests: list = field(default_factory=list)
    ignored_other: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    # The top-level names that are themselves submissions (a folder with labs/ or MANIFEST.json,
    # or a .zip) when there are two or more: a class's folder given as one submission.
    nested: list = field(default_factory=list)
    nested_note: str = ""

    def manifest_labs(self):
        labs = (self.manifest or {}).get("labs") or []
        return [lab for lab in labs if isinstance(lab, str) and re.match(r"^lab\d\d$", lab)]


def _is_test_or_build_file(rel):
    top = rel.split("/", 1)[0]
    return top in TEST_TOP_DIRS or bool(TEST_NAMES.match(posixpath.basename(rel)))


def _strip_wrapper(paths):
    """The prefix to strip when everything sits in one folder (a zip of a folder): the root is
    the first level that holds labs/ or MANIFEST.json."""
    prefix = ""
    for _ in range(3):
        rest = [p[len(prefix):] for p in paths if p.startswith(prefix)]
        if any(p == MANIFEST or p.startswith("labs/") for p in rest):
            return prefix
        tops = {p.split("/", 1)[0] for p in rest if "/" in p}
        if len(tops) != 1 or any("/" not in p for p in rest):
            return prefix
        prefix += tops.pop() + "/"
    return prefix


class _Folder:
    def __init__(self, root):
        self.root = root
        self.skipped = set()

    def entries(self):
        """{relative path: kind} with kind 'file', 'link' or 'other'."""
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = os.path.relpath(dirpath, self.root)
            rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
            keep = []
            for d in dirnames:
                full = os.path.join(dirpath, d)
                if os.path.islink(full):
                    out[rel_dir + d] = "link"
                elif d in SKIPPED_DIRS or (not rel_dir and d.startswith("build")):
                    self.skipped.add(rel_dir + d + "/")
                else:
                    keep.append(d)
            dirnames[:] = sorted(keep)
            for name in filenames:
                mode = os.lstat(os.path.join(dirpath, name)).st_mode
                out[rel_dir + name] = ("link" if stat.S_ISLNK(mode) else
                                       "file" if stat.S_ISREG(mode) else "other")
            if len(out) > MAX_ENTRIES:
                raise SubmissionError(f"{self.root} holds more than {MAX_ENTRIES} files: not a "
                                   "submission")
        return out

    def read(self, rel):
        try:
            with open(os.path.join(self.root, *rel.split("/")), "rb") as f:
                return f.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise SubmissionError(f"{self.root}: cannot read {rel}: {e.strerror}") from None


class _Zip:
    def __init__(self, path):
        try:
            self.zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as e:
            raise SubmissionError(f"{path} is not a readable zip file: {e}") from None
        self.skipped = set()

    def entries(self):
        out = {}
        self.infos = {}
        for info in self.zf.infolist():
            if info.is_dir():
                continue
            name = info.filename.replace("\\", "/")
            norm = posixpath.normpath(name)
            if name.startswith("/") or norm.startswith("..") or ":" in name.split("/", 1)[0]:
                out[name] = "unsafe"
                continue
            mode = info.external_attr >> 16
            out[norm] = "link" if stat.S_ISLNK(mode) else "file"
            self.infos[norm] = info
        return out

    def read(self, rel):
        try:
            with self.zf.open(self.infos[rel]) as f:
                return f.read(MAX_FILE_BYTES + 1)
        except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, OSError,
                EOFError) as e:  # damaged data, a bad CRC, a password, an unknown method
            raise SubmissionError(f"{self.zf.filename}: cannot read {rel} from the zip: "
                                  f"{e}") from None


def load(path, editable):
    """Reads the submission at `path` (a folder or a .zip). `editable` is the set of
    repository-relative paths that count. Raises GradingError when the submission cannot be
    read at all."""
    if not os.path.exists(path):
        raise SubmissionError(f"submission {path} does not exist")
    base = os.path.basename(os.path.normpath(path))
    if os.path.isdir(path):
        source = _Folder(path)
    elif not os.path.isfile(path):  # a pipe or a device: reading it could wait forever
        raise SubmissionError(f"submission {path} is neither a folder nor a regular file")
    elif zipfile.is_zipfile(path):
        source = _Zip(path)
        base = re.sub(r"\.zip$", "", base, flags=re.I)
    else:
        raise SubmissionError(f"submission {path} is neither a folder nor a zip file")
    entries = source.entries()
    junk = sorted(p for p in entries if DESKTOP_JUNK.search(p))
    for p in junk:
        del entries[p]
    prefix = _strip_wrapper(list(entries))
    sub = Submission(name=printable(base), path=printable(os.path.abspath(path)), files={})
    if junk:
        sub.notes.append(f"ignored {len(junk)} file(s) a desktop adds to a zip or folder "
                         "(__MACOSX/, .DS_Store, ._*)")
    if prefix:
        sub.notes.append(f"the files sit in the folder '{prefix}' inside the submission; it was "
                         "taken as the submission's root")
    for d in sorted(source.skipped):
        sub.notes.append(f"ignored the folder {d} (not part of a submission)")

    def readable(rel, kind):
        if kind != "file":
            why = {"link": "a symbolic link", "unsafe": "an unsafe path"}.get(kind, "not a file")
            sub.notes.append(f"refused {rel}: {why}")
            return None
        data = source.read(prefix + rel)
        if len(data) > MAX_FILE_BYTES:
            sub.notes.append(f"refused {rel}: larger than {MAX_FILE_BYTES // 1024} KiB")
            return None
        return data

    for full, kind in sorted(entries.items()):
        if not full.startswith(prefix):
            if kind == "unsafe":
                sub.notes.append(f"refused {full}: an unsafe path")
            else:
                sub.ignored_other.append(full)
            continue
        rel = full[len(prefix):]
        if rel in editable:
            data = readable(rel, kind)
            if data is not None:
                sub.files[rel] = data
        elif rel == MANIFEST and kind == "file":
            data = readable(rel, kind)
            try:
                sub.manifest = json.loads(data.decode("utf-8")) if data is not None else None
                if not isinstance(sub.manifest, dict):
                    raise ValueError("not a JSON object")
                _clean_manifest(sub.manifest, sub.notes)
            except (UnicodeDecodeError, ValueError, RecursionError) as e:
                sub.notes.append(f"ignored {MANIFEST}: not valid ({e})")
                sub.manifest = None
        elif rel == "starter.cpp":
            sub.flat_starter = readable(rel, kind)
        elif kind == "unsafe":
            sub.notes.append(f"refused {rel}: an unsafe path")
        elif kind == "link" and any(e.startswith(rel + "/") for e in editable):
            # labs/ or a lab's folder as a link: the lab's file behind it is never read.
            sub.notes.append(f"refused {rel}: a symbolic link (to a folder: a lab's file is "
                             "read only from real folders)")
        elif _is_test_or_build_file(rel):
            sub.ignored_tests.append(rel)
        else:
            sub.ignored_other.append(rel)

    nested = _nested_submissions(sub.ignored_other + sub.ignored_tests)
    if nested:
        sub.nested = [printable(n) for n in nested]
        shown = ", ".join(sub.nested[:5]) + (", ..." if len(sub.nested) > 5 else "")
        how = (f"as in tools/grade {path.rstrip('/')}/*" if os.path.isdir(path) else
               "unpacked, to tools/grade")
        sub.nested_note = printable(
            f"this looks like a {'folder' if os.path.isdir(path) else 'zip'} of "
            f"{len(sub.nested)} submissions ({shown}): give each one, {how}")
        sub.notes.append(sub.nested_note)
    if sub.ignored_tests:
        shown = sub.ignored_tests[:20]
        more = len(sub.ignored_tests) - len(shown)
        sub.notes.append(
            f"the submission contains {len(sub.ignored_tests)} test or build file(s); grading "
            "used the repository's own tests and ignored them: " + ", ".join(shown) +
            (f" and {more} more" if more > 0 else ""))
    if sub.ignored_other:
        shown = sub.ignored_other[:10]
        more = len(sub.ignored_other) - len(shown)
        sub.notes.append(f"ignored {len(sub.ignored_other)} other file(s) (only the editable files "
                         "are graded): " + ", ".join(shown) + (f" and {more} more" if more > 0
                                                               else ""))
    # A file that looks like an editable one but is not read: a wrong case or place.
    wanted = {posixpath.basename(e).lower() for e in editable} | {"starter.cpp"}
    for rel in sub.ignored_other:
        if rel.partition("/")[0] in nested:
            continue  # another student's file: the note above says what to do
        if posixpath.basename(rel).lower() in wanted:
            sub.notes.append(f"{rel} was not graded: a lab's file is read only as "
                             "labs/<the lab's folder>/starter.cpp (exactly so named and placed), "
                             "or as a lone starter.cpp at the top")
    if sub.flat_starter is not None and sub.files:
        sub.notes.append("both starter.cpp at the top and " + ", ".join(sorted(sub.files)) +
                         " were submitted: the lab's own path is graded")
    tops = {p[len(prefix):] for p in entries if p.startswith(prefix)}
    reports_here = sorted(tops & set(REPORT_NAMES))
    if reports_here and not sub.files and sub.flat_starter is None and sub.manifest is None:
        # tools/grade without --out writes grades/NAME/ in the current folder: a later
        # tools/grade * run there took grades/ for one more student.
        raise SubmissionError(f"{path} holds the grader's reports ({', '.join(reports_here)}), "
                              "not a submission: give the students' folders or zips")
    _check_manifest(sub)
    sub.notes = [printable(n) for n in sub.notes]
    sub.ignored_tests = [printable(n) for n in sub.ignored_tests]
    sub.ignored_other = [printable(n) for n in sub.ignored_other]
    return sub


def _nested_submissions(paths):
    """The top-level names among `paths` that look like submissions of their own (NAME/labs/...,
    NAME/MANIFEST.json, NAME/starter.cpp, or NAME.zip), when there are at least two."""
    tops = set()
    for p in paths:
        top, _, rest = p.partition("/")
        if rest in (MANIFEST, "starter.cpp") or rest.startswith("labs/"):
            tops.add(top)
        elif not rest and p.lower().endswith(".zip"):
            tops.add(p[:-4])
    return sorted(tops) if len(tops) >= 2 else []


def _clean_manifest(manifest, notes):
    """Keeps the fields of a MANIFEST.json that have the shape tools/submit writes (labs: a list
    of names; files and headers: lists of {"path": str, "sha256": str}) and drops the rest with
    a note, so a hand-edited manifest cannot break the grading."""
    labs = manifest.get("labs")
    if labs is not None and not isinstance(labs, list):
        notes.append(f"ignored {MANIFEST}'s labs: not a list")
        manifest["labs"] = []
    for key in ("files", "headers"):
        entries = manifest.get(key)
        if entries is None:
            continue
        good = [e for e in entries if isinstance(e, dict) and isinstance(e.get("path"), str)
                and isinstance(e.get("sha256"), str)] if isinstance(entries, list) else []
        if not isinstance(entries, list) or len(good) != len(entries):
            notes.append(f"ignored {MANIFEST}'s malformed {key} entries")
        manifest[key] = good


def _check_manifest(sub):
    if sub.manifest is None:
        return
    if sub.manifest.get("format") != MANIFEST_FORMAT:
        sub.notes.append(f"{MANIFEST} has format {sub.manifest.get('format')!r}, expected "
                         f"{MANIFEST_FORMAT!r}")
    for entry in sub.manifest.get("files") or []:
        if not isinstance(entry, dict):
            continue
        rel, digest = entry.get("path"), entry.get("sha256")
        if rel in sub.files and digest and digest != sha256(sub.files[rel]):
            sub.notes.append(f"{rel} differs from the checksum in {MANIFEST} (edited after "
                             "tools/submit made the zip?)")


def suspicious_includes(data):
    """The #include targets that reach outside the lab's folder (a submission should only use
    its lab's header and the standard library)."""
    text = data.decode("utf-8", "replace")
    return [inc for inc in INCLUDE.findall(text)
            if inc.startswith("/") or ".." in inc.split("/") or "solution" in inc]
