"""Unit tests of the grader (tools/grading/, tools/testrun.py's case runner, tools/submit) and
tools/grade's refusals. Run: python3 -m unittest discover -s tests/grader -p 'test_*.py'

The end-to-end refusals need a grading build; they run when SPECLAB_GRADE_WORK names its folder
(ctest sets it) and are skipped otherwise.
"""
import argparse
import contextlib
import csv
import io
import json
import os
import re
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import unittest.mock as mock
import xml.etree.ElementTree as ET
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools"))
sys.dont_write_bytecode = True

import testrun  # noqa: E402
from grading import GradingError, SubmissionError, cli, reports, runner, submission  # noqa: E402
from grading import workspace  # noqa: E402
from grading.labs import Lab, check_points, load_points, read_points  # noqa: E402

EDITABLE = "labs/lab01_prompt_lookup/starter.cpp"
HEADER = "labs/lab01_prompt_lookup/prompt_lookup.h"
LAB = Lab("lab01", "lab01_prompt_lookup", 30.0, 2048)


class TempDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="speclab-grader-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, rel, data=b"x"):
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return path


class PointsFiles(TempDir):
    def points(self, text):
        return read_points(self.write("points.txt", textwrap.dedent(text)))

    def test_a_well_formed_file_gives_each_case_its_points(self):
        p = self.points("""\
            # comment
            2  first case: with, punctuation -> ok
            0.5 second case
            """)
        self.assertEqual(p.values, {"first case: with, punctuation -> ok": 2.0,
                                    "second case": 0.5})
        self.assertEqual(p.total, 2.5)
        check_points(p, ["second case", "first case: with, punctuation -> ok"], "lab01")

    def test_a_file_that_is_not_utf8_is_named(self):
        path = self.write("points.txt", "3  a case\n# caf\xe9\n".encode("latin-1"))
        with self.assertRaisesRegex(GradingError, r"points.txt is not UTF-8 text \(byte 15 is "
                                                  r"b'\\xe9'\): save it as UTF-8"):
            read_points(path)

    def test_a_byte_order_mark_is_not_part_of_the_first_line(self):
        # Notepad's UTF-8 adds one: "'\ufeff3' is not a number of points", the mark invisible.
        for first in ("3 first case", "# a comment"):
            with self.subTest(first=first):
                path = self.write("bom.txt", ("\ufeff" + first + "\n1 second case\n").encode())
                p = read_points(path)
                self.assertEqual(p.values.get("first case", 3.0), 3.0)
                self.assertEqual(p.values["second case"], 1.0)

    def test_a_case_without_points_is_an_error_that_lists_the_line_to_add(self):
        p = self.points("1 a\n")
        with self.assertRaises(GradingError) as e:
            check_points(p, ["a", "b new case"], "lab01")
        self.assertIn("gives no points to 1 lab01 test case", str(e.exception))
        self.assertIn("  1  b new case", str(e.exception))

    def test_a_line_that_names_no_case_is_an_error(self):
        p = self.points("1 a\n3 renamed case\n")
        with self.assertRaises(GradingError) as e:
            check_points(p, ["a"], "lab01")
        self.assertIn("renamed case", str(e.exception))

    def test_malformed_negative_duplicate_missing_and_empty_files_are_errors(self):
        for text, message in (("abc a case\n", "not a number"), ("-1 a\n", ">= 0"),
                              ("nan a\n", ">= 0"), ("5\n", "expected '<points> <case name>'"),
                              ("1 a\n2 a\n", "already has points on line 1"),
                              ("# only a comment\n", "gives no points to any case")):
            with self.subTest(text=text), self.assertRaises(GradingError) as e:
                self.points(text)
            self.assertIn(message, str(e.exception))
        with self.assertRaises(GradingError) as e:
            read_points(os.path.join(self.tmp, "nope.txt"))
        self.assertIn("is missing", str(e.exception))

    def test_a_hidden_folder_for_a_lab_the_repository_lacks_is_an_error(self):
        self.write("hidden/lab01/t.cpp")
        self.write("hidden/README.md")
        self.write("hidden/notes/x.txt")
        hidden = os.path.join(self.tmp, "hidden")
        cli.check_hidden_folders(hidden, {"lab01": LAB})
        self.write("hidden/lab09/t.cpp")
        with self.assertRaises(GradingError) as e:
            cli.check_hidden_folders(hidden, {"lab01": LAB})
        self.assertIn("has tests for lab09, which this repository does not have (it has lab01)",
                      str(e.exception))

    def test_a_hidden_folder_without_any_lab_folder_is_an_error_unless_it_is_empty(self):
        # A wrong parent folder graded without the hidden tests, with exit 0.
        hidden = os.path.join(self.tmp, "hidden")
        os.makedirs(hidden)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):  # a course without hidden tests
            cli.check_hidden_folders(hidden, {"lab01": LAB})
        self.assertIn(f"--hidden {hidden} is empty: no hidden tests", err.getvalue())
        os.makedirs(os.path.join(hidden, "notes"))
        with self.assertRaisesRegex(GradingError, "holds no labNN/ folder"):
            cli.check_hidden_folders(hidden, {"lab01": LAB})

    def test_a_missing_points_file_prints_one_to_start_from(self):
        with self.assertRaises(GradingError) as e:
            load_points(os.path.join(self.tmp, "lab09", "points.txt"), ["x y", "z"], "lab09")
        self.assertIn("is missing", str(e.exception))
        self.assertIn("\n1  x y\n1  z", str(e.exception))

    def test_points_that_add_up_to_zero_are_an_error(self):
        with self.assertRaises(GradingError):
            check_points(self.points("0 a\n"), ["a"], "lab01")

    def test_the_repository_points_files_parse(self):
        self.assertGreater(read_points(os.path.join(REPO, "tests", "lab01", "points.txt")).total, 0)


class Submissions(TempDir):
    def load(self, path):
        return submission.load(path, {EDITABLE})

    def test_a_folder_gives_only_its_editable_file_and_reports_test_files(self):
        self.write(f"sub/{EDITABLE}", b"int x;\n")
        self.write("sub/tests/lab01/test_extra.cpp")
        self.write("sub/CMakeLists.txt")
        self.write("sub/README.txt")
        self.write("sub/build/huge.o")
        s = self.load(os.path.join(self.tmp, "sub"))
        self.assertEqual(s.files, {EDITABLE: b"int x;\n"})
        self.assertEqual(s.ignored_tests, ["CMakeLists.txt", "tests/lab01/test_extra.cpp"])
        self.assertEqual(s.ignored_other, ["README.txt"])
        notes = "\n".join(s.notes)
        self.assertIn("tests/lab01/test_extra.cpp", notes)
        self.assertIn("ignored the folder build/", notes)

    def test_a_folder_of_submissions_given_as_one_is_named_as_such(self):
        # tools/grade subs/ (not subs/*) read as one submission with nothing in it: without --lab
        # the message said "pass --lab labNN to grade it anyway", which graded every student 0.
        self.write(f"subs/alice/{EDITABLE}", b"int a;\n")
        self.write(f"subs/bob/{EDITABLE}", b"int b;\n")
        self.write("subs/carol.zip", b"PK")
        subs = os.path.join(self.tmp, "subs")
        s = self.load(subs + "/")
        self.assertEqual(s.files, {})
        self.assertEqual(s.nested, ["alice", "bob", "carol"])
        notes = "\n".join(s.notes)
        self.assertIn("looks like a folder of 3 submissions (alice, bob, carol): give each one, "
                      f"as in tools/grade {subs}/*", s.notes[0])
        self.assertNotIn("was not graded", notes)  # not once per student's file
        with self.assertRaises(SubmissionError) as e:
            cli.choose_labs(s, [], {"lab01": LAB})
        self.assertIn("looks like a folder of 3 submissions", str(e.exception))
        self.assertNotIn("pass --lab", str(e.exception))
        # One student's folder, or a zip beside the files, is not taken for a class.
        self.write(f"one/{EDITABLE}", b"int x;\n")
        self.write("one/old.zip", b"PK")
        self.assertEqual(self.load(os.path.join(self.tmp, "one")).nested, [])

    def test_a_folder_of_grading_reports_is_not_taken_for_a_submission(self):
        # tools/grade with no --out writes grades/NAME/ in the current folder; run from the
        # submissions' folder, a later tools/grade * graded grades/ as one more student (0 points).
        for files in (("grade.json", "results.json", "junit.xml"),
                      ("summary.csv", "alice/grade.json", "alice/results.json")):
            with self.subTest(files=files):
                root = os.path.join(self.tmp, f"reports{len(files[0])}")
                for f in files:
                    self.write(os.path.join(os.path.basename(root), f), b"{}")
                with self.assertRaises(SubmissionError) as e:
                    self.load(root)
                self.assertIn("holds the grader's reports", str(e.exception))
                self.assertIn("not a submission", str(e.exception))
        self.assertLessEqual(set(reports.REPORT_FILES) | {"summary.csv"},
                             set(submission.REPORT_NAMES))
        # A student's checkout with reports of their own check inside it is still a submission.
        self.write(f"carol/{EDITABLE}", b"int c;\n")
        self.write("carol/grade.json", b"{}")
        self.assertEqual(self.load(os.path.join(self.tmp, "carol")).files, {EDITABLE: b"int c;\n"})

    def test_a_symbolic_link_is_refused(self):
        target = self.write("elsewhere.cpp", b"secret")
        os.makedirs(os.path.join(self.tmp, "sub", os.path.dirname(EDITABLE)))
        os.symlink(target, os.path.join(self.tmp, "sub", EDITABLE))
        s = self.load(os.path.join(self.tmp, "sub"))
        self.assertEqual(s.files, {})
        self.assertTrue(any("symbolic link" in n for n in s.notes))

    def test_a_link_to_a_folder_on_the_path_of_a_labs_file_is_refused_by_name(self):
        # labs/ (or the lab's folder) as a link to a folder elsewhere read "ignored 1 other
        # file(s) (only the editable files are graded): labs", beside "NOT SUBMITTED", with no
        # word of the link, and no note that the lab's file was behind it.
        real = os.path.dirname(self.write(f"elsewhere/{EDITABLE}", b"int x;"))
        for link, target in (("labs", os.path.join(self.tmp, "elsewhere", "labs")),
                             (os.path.dirname(EDITABLE), real)):
            with self.subTest(link=link):
                sub = os.path.join(self.tmp, "sub-" + link.replace("/", "-"))
                os.makedirs(os.path.dirname(os.path.join(sub, link)), exist_ok=True)
                os.symlink(target, os.path.join(sub, link))
                s = self.load(sub)
                self.assertEqual(s.files, {})
                self.assertIn(f"refused {link}: a symbolic link (to a folder: a lab's file is "
                              "read only from real folders)", s.notes)
                self.assertFalse(any("other file" in n for n in s.notes), s.notes)

    def test_a_zip_wrapped_in_one_folder_is_found_and_unsafe_entries_are_refused(self):
        path = os.path.join(self.tmp, "alice.zip")
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(f"alice/{EDITABLE}", "int y;\n")
            zf.writestr("alice/../../evil.cpp", "bad")
        s = self.load(path)
        self.assertEqual(s.name, "alice")
        self.assertEqual(s.files, {EDITABLE: b"int y;\n"})
        self.assertTrue(any("refused ../../evil.cpp: an unsafe path" in n for n in s.notes))

    def test_a_symbolic_link_in_a_zip_is_refused(self):
        path = os.path.join(self.tmp, "s.zip")
        with zipfile.ZipFile(path, "w") as zf:
            link = zipfile.ZipInfo(EDITABLE)
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(link, "/work/solutions/lab01_prompt_lookup/solution.cpp")
        s = self.load(path)
        self.assertEqual(s.files, {})
        self.assertTrue(any("symbolic link" in n for n in s.notes))

    def test_a_manifest_names_the_labs_and_a_changed_file_is_noted(self):
        path = os.path.join(self.tmp, "s.zip")
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(EDITABLE, "int z;\n")
            zf.writestr("MANIFEST.json", json.dumps({
                "format": submission.MANIFEST_FORMAT, "labs": ["lab01", "evil; rm"],
                "files": [{"path": EDITABLE, "sha256": "0" * 64}]}))
        s = self.load(path)
        self.assertEqual(s.manifest_labs(), ["lab01"])
        self.assertTrue(any("differs from the checksum" in n for n in s.notes))

    def test_a_zip_whose_file_cannot_be_read_is_a_submission_error(self):
        # Damaged data raised zlib.error (a bad CRC BadZipFile, a password RuntimeError) out of
        # load(), which stopped a whole batch with a traceback instead of skipping this one.
        path = os.path.join(self.tmp, "damaged.zip")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(EDITABLE, "int q;\n" * 2000)
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(EDITABLE)
        data = bytearray(open(path, "rb").read())
        name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:
                                                         info.header_offset + 30])
        start = info.header_offset + 30 + name_len + extra_len  # the compressed bytes
        for i in range(start + 2, start + info.compress_size - 2):
            data[i] ^= 0xFF
        with open(path, "wb") as f:
            f.write(data)
        with self.assertRaises(SubmissionError) as e:
            self.load(path)
        self.assertIn(f"cannot read {EDITABLE} from the zip", str(e.exception))

    def test_a_malformed_manifest_is_noted_and_ignored_field_by_field(self):
        # {"labs": 5} raised TypeError in manifest_labs; a path that is a list, in the checks.
        for manifest, note in (({"labs": 5}, "labs: not a list"),
                               ({"labs": ["lab01"], "files": [{"path": ["x"], "sha256": "0"}],
                                 "headers": "all"}, "malformed files entries")):
            with self.subTest(manifest=manifest):
                path = os.path.join(self.tmp, "m.zip")
                with zipfile.ZipFile(path, "w") as zf:
                    zf.writestr(EDITABLE, "int z;\n")
                    zf.writestr("MANIFEST.json", json.dumps(manifest))
                s = self.load(path)
                self.assertTrue(any(note in n for n in s.notes), s.notes)
                self.assertIn(s.manifest_labs(), ([], ["lab01"]))
                self.assertEqual(cli.changed_headers(s, LAB), [])
                self.assertEqual(s.files, {EDITABLE: b"int z;\n"})

    def test_a_zip_from_a_mac_is_found_under_its_folder(self):
        # Finder adds __MACOSX/ and .DS_Store beside the folder: the wrapper was not found and
        # the submission scored 0 as not submitted.
        path = os.path.join(self.tmp, "alice.zip")
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(f"alice/{EDITABLE}", "int m;\n")
            zf.writestr(f"__MACOSX/alice/labs/lab01_prompt_lookup/._starter.cpp", "junk")
            zf.writestr("alice/.DS_Store", "junk")
        s = self.load(path)
        self.assertEqual(s.files, {EDITABLE: b"int m;\n"})
        self.assertTrue(any("ignored 2 file(s) a desktop adds" in n for n in s.notes), s.notes)

    def test_a_file_that_looks_editable_but_is_not_read_is_named(self):
        self.write("sub/labs/lab01_prompt_lookup/Starter.cpp", b"int c;\n")
        s = self.load(os.path.join(self.tmp, "sub"))
        self.assertEqual(s.files, {})
        self.assertTrue(any("labs/lab01_prompt_lookup/Starter.cpp was not graded" in n
                            for n in s.notes), s.notes)
        self.write(f"both/{EDITABLE}", b"int a;\n")
        self.write("both/starter.cpp", b"int b;\n")
        s = self.load(os.path.join(self.tmp, "both"))
        self.assertTrue(any("both starter.cpp at the top and" in n for n in s.notes), s.notes)

    def test_names_that_are_not_utf8_or_hold_escapes_are_made_printable(self):
        # A folder named with a byte that is not UTF-8 broke summary.csv (UnicodeEncodeError),
        # and an escape sequence in a file name reached the instructor's terminal.
        root = os.path.join(self.tmp.encode(), b"odd\xff")
        os.makedirs(os.path.join(root, os.path.dirname(EDITABLE).encode()))
        with open(os.path.join(root, EDITABLE.encode()), "wb") as f:
            f.write(b"int u;\n")
        with open(os.path.join(root, b"notes\xfe\x1b[2J.txt"), "wb") as f:
            f.write(b"x")
        s = self.load(os.fsdecode(root))
        self.assertEqual(s.files, {EDITABLE: b"int u;\n"})
        for text in (s.name, s.path, *s.notes, *s.ignored_other):
            text.encode("utf-8")  # strict: no lone surrogates
            self.assertNotIn("\x1b", text)
        self.assertEqual(s.name, "odd\\xff")
        self.assertIn("notes\\xfe\\x1b[2J.txt", s.ignored_other)

    def test_an_oversized_file_is_refused(self):
        self.write(f"sub/{EDITABLE}", b"/" * (submission.MAX_FILE_BYTES + 1))
        s = self.load(os.path.join(self.tmp, "sub"))
        self.assertEqual(s.files, {})
        self.assertTrue(any("larger than" in n for n in s.notes))

    def test_a_lone_starter_is_kept_for_a_single_lab(self):
        self.write("sub/starter.cpp", b"int w;\n")
        self.assertEqual(self.load(os.path.join(self.tmp, "sub")).flat_starter, b"int w;\n")

    def test_a_pipe_is_refused_not_waited_on(self):
        fifo = os.path.join(self.tmp, "pipe.zip")
        os.mkfifo(fifo)
        with self.assertRaisesRegex(SubmissionError, "neither a folder nor a regular file"):
            submission.load(fifo, {EDITABLE})

    def test_an_unreadable_submission_is_a_submission_error(self):
        bad = self.write("bad.zip", b"not a zip")
        for path in (bad, os.path.join(self.tmp, "missing")):
            with self.subTest(path=path), self.assertRaises(SubmissionError):
                self.load(path)

    def test_the_build_of_a_submission_runs_under_an_address_space_limit(self):
        # A file that includes /dev/zero grew the compiler by ~350 MB/s until the machine ran
        # out of memory; the builds (not the configure step) now run under BUILD_MEM_MB.
        script = self.write("limit.cmake", 'execute_process(COMMAND sh -c "ulimit -v" '
                                           'OUTPUT_VARIABLE v)\nmessage("limit=${v}")\n')
        rc, out = workspace.Workspace._cmake(None, ["-P", script], 60, mem_limit=True)
        self.assertEqual(rc, 0, out)
        self.assertIn(f"limit={workspace.BUILD_MEM_MB * 1024}", out)
        rc, out = workspace.Workspace._cmake(None, ["-P", script], 60)
        self.assertIn("limit=unlimited", out)

    def test_a_compiler_dependency_file_is_read_as_make_reads_it(self):
        text = ("labs/x.dir/starter.cpp.o: /r/labs/lab01/starter.cpp \\\n"
                " /r/labs/lab01/prompt_lookup.h /r/odd\\ name.h \\\n"
                "  /usr/include/c++/12/vector\n"
                "/r/labs/lab01/prompt_lookup.h:\n")
        self.assertEqual(workspace.parse_depfile(text),
                         ["/r/labs/lab01/starter.cpp", "/r/labs/lab01/prompt_lookup.h",
                          "/r/odd name.h", "/usr/include/c++/12/vector"])

    def test_a_build_stopped_at_its_timeout_leaves_the_placed_files_newer_than_its_output(self):
        # The stopped build's compiler is killed, and may leave a half-written object file newer
        # than the student's file. The same file placed again is not rewritten (its mtime is what
        # make compares), so without a fresh mtime the next build would link that object.
        ws = workspace.Workspace(REPO, self.tmp)
        ws.place(EDITABLE, b"int x;\n")
        placed = os.path.join(ws.src, EDITABLE)
        now = time.time()
        os.utime(placed, (now - 100, now - 100))
        half_written = self.write("build/starter.cpp.o")
        os.utime(half_written, (now - 50, now - 50))
        with mock.patch.object(ws, "_cmake", return_value=(None, "stopped")):
            self.assertEqual(ws.build_targets(["lab01_tests_starter"], 1)[0], None)
        ws.place(EDITABLE, b"int x;\n")  # the same file again: not rewritten
        self.assertGreater(os.path.getmtime(placed), os.path.getmtime(half_written))

    def test_includes_outside_the_lab_folder_are_flagged(self):
        src = (b'#include "prompt_lookup.h"\n#include <vector>\n'
               b'#include "../../solutions/lab01_prompt_lookup/solution.cpp"\n'
               b'  #  include "/etc/passwd"\n')
        self.assertEqual(submission.suspicious_includes(src),
                         ["../../solutions/lab01_prompt_lookup/solution.cpp", "/etc/passwd"])

    def test_the_labs_to_grade_come_from_the_flag_the_manifest_or_the_files(self):
        declared = {"lab01": LAB}
        s = submission.Submission("s", "/s", {EDITABLE: b""})
        self.assertEqual(cli.choose_labs(s, ["lab01"], declared), ["lab01"])
        self.assertEqual(cli.choose_labs(s, [], declared), ["lab01"])
        s = submission.Submission("s", "/s", {}, manifest={"labs": ["lab01", "lab09"]})
        self.assertEqual(cli.choose_labs(s, [], declared), ["lab01"])
        self.assertTrue(any("lab09" in n for n in s.notes))
        with self.assertRaises(SubmissionError):
            cli.choose_labs(submission.Submission("s", "/s", {}), [], declared)
        # A manifest that names a lab twice (tools/submit never writes one) is graded once: it
        # scored 80 / 80 on a 40-point lab.
        s = submission.Submission("s", "/s", {}, manifest={"labs": ["lab01", "lab01"]})
        self.assertEqual(cli.choose_labs(s, [], declared), ["lab01"])
        self.assertTrue(any("names lab01 twice" in n for n in s.notes), s.notes)


def fake_case(body):
    """A stand-in for a doctest executable: a Python script testrun.run_case_detail can run."""
    fd, path = tempfile.mkstemp(suffix=".py", prefix="speclab-fake-case-")
    with os.fdopen(fd, "w") as f:
        # Python ignores SIGXFSZ; a C++ test executable does not.
        f.write(f"#!{sys.executable}\nimport os, signal, sys, time\n"
                f"signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n{textwrap.dedent(body)}")
    os.chmod(path, 0o755)
    return path


# doctest's summary, then the end marker tests/support/doctest_main.cpp prints once doctest
# returns (with the token tools/testrun.py gave the case, and doctest's result).
FAKE_SUMMARY = 'print("[doctest] test cases: 1 | {p} passed | {f} failed | 0 skipped")'
SUMMARY = (FAKE_SUMMARY + '; print("\\nspeclab-case-end " + os.environ["SPECLAB_CASE_TOKEN"] + '
           '" " + str(int(not ({p} == 1 and {f} == 0))))')
# What tests/support/test_util.h's skip() prints before it exits 77: the reason, then the token.
SKIP = ('print("SKIPPED: {reason}"); print("speclab-case-skip " + '
        'os.environ["SPECLAB_CASE_TOKEN"]); sys.exit(77)')


class CaseRunner(unittest.TestCase):
    def run_fake(self, body, **kw):
        path = fake_case(body)
        self.addCleanup(os.remove, path)
        return testrun.run_case_detail(path, "case", **kw)

    def test_each_way_a_case_can_end_is_told_apart(self):
        cases = [
            ("passed", SUMMARY.format(p=1, f=0)),
            ("failed", 'print("ERROR: CHECK( a == b ) is NOT correct!")\n' +
             SUMMARY.format(p=0, f=1) + "\nsys.exit(1)"),
            ("failed", 'print("==1==ERROR: AddressSanitizer: heap-buffer-overflow")\nsys.exit(1)'),
            ("exception", 'print("ERROR: test case THREW exception: boom")\n' +
             SUMMARY.format(p=0, f=1) + "\nsys.exit(1)"),
            ("memory", 'print("ERROR: test case THREW exception: std::bad_alloc")\n' +
             SUMMARY.format(p=0, f=1) + "\nsys.exit(1)"),
            ("exited", "sys.exit(0)"),
            ("failed", SUMMARY.format(p=0, f=0) + "\nsys.exit(0)"),  # 0 passed is no pass
            ("skipped", SKIP.format(reason="no usable CUDA device")),
            # Code under test that prints doctest's summary itself and ends the process: it used
            # to pass every case, hidden ones included.
            ("exited", FAKE_SUMMARY.format(p=1, f=0) + "\nsys.stdout.flush()\nos._exit(0)"),
            ("exited", FAKE_SUMMARY.format(p=1, f=0) + '\nprint("\\nspeclab-case-end 0123 0")'),
            # ... or does so after doctest has finished (an atexit handler that prints a passing
            # summary and _exit(0)s): the summary before the end marker and doctest's result in
            # it count. This passed every case of an untouched starter.
            ("failed", 'print("ERROR: CHECK( a == b ) is NOT correct!")\n' +
             SUMMARY.format(p=0, f=1) + "\n" + FAKE_SUMMARY.format(p=1, f=0) +
             "\nsys.stdout.flush()\nos._exit(0)"),
            ("exception", 'print("ERROR: test case THREW exception: TODO")\n' +
             SUMMARY.format(p=0, f=1) + "\n" + FAKE_SUMMARY.format(p=1, f=0) +
             "\nsys.stdout.flush()\nos._exit(0)"),
            # A copied summary before doctest's own: the last one counts.
            ("failed", FAKE_SUMMARY.format(p=1, f=0) + "\n" + SUMMARY.format(p=0, f=1) +
             "\nsys.exit(1)"),
        ]
        for status, body in cases:
            with self.subTest(body=body):
                r = self.run_fake(body, timeout=20)
                self.assertEqual(r.status, status, r.output)
                self.assertEqual(runner.classify(r), status)

    def test_signals_become_segfault_abort_and_output_limit(self):
        for sig, status in (("SIGSEGV", "segfault"), ("SIGABRT", "abort"),
                            ("SIGTERM", "crashed")):
            with self.subTest(sig=sig):
                r = self.run_fake(f"os.kill(os.getpid(), signal.{sig})", timeout=20)
                self.assertEqual((r.status, r.signal, runner.classify(r)),
                                 ("crashed", sig, status))
        r = self.run_fake("while True: sys.stdout.write('x' * 65536)", timeout=20, output_mb=1)
        self.assertEqual(runner.classify(r), "output_limit")
        self.assertLess(len(r.output), 2 * testrun.OUTPUT_KEEP + 200)

    def test_a_bad_executable_or_limit_is_a_usage_error(self):
        # A folder as --exe ended in a PermissionError traceback; --timeout -1 "timed out".
        testrun_py = os.path.join(REPO, "tools", "testrun.py")
        for args, message in (
                (["--exe", tempfile.gettempdir()], "is not an executable file"),
                (["--exe", "/bin/true", "--timeout", "-1"], "argument --timeout: must be > 0"),
                # Not a finite number names that, as tools/grade does ("must be > 0, got inf"
                # named the wrong problem).
                (["--exe", "/bin/true", "--timeout", "nan"],
                 "argument --timeout: expected a finite number, got nan"),
                (["--exe", "/bin/true", "--timeout", "inf"],
                 "argument --timeout: expected a finite number, got inf"),
                (["--exe", "/bin/true", "--mem-mb", "-5"], "argument --mem-mb: must be >= 0")):
            with self.subTest(args=args):
                p = subprocess.run([sys.executable, testrun_py, "case", "--case", "x", *args],
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(message, p.stderr)
                self.assertNotIn("Traceback", p.stderr)

    def test_a_skipped_case_says_why_it_skipped(self):
        r = self.run_fake(SKIP.format(reason="the model file is missing"), timeout=20)
        self.assertEqual(runner.classify(r), "skipped")
        self.assertEqual(runner.summarize("skipped", r.output, r, "case"),
                         "was skipped: the model file is missing")

    def test_a_one_line_description_names_the_status_once(self):
        # The reference check's error lists the cases that did not pass this way.
        def result(status, summary):
            return runner.TestResult("lab07", "case", "s", False, 1, 0, status, summary, "")
        self.assertEqual(runner.describe(result("skipped", "was skipped: no model file")),
                         "case: was skipped: no model file")
        self.assertEqual(runner.describe(result("exception", "threw an exception: TODO")),
                         "case: threw an exception: TODO")
        self.assertEqual(runner.describe(result("failed", "CHECK( a == b ) is NOT correct!")),
                         "case: failed: CHECK( a == b ) is NOT correct!")
        hidden = runner.TestResult("lab07", "h", "s", True, 1, 0, "timeout", "ran longer", "")
        self.assertEqual(runner.describe(hidden), "[hidden] h: timeout: ran longer")

    def test_exit_code_77_is_a_skip_only_after_the_skip_line_of_test_util_h(self):
        # The code under test calling std::exit(77) is an exit like any other: only skip()
        # (tests/support/test_util.h) prints "SKIPPED: <reason>" and the case's token before it
        # exits 77. The line alone, which the code under test can print too, is not enough.
        for body in ("sys.exit(77)", 'print("working on it")\nsys.exit(77)',
                     'print("not SKIPPED: here")\nsys.exit(77)',
                     'print("SKIPPED: no GPU here")\nsys.exit(77)',
                     'print("SKIPPED: no GPU here")\nprint("speclab-case-skip 0123")\n'
                     'sys.exit(77)'):
            with self.subTest(body=body):
                r = self.run_fake(body, timeout=20)
                self.assertEqual((r.status, runner.classify(r)), ("exited", "exited"), r.output)
                self.assertIn("exit code 77", runner.summarize("exited", r.output, r, "case"))
        r = self.run_fake('print("x")\n' + SKIP.format(reason="the model file is missing"),
                          timeout=20)
        self.assertEqual(r.status, "skipped", r.output)

    def test_a_case_that_ran_out_of_memory_before_its_time_ran_out_is_memory(self):
        # Each check of a memory hog fills the limit again before its bad_alloc: under a short
        # --timeout the case was killed as 'timeout' ("look for a loop that never ends"), and
        # which of its cases got which status changed from run to run.
        r = self.run_fake('print("t.cpp:1: ERROR: CHECK( f() ) THREW exception: std::bad_alloc",'
                          ' flush=True)\ntime.sleep(60)', timeout=1, mem_mb=512)
        self.assertEqual((r.status, runner.classify(r)), ("memory", "memory"), r.output)
        self.assertIn("ran out of its 512 MiB memory limit", r.output)
        self.assertIn("past its time limit (1 s)", r.output)
        r = self.run_fake('print("working", flush=True)\ntime.sleep(60)', timeout=1)
        self.assertEqual(r.status, "timeout", r.output)

    def test_only_running_out_of_memory_is_memory_not_a_message_that_names_bad_alloc(self):
        fail = "\n" + SUMMARY.format(p=0, f=1) + "\nsys.exit(1)"
        terminate = ("print(\"terminate called after throwing an instance of 'std::bad_alloc'\")"
                     "\nprint('  what():  std::bad_alloc', flush=True)\n"
                     "os.kill(os.getpid(), signal.SIGABRT)")
        cases = [
            # What doctest prints when std::bad_alloc escapes the case or a check, and what the
            # C++ runtime prints when it escapes where nothing catches it.
            ("memory", 'print("t.cpp:1: ERROR: test case THREW exception: std::bad_alloc")' +
             fail),
            ("memory", 'print("t.cpp:1: ERROR: CHECK( f() ) THREW exception: std::bad_alloc")' +
             fail),
            ("memory", """print('ERROR: CHECK( f() ) THREW exception: "std::bad_alloc"')""" +
             fail),
            ("memory", "print('ERROR: CHECK_THROWS_AS( f(), E ) threw a DIFFERENT exception: "
                       "\"std::bad_alloc\"')" + fail),
            ("memory", terminate),
            # Messages that only mention it.
            ("exception", 'print("ERROR: test case THREW exception: caught std::bad_alloc '
                          'earlier")' + fail),
            ("failed", """print('ERROR: CHECK( why == "std::bad_alloc" ) is NOT correct!')""" +
             fail),
            ("failed", "print('ERROR: CHECK_THROWS_AS( f(), E ) threw a DIFFERENT exception: "
                       "\"caught std::bad_alloc earlier\"')" + fail),
            ("exited", 'print("retrying after bad_alloc")\nsys.exit(3)'),
            ("abort", 'print("bad_alloc is handled elsewhere", flush=True)\n'
                      "os.kill(os.getpid(), signal.SIGABRT)"),
        ]
        for status, body in cases:
            with self.subTest(body=body):
                r = self.run_fake(body, timeout=20, mem_mb=512)
                self.assertEqual(runner.classify(r), status, r.output)
                summary = runner.summarize(status, r.output, r, "case")
                if status == "memory":
                    self.assertEqual(summary, "ran out of its 512 MiB memory limit.")
                else:
                    self.assertNotIn("memory", summary)
        r = self.run_fake('print("ERROR: test case THREW exception: std::bad_alloc")' + fail,
                          timeout=20, mem_mb=0)
        self.assertEqual(runner.summarize("memory", r.output, r, "case"),
                         "ran out of memory (no memory limit was set).")

    def test_a_program_that_cannot_start_under_its_memory_limit_is_not_blamed_on_exit(self):
        # Under a tiny address-space limit the dynamic loader cannot map the C++ libraries and
        # exits 127 before doctest prints anything (tools/grade --mem-mb 1 did this).
        loader = ('sys.stderr.write("x: error while loading shared libraries: libc.so.6: failed '
                  'to map segment from shared object\\n")\nsys.exit(127)')
        for body in (loader, "sys.exit(127)"):
            with self.subTest(body=body):
                r = self.run_fake(body, timeout=20, mem_mb=256)
                self.assertEqual((r.status, runner.classify(r)), ("nostart", "error"), r.output)
                summary = runner.summarize("error", r.output, r, "case")
                self.assertIn("256 MiB memory limit may be too small for the program to start",
                              summary)
                self.assertNotIn("exit()", summary)
                # Without the loader's own complaint, the student's code may as well have ended
                # the program before main (a global object's constructor calling _exit(127)):
                # the message names both, where it blamed the limit alone.
                if body == loader:
                    self.assertNotIn("before main", summary)
                else:
                    self.assertIn("or code that runs before main (a global object's constructor) "
                                  "ended the program", summary)
        r = testrun.run_case_detail("/bin/true", "case", timeout=20, mem_mb=1)
        self.assertEqual(r.status, "nostart", r.output)
        # Exit code 127 after doctest started, or with no memory limit, is the code's own exit.
        for body, mem_mb in (('print("[doctest] run with \\"--help\\" for options")\n'
                              "sys.exit(127)", 256), ("sys.exit(127)", 0)):
            with self.subTest(body=body, mem_mb=mem_mb):
                r = self.run_fake(body, timeout=20, mem_mb=mem_mb)
                self.assertEqual(r.status, "exited", r.output)
                self.assertIn("exit code 127", runner.summarize("exited", r.output, r, "case"))

    def test_a_crash_before_doctest_starts_points_before_main(self):
        # Static data larger than the memory limit, or a global object's constructor that
        # dereferences a bad pointer, kill the program before doctest prints its header: the
        # hint named only "an out-of-range index or an invalid pointer" in the student's cases.
        crash = "os.kill(os.getpid(), signal.SIGSEGV)"
        r = self.run_fake(crash, timeout=20, mem_mb=256)
        self.assertEqual(runner.classify(r), "segfault", r.output)
        self.assertIn("it crashed before doctest started: look in code that runs before main (a "
                      "global object's constructor), or for static data larger than the 256 MiB "
                      "memory limit", r.output)
        r = self.run_fake(crash, timeout=20, mem_mb=0)
        self.assertIn("before doctest started", r.output)
        self.assertNotIn("memory limit", r.output)
        r = self.run_fake('print("[doctest] run with \\"--help\\" for options", flush=True)\n' +
                          crash, timeout=20, mem_mb=256)
        self.assertEqual(runner.classify(r), "segfault", r.output)
        self.assertNotIn("before doctest started", r.output)
        self.assertIn("Look for an out-of-range index or an invalid pointer.", r.output)

    def test_processes_a_case_leaves_behind_are_killed_even_in_a_session_of_their_own(self):
        # A student's fork() that outlives its case would go on using the CPU while the next
        # students are graded, and push their correct code past its time limit.
        pid_file = os.path.join(tempfile.mkdtemp(prefix="speclab-grader-test-"), "pids")
        self.addCleanup(shutil.rmtree, os.path.dirname(pid_file), True)
        path = fake_case(f"""
            for detach in (False, True):
                if os.fork() == 0:
                    if detach:
                        os.setsid()
                        if os.fork():  # a daemon: its parent exits at once
                            os._exit(0)
                    with open({pid_file!r}, "a") as f:
                        f.write(f"{{os.getpid()}}\\n")
                    time.sleep(60)
                    os._exit(0)
            deadline = time.monotonic() + 10  # until both have written their pid, not a fixed time
            while time.monotonic() < deadline:
                if os.path.exists({pid_file!r}) and len(open({pid_file!r}).read().split()) == 2:
                    break
                time.sleep(0.01)
            {SUMMARY.format(p=1, f=0)}
            """)
        self.addCleanup(os.remove, path)
        (r,) = runner.run_cases(path, [("case", "S")], {"case": 1}, "lab01", False, timeout=20,
                                mem_mb=0, jobs=1)
        self.assertEqual(r.status, "passed", r.output)
        with open(pid_file) as f:
            pids = [int(line) for line in f.read().split()]
        self.assertEqual(len(pids), 2)
        for pid in pids:
            with self.subTest(pid=pid):
                self.assertFalse(os.path.exists(f"/proc/{pid}"), "still running after its case")

    def test_cases_run_in_a_scratch_folder_and_control_characters_are_escaped(self):
        # A case's debug log landed in the folder tools/grade was started from (the
        # instructor's checkout), and its escape sequences reached the instructor's terminal.
        exe = fake_case(f"""\
            open("speclab_debug.log", "w").write("x")
            print("ERROR: \\x1b[2J\\x1b[31mALL TESTS PASSED")
            {SUMMARY.format(p=0, f=1)}
            sys.exit(1)
            """)
        self.addCleanup(os.remove, exe)
        before = set(os.listdir("."))
        [r] = runner.run_cases(exe, [("case", "s")], {"case": 1.0}, "lab01", False, 10, 0, 1)
        self.assertEqual(set(os.listdir(".")), before)
        self.assertEqual(r.status, "failed")
        self.assertNotIn("\x1b", r.summary + r.output)
        self.assertIn("\\x1b[2J", r.summary)

    def test_a_case_that_never_ends_is_killed_at_its_timeout(self):
        r = self.run_fake("time.sleep(60)", timeout=1)
        self.assertEqual(r.status, "timeout")
        self.assertLess(r.seconds, 10)
        self.assertEqual(runner.summarize("timeout", r.output, r, "case"),
                         "ran longer than 1 s and was stopped (doctest reports the stop as "
                         "CRASHED: SIGTERM, with what the case had logged). Look for a loop that "
                         "never ends.")
        # SIGTERM first, so that doctest can report the case; one that ignores it is killed.
        r = self.run_fake("signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)",
                          timeout=1)
        self.assertEqual(r.status, "timeout")
        self.assertLess(r.seconds, 1 + testrun.TERM_GRACE_S + 5)


def sample_grade(build_status="ok"):
    t = [runner.TestResult("lab01", "passes", "lab01 / A", False, 2, 2, "passed", "passed", "",
                           0.1),
         runner.TestResult("lab01", "crashes \x00\x1b[31m", "lab01 / A", False, 3, 0, "segfault",
                           "crashed", "bad \x01 output", 0.2),
         runner.TestResult("lab01", "fails", "lab01 / B", False, 1, 0, "failed", "CHECK", "o"),
         runner.TestResult("lab01", "secret", "lab01 hidden / C", True, 4, 4, "passed", "", "")]
    lg = reports.LabGrade(LAB, build_status, "warning: x", EDITABLE, "ab", t)
    return reports.Grade("alice", "/x/alice.zip", [lg], ["a note"], None, 1.5, {})


class SkipReport(TempDir):
    # The reports are the subject here, so they must run even where SPECLAB_CTEST_HOOKS=0 (set
    # by hand, or by a test that runs ctest itself) turns them off.
    def setUp(self):
        super().setUp()
        env = mock.patch.dict(os.environ)
        env.start()
        self.addCleanup(env.stop)
        os.environ.pop("SPECLAB_CTEST_HOOKS", None)

    def test_skipped_cases_are_listed_under_their_reason_and_cleared_before_a_run(self):
        build = self.tmp
        open(os.path.join(build, "CMakeCache.txt"), "w").close()
        exe = os.path.join(build, "tests", "some_tests")
        os.makedirs(os.path.dirname(exe))
        self.assertEqual(testrun.build_dir_of(exe), build)
        testrun.record_skip(build, "gpu case A", "x\nSKIPPED: no usable CUDA device\n")
        testrun.record_skip(build, "gpu case B", "SKIPPED: no usable CUDA device\n")
        testrun.record_skip(build, "model case", "SKIPPED: the model file is missing\n")
        args = argparse.Namespace(build_dir=build, clear=False)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            testrun.cmd_skip_report(args)
        self.assertIn("Skipped test cases (3), and why:\n"
                      "  no usable CUDA device\n      gpu case A\n      gpu case B\n"
                      "  the model file is missing\n      model case\n", out.getvalue())
        testrun.cmd_skip_report(argparse.Namespace(build_dir=build, clear=True))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            testrun.cmd_skip_report(args)
        self.assertEqual(out.getvalue(), "")

    def test_a_build_dir_that_is_not_a_build_tree_is_a_usage_error(self):
        testrun_py = os.path.join(REPO, "tools", "testrun.py")
        for cmd in ("mutant-report", "skip-report"):
            for build in (os.path.join(self.tmp, "missing"), self.tmp):
                with self.subTest(cmd=cmd, build=build):
                    p = subprocess.run([sys.executable, testrun_py, cmd, "--build-dir", build],
                                       capture_output=True, text=True)
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn(f"{build} is not a CMake build folder (no CMakeCache.txt)",
                                  p.stderr)
        open(os.path.join(self.tmp, "CMakeCache.txt"), "w").close()
        for cmd in ("mutant-report", "skip-report"):
            p = subprocess.run([sys.executable, testrun_py, cmd, "--build-dir", self.tmp],
                               capture_output=True, text=True)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "", ""))


class Reports(unittest.TestCase):
    def test_gradescope_results_have_the_documented_fields_and_hidden_tests_wait(self):
        for build in ("ok", "compile_error"):
            with self.subTest(build=build):
                gs = reports.gradescope_json(sample_grade(build))
                self.assertEqual(reports.validate_gradescope(gs), [])
                self.assertEqual(gs["score"], 6)
                vis = {t["name"]: t["visibility"] for t in gs["tests"]}
                self.assertEqual(vis["[hidden] lab01 hidden / C / secret"], "after_due_date")
                self.assertEqual(vis["lab01 / A / passes"], "visible")
                self.assertEqual("lab01: build" in vis, build != "ok")

    def test_gradescope_top_level_output_counts_and_scores_visible_cases_only(self):
        for build in ("ok", "compile_error", "not_submitted"):
            with self.subTest(build=build):
                g = sample_grade(build)
                if build != "ok":
                    for t in g.labs[0].tests:
                        t.score, t.status = 0, build
                out = reports.gradescope_json(g)["output"]
                # Public: 3 cases worth 2 + 3 + 1; hidden: 1 case worth 4.
                passed = 1 if build == "ok" else 0
                self.assertIn(f"{2 * passed} / 6 points from its 3 visible test cases "
                              f"({passed} passed)", out)
                self.assertNotIn("hidden", out.lower())
                self.assertNotIn("secret", out)
                self.assertNotRegex(out, r"\b(4|10)\b")  # hidden points, or the lab's total
                self.assertIn("Note: a note", out)

    def test_points_with_more_than_two_decimals_add_up_in_every_report(self):
        # Points "may have decimals": eight cases of 0.125 (1 point in eighths) were each
        # reported as 0.12, beside a top-level score of 1, which Gradescope's sum of the tests
        # (0.96) contradicts; 0.333 three times gave 0.33 each and a total of 1.
        for pts, n in ((0.125, 8), (0.333, 3), (0.1, 10)):
            with self.subTest(points=pts):
                ts = [runner.TestResult("lab01", f"case {i}", "lab01 / A", False, pts, pts,
                                        "passed", "passed", "", 0.1) for i in range(n)]
                g = reports.Grade("alice", "/x/alice.zip",
                                  [reports.LabGrade(LAB, "ok", tests=ts)], [], None, 1.0, {})
                gs = reports.gradescope_json(g)
                self.assertEqual(reports.validate_gradescope(gs), [])
                self.assertEqual([t["score"] for t in gs["tests"]], [pts] * n)
                self.assertAlmostEqual(gs["score"], pts * n, places=9)
                data = reports.grade_json(g)
                self.assertEqual([t["max_score"] for t in data["labs"][0]["tests"]], [pts] * n)
                self.assertIn(f"{reports.num(pts)} / {reports.num(pts)}", reports.table(g))
        self.assertEqual((reports.num(0.1 * 3), reports.num(0.1 * 10), reports.num(2.0)),
                         (0.3, 1, 2))
        self.assertIsInstance(reports.num(0.1 * 10), int)

    def test_the_validator_catches_what_gradescope_would_reject(self):
        good = reports.gradescope_json(sample_grade())
        for mutate, message in (
                (lambda g: g.pop("score"), "'score' is missing"),
                (lambda g: g.update(bogus=1), "unknown top-level field 'bogus'"),
                (lambda g: g["tests"][0].update(status="ok"), "'passed' or 'failed'"),
                (lambda g: g["tests"][0].update(visibility="later"), "'visibility'"),
                (lambda g: g["tests"][0].update(score=99), "exceeds max_score"),
                (lambda g: g["tests"][0].pop("name"), "'name' is missing"),
                (lambda g: g.update(score=1), "!= sum of test scores")):
            g = json.loads(json.dumps(good))
            mutate(g)
            with self.subTest(message=message):
                self.assertTrue(any(message in p for p in reports.validate_gradescope(g)),
                                reports.validate_gradescope(g))

    def test_junit_xml_parses_and_counts_failures_and_errors(self):
        root = ET.fromstring(reports.junit_xml(sample_grade()).encode())
        self.assertEqual((root.get("tests"), root.get("failures"), root.get("errors")),
                         ("4", "1", "1"))
        self.assertEqual(root.find(".//testcase[@name='fails']/failure").get("type"), "failed")
        root = ET.fromstring(reports.junit_xml(sample_grade("compile_error")).encode())
        self.assertEqual(root.get("tests"), "5")

    def test_a_skipped_case_is_skipped_in_junit_xml_not_passed_nor_an_error(self):
        g = sample_grade()
        g.labs[0].tests.append(runner.TestResult(
            "lab01", "needs the model", "lab01 / D", False, 2, 0, "skipped",
            "was skipped: the model file is missing", "SKIPPED: the model file is missing", 0.0))
        root = ET.fromstring(reports.junit_xml(g).encode())
        case = root.find(".//testcase[@name='needs the model']")
        self.assertEqual([child.tag for child in case if child.tag != "properties"], ["skipped"])
        self.assertIn("the model file is missing", case.find("skipped").get("message"))
        self.assertEqual((root.get("tests"), root.get("failures"), root.get("errors"),
                          root.get("skipped")), ("5", "1", "1", "1"))
        suite = root.find("testsuite[@name='lab01 / D']")
        self.assertEqual((suite.get("tests"), suite.get("errors"), suite.get("skipped")),
                         ("1", "0", "1"))
        self.assertEqual(root.find("testsuite[@name='lab01 / A']").get("skipped"), "0")

    def test_grade_json_and_the_table_show_every_test(self):
        g = sample_grade()
        data = reports.grade_json(g)
        self.assertEqual((data["score"], data["max_score"]), (6, 10))
        self.assertEqual(len(data["labs"][0]["tests"]), 4)
        text = reports.table(g)
        self.assertIn("SEGFAULT", text)
        self.assertIn("[hidden] lab01 hidden / C", text)

    def test_the_table_shows_each_suite_once_whatever_order_its_cases_come_in(self):
        # doctest lists cases by file and line, and one file may come back to a suite
        # (tests/lab07/test_glue.cpp does): the suite's heading must still appear once.
        g = sample_grade()
        back = runner.TestResult("lab01", "comes back", "lab01 / A", False, 1, 1, "passed",
                                 "passed", "")
        g.labs[0].tests.insert(3, back)  # after "fails", which is in lab01 / B
        lines = reports.table(g).splitlines()
        headings = [line.strip() for line in lines if line.strip().startswith("lab01 / ")]
        self.assertEqual(headings, ["lab01 / A", "lab01 / B"])
        names = [line.split()[-1] for line in lines if line.startswith("      ") and
                 "->" not in line]
        self.assertLess(names.index("back"), names.index("fails"),
                        "a suite's cases stay together, in their order")


class QuietWorkspace:
    """What the fake workspaces below share: build output shown as it is, and a student's code
    that changes no file."""

    def clean_build_output(self, text):
        return text

    def relative_paths(self, text):
        return text

    def stamp(self):
        pass

    def undo_changes(self):
        return []

    def checkout_changes(self):
        return []

    def wrote_reports(self, paths):
        self.reports = getattr(self, "reports", []) + list(paths)


class FakeWorkspace(QuietWorkspace):
    """Stands in for workspace.Workspace in grade_submission: each build_targets call pops the
    next (ok, output) from `builds` and records the targets it was asked for."""

    hidden = "/instructor/hidden"
    repo = "/instructor/speclab"
    work = "/instructor/speclab/build/grading"

    def __init__(self, builds, deps=()):
        self.builds, self.built, self.deps = list(builds), [], list(deps)

    def place(self, rel, data):
        pass

    def targets(self, lab, impl):
        return [f"{lab.name}_tests_{impl}", f"{lab.name}_hidden_{impl}"]

    def build_targets(self, targets, timeout):
        self.built.append(targets)
        return self.builds.pop(0)

    def starter_dependencies(self, lab):
        return self.deps

    def exe(self, lab, impl, hidden=False):
        return "/nonexistent"


class GradeOneSubmission(unittest.TestCase):
    """cli.grade_submission with a fake workspace: what a student's build failure shows, and
    where."""

    def grade(self, builds, deps=(), files=None):
        setup = cli.LabSetup(LAB, [], {}, [("secret case", "lab01 hidden / S")],
                             {"secret case": 4.0}, 5, 512)
        ws = FakeWorkspace(builds, deps)
        sub = submission.Submission("alice", "/x/alice", files or {EDITABLE: b"int x;"})
        args = argparse.Namespace(build_timeout=60, jobs=1)
        return ws, cli.grade_submission(ws, sub, ["lab01"], {"lab01": setup}, args)

    def test_a_grading_folder_that_cannot_be_put_back_stops_the_run_with_a_reason(self):
        # A student's code that makes a folder of the copy unwritable (as a user other than
        # root) would end the run in a PermissionError traceback.
        def refuse():
            raise PermissionError(13, "Permission denied", "/w/src/labs")
        with mock.patch.object(FakeWorkspace, "undo_changes", side_effect=refuse, create=True), \
                mock.patch.object(cli.runner, "run_cases", passing_cases):
            with self.assertRaisesRegex(GradingError, r"(?s)could not put the grading folder "
                                        r"back after alice's lab01 cases.*Permission denied"):
                self.grade([(True, "ok"), (True, "ok")])

    def test_a_solution_or_test_file_the_compiler_read_is_flagged_however_it_was_included(self):
        # An '#include SOL' through a macro escapes the text check; the dependency list does not.
        engine = ["labs/lab01_prompt_lookup/prompt_lookup.h", "mini_engine/core/token.h",
                  "/usr/include/c++/12/vector"]
        _, g = self.grade([(True, "ok"), (True, "ok")], deps=engine)
        self.assertEqual([n for n in g.notes if "dependency list" in n], [])
        leak = engine + ["solutions/lab01_prompt_lookup/solution.cpp", "tests/lab01/helpers.h"]
        _, g = self.grade([(True, "ok"), (True, "ok")], deps=leak)
        flagged = [n for n in g.notes if "dependency list" in n]
        self.assertEqual(len(flagged), 2, g.notes)
        self.assertEqual(g.check, flagged)  # summary.csv's 'check' column lists them
        self.assertIn("solutions/lab01_prompt_lookup/solution.cpp", flagged[0])
        self.assertIn("tests/lab01/helpers.h", flagged[1])

    def test_a_file_outside_the_grading_copy_is_flagged_unless_it_is_a_system_header(self):
        # '#define SOL "../../../../../solutions/..."' climbs out of the grading copy into the
        # instructor's checkout: its absolute path used to pass unflagged, and so did any other
        # file outside the copy.
        fine = ["labs/lab01_prompt_lookup/prompt_lookup.h", "/usr/include/c++/12/vector",
                "/usr/include/eigen3/Eigen/Core",
                "/instructor/speclab/build/grading/build/generated.h"]
        _, g = self.grade([(True, "ok"), (True, "ok")], deps=fine)
        self.assertEqual([n for n in g.notes if "dependency list" in n], [])
        outside = ["/instructor/speclab/solutions/lab01_prompt_lookup/solution.cpp",
                   "/instructor/speclab/labs/lab01_prompt_lookup/prompt_lookup.h",
                   "/tmp/answers/solution.cpp"]
        _, g = self.grade([(True, "ok"), (True, "ok")], deps=fine + outside)
        flagged = [n for n in g.notes if "dependency list" in n]
        self.assertEqual(len(flagged), 3, g.notes)
        self.assertEqual(g.check, flagged)
        self.assertIn("/instructor/speclab/solutions/lab01_prompt_lookup/solution.cpp", flagged[0])
        self.assertIn("instructor's checkout", flagged[0])
        self.assertIn("instructor's checkout", flagged[1])
        self.assertIn("/tmp/answers/solution.cpp", flagged[2])
        self.assertIn("outside the grading copy and the system's headers", flagged[2])

    def test_another_labs_file_that_this_run_does_not_grade_is_named(self):
        # A student who uploads lab02's zip to the lab01 assignment must not read only "not
        # submitted": the report names the file that came and says it was not graded.
        other = "labs/lab02_ngram_storage/starter.cpp"
        _, g = self.grade([], files={other: b"int y;"})
        self.assertEqual(g.labs[0].build_status, "not_submitted")
        named = [n for n in g.notes if other in n]
        self.assertEqual(len(named), 1, g.notes)
        self.assertIn("not graded", named[0])
        self.assertIn("lab01", named[0])
        self.assertIn(other, reports.gradescope_json(g)["output"])
        _, g = self.grade([(True, "ok"), (True, "ok")])
        self.assertEqual([n for n in g.notes if "not graded" in n], [])

    def test_a_header_that_differs_from_the_one_the_zip_was_made_with_is_named(self):
        with open(os.path.join(REPO, HEADER), "rb") as f:
            ours = submission.sha256(f.read())
        for sha, named in ((ours, False), ("0" * 64, True)):
            with self.subTest(named=named):
                sub = submission.Submission("alice", "/x/alice", {EDITABLE: b"int x;"}, manifest={
                    "labs": ["lab01"], "headers": [{"path": HEADER, "sha256": sha}]})
                setup = cli.LabSetup(LAB, [], {}, [], {}, 5, 512)
                g = cli.grade_submission(FakeWorkspace([(False, "error: no my_helper")]), sub,
                                         ["lab01"], {"lab01": setup},
                                         argparse.Namespace(build_timeout=60, jobs=1))
                notes = [n for n in g.notes if HEADER in n]
                self.assertEqual(len(notes), int(named), g.notes)
                if named:
                    self.assertIn("differs from the one the submission was made with", notes[0])
                    self.assertIn(HEADER, reports.gradescope_json(g)["output"])

    def test_a_public_compile_error_is_shown_from_the_public_build_alone(self):
        ws, g = self.grade([(False, "starter.cpp:1: error: expected ';'")])
        self.assertEqual(ws.built, [["lab01_tests_starter"]])  # the hidden target never built
        lg = g.labs[0]
        self.assertEqual((lg.build_status, lg.build_output),
                         ("compile_error", "starter.cpp:1: error: expected ';'"))
        self.assertEqual([t.status for t in lg.tests], ["compile_error"])

    def test_compiler_output_reaches_the_terminal_without_escape_sequences(self):
        # g++ quotes the offending source line as it is: a student's file with an escape
        # sequence in a string on an error line (clear the screen, change the colour) wrote it
        # raw into the instructor's terminal through the table, as case output never does.
        esc = "starter.cpp:1:18: error: invalid conversion\n    1 | return \"\x1b[2J\x1b[31mX\";"
        for builds in ([(False, esc)], [(True, esc), (False, esc)]):
            with self.subTest(public_ok=builds[0][0]):
                _, g = self.grade(builds)
                lg = g.labs[0]
                for text in (lg.build_output, lg.hidden_build_output or "", reports.table(g)):
                    self.assertNotIn("\x1b", text)
                self.assertIn("\\x1b[2J", reports.table(g))

    def test_a_build_stopped_at_the_build_timeout_says_so_first_and_asks_for_a_check(self):
        # A lab file whose compile ran past --build-timeout (a constexpr loop, or a busy machine)
        # read "did not compile" and "not run: the lab did not compile" everywhere, with the one
        # line that said why last, after the compiler's output (the table shows 60 lines of it).
        warnings = "\n".join(f"starter.cpp:{i}: warning: unused" for i in range(100))
        ws, g = self.grade([(None, warnings + "\nThe build was stopped after 60 s.")])
        self.assertEqual(ws.built, [["lab01_tests_starter"]])
        lg = g.labs[0]
        self.assertEqual(lg.build_status, "compile_error")
        self.assertEqual(lg.build_timeout, 60)
        for t in lg.tests:
            self.assertEqual((t.status, t.score), ("compile_error", 0))
            self.assertIn("ran past its time limit (60 s, --build-timeout)", t.summary)
        self.assertEqual(len(g.check), 1, g.check)
        self.assertIn("--build-timeout", g.check[0])
        self.assertIn(g.check[0], g.notes)
        table = reports.table(g).splitlines()
        self.assertIn("BUILD STOPPED after 60 s", table[2])
        build = next(t for t in reports.gradescope_json(g)["tests"] if t["name"] == "lab01: build")
        self.assertTrue(build["output"].startswith(
            "lab01's build ran past its time limit of 60 s and was stopped"), build["output"])
        self.assertIn("did not finish in time", reports.gradescope_json(g)["output"])
        self.assertIs(reports.grade_json(g)["labs"][0]["build"]["timed_out"], True)
        # A plain compile error is not called a timeout.
        _, g = self.grade([(False, "starter.cpp:1: error: expected ';'")])
        self.assertIsNone(g.labs[0].build_timeout)
        self.assertEqual(g.check, [])
        self.assertIs(reports.grade_json(g)["labs"][0]["build"]["timed_out"], False)
        self.assertIn("COMPILE ERROR", reports.table(g))

    def test_a_file_that_builds_with_the_public_tests_but_not_the_hidden_ones(self):
        leak = "ld: lab01_hidden_cases.dir/instructor/hidden/lab01/test_secret.cpp.o: undefined"
        ws, g = self.grade([(True, "public ok"), (False, leak)])
        self.assertEqual(ws.built, [["lab01_tests_starter"], ["lab01_hidden_starter"]])
        lg = g.labs[0]
        self.assertEqual(lg.build_status, "ok")
        self.assertEqual(lg.build_output, "public ok")
        self.assertEqual(lg.hidden_build_output, leak)
        (t,) = lg.tests
        self.assertEqual((t.hidden, t.status, t.score), (True, "compile_error", 0))
        self.assertIn("hidden", t.summary)
        gs = reports.gradescope_json(g)
        self.assertEqual(reports.validate_gradescope(gs), [])
        for entry in gs["tests"]:
            if "test_secret" in entry["output"] or "hidden" in entry["output"]:
                self.assertEqual(entry["visibility"], "after_due_date", entry)
        self.assertNotIn("test_secret", gs["output"])
        self.assertEqual(reports.grade_json(g)["labs"][0]["build"]["hidden_output"], leak)
        self.assertIn("HIDDEN TESTS DID NOT BUILD", reports.table(g))


LAB02 = Lab("lab02", "lab02_ngram_storage", 30.0, 2048)


class TimedWorkspace(QuietWorkspace):
    """Stands in for workspace.Workspace in cli.grade (lab01 and lab02, no hidden tests): each
    build sleeps `seconds` (`slow` seconds for the labs it names; stopped at its timeout, as the
    real one is) and records the targets and the lab file it built; `events` records the
    reference build, each build and the restore."""

    hidden = None

    def __init__(self, seconds, slow=None):
        self.seconds, self.slow, self.files, self.events = seconds, slow or {}, {}, []

    def __call__(self, repo, work, hidden=None, jobs=2, log=None):  # the Workspace constructor
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.events.append("restore")

    def sync(self):
        pass

    def configure(self):
        pass

    def labs(self):
        return {"lab01": LAB, "lab02": LAB02}

    def build_reference(self, lab):
        self.events.append("reference built")

    def cases(self, lab, hidden=False):
        names = read_points(lab.points_path(os.path.join(REPO, "tests"))).values
        return [] if hidden else [(n, f"{lab.name} / A") for n in names]

    def hidden_sources(self, lab):
        return []

    def targets(self, lab, impl):
        return [f"{lab.name}_tests_{impl}"]

    def place(self, rel, data):
        self.files[rel] = data

    def build_targets(self, targets, timeout):
        lab = self.labs()[targets[0].split("_")[0]]
        seconds = self.slow.get(lab.name, self.seconds)
        time.sleep(min(seconds, timeout))
        self.events.append((targets, self.files.get(lab.editable[0])))
        return (None, "stopped") if seconds > timeout else (True, "built")

    def starter_dependencies(self, lab):
        return []

    def exe(self, lab, impl, hidden=False):
        return f"/fake/{lab.name}_{impl}"


def passing_cases(exe, cases, points, lab, hidden, *args, **kw):
    return [runner.TestResult(lab, n, s, hidden, points[n], points[n], "passed", "passed", "")
            for n, s in cases]


class BuildTimeoutCheck(TempDir):
    """--build-timeout is checked against the reference solution before any submission is
    graded, as --timeout is: the reference's file, built as a submission's is (the lab's file
    recompiled, its tests relinked), must take at most half the limit. A limit too short for a
    correct submission would otherwise score every submission 0 as compile_error."""

    STUDENT = b"// alice's lab01\n"

    def run_grade(self, seconds, *flags, workspace=False):
        """cli.main on one lab01 submission with builds that take `seconds`: (exit status,
        stderr, the workspace's events), and the workspace with workspace=True."""
        sub = os.path.dirname(os.path.dirname(os.path.dirname(
            self.write(f"alice/{EDITABLE}", self.STUDENT))))
        ws = TimedWorkspace(seconds)
        err = io.StringIO()
        with mock.patch.object(cli, "Workspace", ws), \
                mock.patch.object(cli.runner, "run_cases", passing_cases), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main([sub, "--lab", "lab01", "--work", os.path.join(self.tmp, "work"),
                           "--out", os.path.join(self.tmp, "out"), *flags])
        return (rc, err.getvalue(), ws.events) + ((ws,) if workspace else ())

    def reference(self):
        with open(os.path.join(REPO, "solutions", LAB.dir, "solution.cpp"), "rb") as f:
            return f.read()

    def test_a_build_timeout_too_short_for_the_reference_stops_grading_before_any_submission(self):
        rc, err, events = self.run_grade(0.3, "--build-timeout", "0.5")
        self.assertEqual(rc, 1, err)
        # The reference's file was built as a submission's, and no student's file was built.
        self.assertEqual(events, ["reference built", (["lab01_tests_starter"], self.reference()),
                                  "restore"])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))
        msg = " ".join(err.split())
        self.assertIn("--build-timeout 0.5 s", msg)
        took = re.search(r"reference solution of lab01\b.* took ([0-9.]+) s", msg)
        self.assertIsNotNone(took, msg)
        self.assertGreaterEqual(float(took.group(1)), 0.3)  # the fake build's sleep
        self.assertIn("at least twice", msg)
        self.assertIn("--no-reference-check", msg)

    def test_a_reference_build_stopped_at_the_limit_stops_grading_too(self):
        rc, err, events = self.run_grade(5, "--build-timeout", "0.2")
        self.assertEqual(rc, 1, err)
        self.assertEqual(len([e for e in events if isinstance(e, tuple)]), 1, events)
        msg = " ".join(err.split())
        self.assertIn("--build-timeout 0.2 s", msg)
        self.assertIn("did not finish within", msg)

    def test_a_build_timeout_with_room_to_spare_grades_the_submission(self):
        rc, err, events, ws = self.run_grade(0.1, "--build-timeout", "5", workspace=True)
        self.assertEqual(rc, 0, err)
        builds = [e for e in events if isinstance(e, tuple)]
        self.assertEqual(builds, [(["lab01_tests_starter"], self.reference()),
                                  (["lab01_tests_starter"], self.STUDENT)])
        self.assertRegex(err, r"lab01 reference builds as a submission in [0-9.]+ s "
                              r"\(--build-timeout 5 s\)")
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "out", "grade.json")))
        # The workspace knows the reports are the run's own writes, not a submission's doing.
        self.assertEqual(sorted(ws.reports), sorted(os.path.join(self.tmp, "out", name)
                                                    for name in reports.REPORT_FILES))

    def test_no_reference_check_skips_it(self):
        rc, err, events = self.run_grade(0.3, "--build-timeout", "0.5", "--no-reference-check")
        self.assertEqual(rc, 0, err)
        builds = [e for e in events if isinstance(e, tuple)]
        self.assertEqual(builds, [(["lab01_tests_starter"], self.STUDENT)])

    def test_every_lab_a_class_run_grades_is_checked_before_anyone_is_graded(self):
        # alice hands in lab01, bob lab02 and carol lab01, with no --lab. A lab's reference
        # check ran when the first submission naming it came up, so lab02's failing check
        # stopped the run after alice had been graded, with no summary, and carol never was.
        subs = []
        for name, lab in (("alice", LAB), ("bob", LAB02), ("carol", LAB)):
            path = self.write(f"{name}/{lab.editable[0]}", f"// {name}\n")
            subs.append(os.path.join(self.tmp, name))
        ws = TimedWorkspace(0.05, slow={"lab02": 5})
        err = io.StringIO()
        out = os.path.join(self.tmp, "out")
        with mock.patch.object(cli, "Workspace", ws), \
                mock.patch.object(cli.runner, "run_cases", passing_cases), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main([*subs, "--work", os.path.join(self.tmp, "work"), "--out", out,
                           "--build-timeout", "0.5"])
        self.assertEqual(rc, 1, err.getvalue())
        self.assertIn("lab02", err.getvalue())
        students = [e for e in ws.events if isinstance(e, tuple) and
                    e[1] in (b"// alice\n", b"// bob\n", b"// carol\n")]
        self.assertEqual(students, [])
        self.assertFalse(os.path.exists(out))

    def test_a_submission_this_run_cannot_read_keeps_no_reports_of_an_earlier_run(self):
        # Regrading into the same --out: bob's zip is now truncated. summary.csv said "error",
        # while out/bob/grade.json still gave the earlier run's 40 / 40.
        alice = os.path.dirname(os.path.dirname(os.path.dirname(
            self.write(f"alice/{EDITABLE}", "// alice\n"))))
        bob = self.write("bob.zip", "PK\x03\x04 cut short")
        out = os.path.join(self.tmp, "out")
        old = {name: self.write(f"out/bob/{name}", "earlier run\n")
               for name in reports.REPORT_FILES}
        mine = self.write("out/bob/notes.txt", "mine\n")
        ws = TimedWorkspace(0.01)
        with mock.patch.object(cli, "Workspace", ws), \
                mock.patch.object(cli.runner, "run_cases", passing_cases), \
                contextlib.redirect_stderr(io.StringIO()), \
                contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main([alice, bob, "--lab", "lab01", "--work", os.path.join(self.tmp, "w"),
                           "--out", out])
        self.assertEqual(rc, 1)
        self.assertEqual([p for p in old.values() if os.path.exists(p)], [])
        self.assertTrue(os.path.isfile(mine))  # only the reports go
        self.assertTrue(os.path.isfile(os.path.join(out, "alice", "grade.json")))
        with open(os.path.join(out, "summary.csv"), encoding="utf-8") as f:
            self.assertIn("error", f.read())

    def test_a_lone_submission_this_run_cannot_read_keeps_no_reports_of_an_earlier_run(self):
        # The same as above with one submission: the run stopped with an error, and out/ kept
        # the earlier run's grade.json and results.json, whose score an upload would take.
        bob = self.write("bob.zip", "PK\x03\x04 cut short")
        out = os.path.join(self.tmp, "out")
        old = [self.write(f"out/{name}", "earlier run\n") for name in reports.REPORT_FILES]
        mine = self.write("out/notes.txt", "mine\n")
        err = io.StringIO()
        with mock.patch.object(cli, "Workspace", TimedWorkspace(0.01)), \
                mock.patch.object(cli.runner, "run_cases", passing_cases), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main([bob, "--lab", "lab01", "--work", os.path.join(self.tmp, "w"),
                           "--out", out])
        self.assertEqual(rc, 1)
        self.assertIn("is neither a folder nor a zip file", err.getvalue())
        self.assertEqual([p for p in old if os.path.exists(p)], [])
        self.assertTrue(os.path.isfile(mine))

    def test_the_help_says_so(self):
        text = " ".join(cli.parser().format_help().split())
        self.assertIn("the reference solution is built in a submission's place, and grading "
                      "stops unless that took at most half of S", text)
        self.assertIn("--no-reference-check skip checking the limits against the reference "
                      "solution", text)

    def test_no_line_of_the_help_is_longer_than_100_characters(self):
        # The description and its 'Exit status' paragraph are printed as typed
        # (RawDescriptionHelpFormatter): lines of 150 characters there wrapped anyhow in an
        # 80- or 100-column terminal. argparse wraps the options to the terminal's width, which
        # ran past 100 on a wider one.
        for columns in ("80", "100", "200"):
            with self.subTest(columns=columns), mock.patch.dict(os.environ, {"COLUMNS": columns}):
                lines = cli.parser().format_help().splitlines()
                self.assertGreater(len(lines), 30)
                self.assertEqual([line for line in lines if len(line) > 100], [])


class Summary(TempDir):
    def test_names_are_the_base_names_and_clashes_are_qualified_by_their_folders(self):
        self.assertEqual(cli.unique_names(["subs/alice.zip", "subs/bob/", "carol.ZIP"]),
                         ["alice", "bob", "carol"])
        self.assertEqual(cli.unique_names(["sec1/alice.zip", "sec2/alice", "sec2/bob.zip"]),
                         ["sec1-alice", "sec2-alice", "bob"])
        # One folder up is not enough: two.
        self.assertEqual(cli.unique_names(["/x/a/alice.zip", "/y/a/alice.zip"]),
                         ["x-a-alice", "y-a-alice"])
        # A qualified name that meets another submission's own name is qualified further.
        self.assertEqual(cli.unique_names(["/t/s1/alice", "/t/s2/alice", "/t/u/s1-alice"]),
                         ["t-s1-alice", "s2-alice", "u-s1-alice"])
        # The same submission twice: nothing left to qualify with but a number.
        self.assertEqual(cli.unique_names(["/t/alice.zip", "/t/alice.zip"]),
                         ["t-alice", "t-alice-2"])
        # summary.csv sits beside the report folders: a submission of that name is numbered.
        self.assertEqual(cli.unique_names(["/t/summary.csv.zip"]), ["summary.csv-2"])
        # A name that is not UTF-8 (os.walk's surrogates) is written with \xNN.
        self.assertEqual(cli.unique_names(["/t/b\udcffd"]), ["b\\xffd"])

    def test_the_summary_has_each_path_and_each_labs_score_and_status(self):
        lab02 = Lab("lab02", "lab02_ngram_storage", 30.0, 2048)
        t = runner.TestResult("lab01", "c", "lab01 / A", False, 2, 2, "passed", "passed", "")
        h = runner.TestResult("lab01", "h", "lab01 hidden / H", True, 1, 0, "compile_error",
                              "x", "")
        u = runner.TestResult("lab02", "d", "lab02 / D", False, 3, 0, "compile_error", "x", "")
        v = runner.TestResult("lab02", "e", "lab02 / E", False, 3, 0, "not_submitted", "x", "")
        grades = [
            reports.Grade("sec1-alice", "/s/sec1/alice.zip", [
                reports.LabGrade(LAB, "ok", tests=[t]),
                reports.LabGrade(lab02, "compile_error", tests=[u])], []),
            reports.Grade("bob", "/s/bob", [
                reports.LabGrade(LAB, "ok", tests=[t, h], hidden_build_output="ld: x"),
                reports.LabGrade(lab02, "not_submitted", tests=[v])], []),
            reports.Grade("carol", "/s/carol", [reports.LabGrade(lab02, "ok", tests=[])], [],
                          check=["x.cpp includes \"../sol.cpp\"", "x.cpp compiled sol.cpp"])]
        errors = {"dave": ("/s/dave.zip", "/s/dave.zip is not a readable zip file\nmore")}
        path = cli.write_summary(self.tmp, grades, errors)
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0], ["submission", "path", "lab01", "lab01_status", "lab02",
                                   "lab02_status", "score", "max_score", "status", "check"])
        self.assertEqual(rows[1], ["sec1-alice", "/s/sec1/alice.zip", "2", "graded", "0",
                                   "compile_error", "2", "5", "graded", ""])
        self.assertEqual(rows[2], ["bob", "/s/bob", "2", "hidden_compile_error", "0",
                                   "not_submitted", "2", "6", "graded", ""])
        # A full score that used a reference solution must stand out in the class summary.
        self.assertEqual(rows[3], ["carol", "/s/carol", "", "not_graded", "0", "graded", "0",
                                   "0", "graded",
                                   "x.cpp includes \"../sol.cpp\" | x.cpp compiled sol.cpp"])
        self.assertEqual(rows[4], ["dave", "/s/dave.zip", "", "not_graded", "", "not_graded",
                                   "", "", "error: /s/dave.zip is not a readable zip file", ""])
        # A submission's name is the instructor's to read, not a spreadsheet's to run: a cell
        # that starts like a formula gets a leading ' (a folder named =HYPERLINK(...) ran as a
        # formula when summary.csv was opened in a spreadsheet).
        evil = reports.Grade("=HYPERLINK(\"http://x\")", "/s/=HYPERLINK(\"http://x\")",
                             [reports.LabGrade(LAB, "ok", tests=[t])], [])
        path = cli.write_summary(self.tmp, [evil], {"+cmd": ("@x.zip", "-bad\nmore")})
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[1][:2], ["'=HYPERLINK(\"http://x\")", "/s/=HYPERLINK(\"http://x\")"])
        self.assertEqual(rows[2][:2], ["'+cmd", "'@x.zip"])
        self.assertEqual(rows[2][-2], "error: -bad")
        text = reports.summary_table(grades, errors)
        self.assertIn("dave", text)
        self.assertIn("sec1-alice", text)
        self.assertEqual([line.split()[0] for line in text.splitlines() if "CHECK" in line],
                         ["carol"])


class Submit(TempDir):
    """tools/submit in a scratch git repository that holds just what it needs."""

    def setUp(self):
        super().setUp()
        for rel in ("tools/submit", "tools/grading", EDITABLE, HEADER):
            src, dst = os.path.join(REPO, rel), os.path.join(self.tmp, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, dst)
        git = ["git", "-C", self.tmp, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(git[:3] + ["init", "-q"], check=True)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", "start"], check=True)

    def submit(self, *args):
        return subprocess.run([sys.executable, os.path.join(self.tmp, "tools", "submit"), *args],
                              capture_output=True, text=True)

    def test_the_zip_holds_exactly_the_editable_files_and_a_manifest(self):
        out = os.path.join(self.tmp, "out", "s.zip")
        p = self.submit("lab01", "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with zipfile.ZipFile(out) as zf:
            self.assertEqual(sorted(zf.namelist()), ["MANIFEST.json", EDITABLE])
            manifest = json.loads(zf.read("MANIFEST.json"))
            data = zf.read(EDITABLE)
        self.assertEqual(manifest["labs"], ["lab01"])
        self.assertEqual(manifest["files"][0]["sha256"], submission.sha256(data))
        self.assertEqual(manifest["git"]["uncommitted"], [])
        self.assertNotIn("uncommitted", p.stderr)
        self.assertIn("todo()", p.stderr)  # the untouched starter still has its TODOs

    def test_the_manifest_records_the_labs_headers_and_a_changed_one_is_warned_about(self):
        # Grading compiles the file against the course's header: a student who changed theirs
        # (committed or not) must hear it before the grade, not from a compile error.
        out = os.path.join(self.tmp, "s.zip")
        with open(os.path.join(self.tmp, HEADER), "rb") as f:
            header = f.read()
        p = self.submit("lab01", "--out", out)
        with zipfile.ZipFile(out) as zf:
            manifest = json.loads(zf.read("MANIFEST.json"))
        self.assertEqual(manifest["headers"],
                         [{"path": HEADER, "sha256": submission.sha256(header)}])
        self.assertNotIn(HEADER, p.stderr)
        with open(os.path.join(self.tmp, HEADER), "ab") as f:
            f.write(b"int my_helper();\n")
        p = self.submit("lab01", "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"{HEADER} has uncommitted changes", p.stderr)
        self.assertIn("grading uses the course's", p.stderr)

    def test_uncommitted_changes_are_warned_about(self):
        with open(os.path.join(self.tmp, EDITABLE), "a") as f:
            f.write("// my change\n")
        p = self.submit("lab01", "--out", os.path.join(self.tmp, "s.zip"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("uncommitted changes in " + EDITABLE, p.stderr)

    def test_an_existing_folder_as_out_gets_the_zip_inside_it(self):
        # As with cp: --out names the zip, or a folder to put submission-labNN.zip in (a folder
        # that exists, or a path that ends with a slash).
        for out in (os.path.join(self.tmp, "handin"), os.path.join(self.tmp, "new", "")):
            with self.subTest(out=out):
                os.makedirs(os.path.join(self.tmp, "handin"), exist_ok=True)
                p = self.submit("lab01", "--out", out)
                self.assertEqual(p.returncode, 0, p.stderr)
                zip_path = os.path.join(out, "submission-lab01.zip")
                self.assertIn(f"wrote {zip_path}:", p.stdout)
                with zipfile.ZipFile(zip_path) as zf:
                    self.assertIn(EDITABLE, zf.namelist())
                self.assertEqual(self.part_files(), [])

    def test_a_zip_that_cannot_be_written_says_why_and_leaves_no_part_file(self):
        # The zip's own path is a folder: nothing can replace it.
        os.makedirs(os.path.join(self.tmp, "handin", "submission-lab01.zip"))
        p = self.submit("lab01", "--out", os.path.join(self.tmp, "handin"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(f"submit: error: {os.path.join(self.tmp, 'handin', 'submission-lab01.zip')} "
                      "is a folder; give --out a file name", p.stderr)
        self.assertNotIn("Errno", p.stderr)
        self.assertEqual(self.part_files(), [])
        # A write that fails half-way (a full disk, say) removes what it wrote.
        from grading import submit
        out = os.path.join(self.tmp, "full", "s.zip")
        err = io.StringIO()
        with mock.patch.object(zipfile.ZipFile, "writestr",
                               side_effect=OSError(28, "No space left on device")), \
                contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(submit.main(["lab01", "--out", out]), 1)
        self.assertIn("No space left on device", err.getvalue())
        self.assertEqual(os.listdir(os.path.dirname(out)), [])

    def part_files(self):
        return [os.path.join(d, n) for d, _, names in os.walk(self.tmp) for n in names
                if n.endswith(".part")]

    def test_an_unknown_lab_is_refused(self):
        p = self.submit("lab99")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown lab 'lab99'", p.stderr)
        for bad in ("lab1", ""):
            p = self.submit(bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"'{bad}' is not a lab name: expected labNN, such as lab01", p.stderr)

    def test_out_never_replaces_a_file_that_is_not_a_zip(self):
        # '--out labs/.../starter.cpp' replaced the student's code with the zip.
        starter = os.path.join(self.tmp, EDITABLE)
        with open(starter, "rb") as f:
            before = f.read()
        for out, message in ((starter, "a zip's name must end in .zip"),
                             ("", "--out '': give a file name ending in .zip, or a folder")):
            with self.subTest(out=out):
                p = self.submit("lab01", "--out", out)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(message, p.stderr)
        not_zip = self.write("old.zip", "my notes\n")
        p = self.submit("lab01", "--out", not_zip)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"--out {not_zip} exists and is not a zip: it was left as it is", p.stderr)
        with open(not_zip) as f:
            self.assertEqual(f.read(), "my notes\n")
        with open(starter, "rb") as f:
            self.assertEqual(f.read(), before)
        # A folder that is a file said "[Errno 17] File exists".
        p = self.submit("lab01", "--out", os.path.join(not_zip, "x.zip"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"{not_zip} is a file, not a folder", p.stderr)
        # An earlier zip is replaced, as before.
        out = os.path.join(self.tmp, "s.zip")
        for _ in range(2):
            p = self.submit("lab01", "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)


class MakeMutant(TempDir):
    """tools/make_mutant.py names what is wrong instead of ending in a traceback."""

    def run_it(self, *args):
        return subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_mutant.py"),
                               *args], capture_output=True, text=True, timeout=30)

    def test_bad_input_is_named(self):
        solution = self.write("solution.cpp", "int f() { return 1; }\n")
        empty = self.write("empty.mutant", "--- replace\n--- with\nint g();\n")
        latin1 = self.write("latin1.mutant", "// caf\xe9\n".encode("latin-1"))
        out = os.path.join(self.tmp, "out.cpp")
        for args, message in (
                (("/nonexistent.cpp", empty, out), "/nonexistent.cpp: cannot read it"),
                (("solution.cpp",), "usage: make_mutant.py"),
                # An empty text 'occurred 1884 times'.
                ((solution, empty, out), "block 1: '--- replace' is followed by no text"),
                ((solution, latin1, out), "latin1.mutant: not UTF-8 text")):
            with self.subTest(args=args):
                p = self.run_it(*args)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(message, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(self.run_it("x").returncode, 2)


class Setup(TempDir):
    """tools/setup's modes, with a fake dpkg-query and cmake first on PATH: nothing installs."""

    def setUp(self):
        super().setUp()
        bin_dir = os.path.join(self.tmp, "bin")
        for name, body in (
                ("dpkg-query", 'for p in $FAKE_MISSING; do [ "$p" = "${!#}" ] && exit 1; done\n'
                               'printf "install ok installed"\n'),
                ("cmake", 'echo "cmake version $FAKE_CMAKE_VERSION"\n')):
            path = self.write(f"bin/{name}", "#!/usr/bin/env bash\n" + body)
            os.chmod(path, 0o755)
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
                        FAKE_MISSING="", FAKE_CMAKE_VERSION="3.25.1")

    def setup(self, *args, **env):
        return subprocess.run(["bash", os.path.join(REPO, "tools", "setup"), *args],
                              capture_output=True, text=True, env=dict(self.env, **env))

    def test_list_says_what_each_mode_would_install_and_installs_nothing(self):
        book = ("chromium", "fonts-dejavu-core", "libjs-katex", "clang-format",
                "g++-aarch64-linux-gnu", "qemu-user")
        full = self.setup("--list")
        grading = self.setup("--grading", "--list")
        for p in (full, grading):
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("build-essential cmake libeigen3-dev", p.stdout)
            self.assertIn("would install: nothing (all installed)", p.stdout)
            self.assertIn("CMake >= 3.25: ok", p.stdout)
        for name in book:
            self.assertIn(name, full.stdout)
            self.assertNotIn(name, grading.stdout)
        self.assertIn(".venv/", full.stdout)
        self.assertIn("Python packages: none", grading.stdout)
        p = self.setup("--grading", "--list", FAKE_MISSING="doctest-dev chromium")
        self.assertIn("would install: doctest-dev\n", p.stdout)

    def test_grading_installs_what_tools_fetch_model_needs(self):
        # instructors.md has lab 07's setup.sh run tools/fetch_model after tools/setup
        # --grading. fetch_model downloads the model's wheel with pip, from a throwaway venv
        # when python3 has no pip, as Debian's has not; without python3-venv Debian's python3
        # cannot make one, so fetch_model failed on a machine set up for grading.
        with open(os.path.join(REPO, "tools", "fetch_model"), encoding="utf-8") as f:
            self.assertIn('"-m", "venv"', f.read())
        p = self.setup("--grading", "--list", FAKE_MISSING="python3-venv")
        self.assertIn("would install: python3-venv\n", p.stdout)

    def test_a_cmake_older_than_3_25_is_refused(self):
        for version, ok in (("3.22.1", False), ("3.25.0", True), ("3.31.6", True),
                            ("4.0.2", True), ("3.9.0", False)):
            with self.subTest(version=version):
                p = self.setup("--grading", FAKE_CMAKE_VERSION=version)
                self.assertEqual(p.returncode, 0 if ok else 1, p.stderr)
                if not ok:
                    self.assertIn(f"is CMake {version}, older than 3.25", p.stderr)
                p = self.setup("--grading", "--list", FAKE_CMAKE_VERSION=version)
                self.assertIn("ok" if ok else "older than 3.25", p.stdout)

    def test_an_unknown_option_is_a_usage_error(self):
        p = self.setup("--bogus")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option '--bogus'", p.stderr)
        self.assertIn("--grading", self.setup("--help").stdout)

    def test_tools_venv_takes_no_arguments(self):
        # It ignored them and went on to create and install .venv/, --help included.
        venv = os.path.join(REPO, "tools", "venv")
        p = subprocess.run([venv, "--bogus"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("venv: takes no arguments, got '--bogus'", p.stderr)
        p = subprocess.run([venv, "--help"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Creates or updates the git-ignored virtual environment .venv/", p.stdout)


def grade(*args):
    return subprocess.run([sys.executable, os.path.join(REPO, "tools", "grade"), *args],
                          capture_output=True, text=True)


class InstructorsGuide(unittest.TestCase):
    """book/instructors.md's commands work as written: each tools/grade line parses with
    tools/grade's own parser, and the Gradescope scripts are programs Gradescope can run."""

    def blocks(self):
        with open(os.path.join(REPO, "book", "instructors.md"), encoding="utf-8") as f:
            return re.findall(r"```sh\n(.*?)```", f.read(), re.S)

    def test_every_tools_grade_line_parses(self):
        lines = [line for b in self.blocks() for line in b.replace("\\\n", " ").splitlines()]
        grades = [line.split("#")[0] for line in lines if "tools/grade " in line]
        self.assertGreater(len(grades), 5)
        for line in grades:
            argv = shlex.split(line[line.index("tools/grade ") + len("tools/grade "):])
            with self.subTest(line=line), contextlib.redirect_stderr(io.StringIO()):
                cli.parser().parse_args(argv)

    def test_every_flag_of_tools_grade_is_in_the_guide(self):
        # --brief was in --help but nowhere in the guide.
        with open(os.path.join(REPO, "book", "instructors.md"), encoding="utf-8") as f:
            guide = f.read()
        flags = {o for a in cli.parser()._actions for o in a.option_strings
                 if o.startswith("--") and o != "--help"}
        self.assertGreater(len(flags), 8)
        self.assertEqual(sorted(f for f in flags
                                if not re.search(re.escape(f) + r"(?![\w-])", guide)), [])

    def test_the_gradescope_scripts_start_with_their_interpreter(self):
        scripts = [b for b in self.blocks() if "# setup.sh" in b or "# run_autograder" in b]
        self.assertEqual(len(scripts), 2, scripts)
        for b in scripts:
            self.assertTrue(b.startswith("#!/"), b)
            self.assertEqual(b.count("#!"), 1, b)  # one script per block


class GradescopeScripts(TempDir):
    """book/instructors.md's setup.sh and run_autograder, run as written with tools/ replaced by
    scripts that log their arguments: set to another lab, they set up and grade that lab."""

    def scripts(self):
        with open(os.path.join(REPO, "book", "instructors.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```sh\n(.*?)```", f.read(), re.S)
        return (next(b for b in blocks if "# setup.sh" in b),
                next(b for b in blocks if "# run_autograder" in b))

    def run_script(self, text, lab):
        """The tools the script called, one 'tool args' line each."""
        root = os.path.join(self.tmp, lab)
        log = os.path.join(root, "calls.log")
        for tool in ("setup", "fetch_model", "submit", "grade"):
            path = self.write(f"{lab}/source/speclab/tools/{tool}",
                              f'#!/usr/bin/env bash\necho "{tool} $*" >> {log}\n')
            os.chmod(path, 0o755)
        self.assertIn("LAB=lab01", text)
        text = text.replace("/autograder", root).replace("LAB=lab01", f"LAB={lab}", 1)
        p = subprocess.run(["bash", "-c", text], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(log, encoding="utf-8") as f:
            calls = f.read().splitlines()
        os.remove(log)
        return calls

    def test_setup_fetches_lab07s_model_before_the_warm_up_and_both_scripts_grade_the_lab(self):
        # The guide said "for lab 07, add tools/fetch_model to setup.sh" below a setup.sh that
        # warmed lab01's build: added at the end, after switching the warm-up to lab07, it came
        # after the warm-up, whose reference check stops when the model cases skip.
        setup, run = self.scripts()
        for lab in ("lab01", "lab07"):
            with self.subTest(lab=lab):
                calls = self.run_script(setup, lab)
                self.assertEqual([c.split()[0] for c in calls],
                                 ["setup"] + ["fetch_model"] * (lab == "lab07") +
                                 ["submit", "grade"])
                self.assertTrue(calls[-2].startswith(f"submit {lab} "), calls)
                (call,) = self.run_script(run, lab)
                self.assertIn(f"--lab {lab} ", call)


class DefaultJobs(TempDir):
    """-j's default: the CPUs grading may use. Gradescope runs the autograder in a container
    with a CPU quota on a many-core host, where os.cpu_count() counts the host's cores: that many
    cases at once on one CPU each get a sliver of it, and correct code runs past its time limit."""

    def test_the_affinity_mask_and_a_cgroup_cpu_quota_bound_the_default(self):
        v2 = self.write("cpu.max", "150000 100000\n")
        unlimited = self.write("unlimited/cpu.max", "max 100000\n")
        v1 = self.write("v1/cpu.cfs_quota_us", "100000\n")
        self.write("v1/cpu.cfs_period_us", "100000\n")
        v1_none = self.write("v1none/cpu.cfs_quota_us", "-1\n")
        self.write("v1none/cpu.cfs_period_us", "100000\n")
        missing = os.path.join(self.tmp, "nowhere")
        with mock.patch("os.cpu_count", return_value=64), \
                mock.patch("os.sched_getaffinity", return_value=set(range(16))):
            self.assertEqual(cli.available_cpus(missing, missing), 16)
            self.assertEqual(cli.available_cpus(v2, missing), 2)  # 1.5 CPUs: 2 jobs
            self.assertEqual(cli.available_cpus(unlimited, missing), 16)
            self.assertEqual(cli.available_cpus(missing, v1), 1)
            self.assertEqual(cli.available_cpus(missing, v1_none), 16)
        with mock.patch("os.sched_getaffinity", return_value={3}):
            self.assertEqual(cli.available_cpus(missing, missing), 1)
        self.assertEqual(cli.parser().parse_args(["x"]).jobs, cli.available_cpus())


class Tampering(TempDir):
    """A student's code runs with the grader's permissions. What it changes in the grading folder
    while its cases run is put back before the next submission (the copy from what the run
    started with, never from the checkout; the build by deleting what changed, so that make
    rebuilds it) and named; what it changes in the checkout or the hidden tests is named."""

    def setUp(self):
        super().setUp()
        self.repo = os.path.join(self.tmp, "repo")
        self.files = {"CMakeLists.txt": b"project(x)\n",
                      "labs/lab01_prompt_lookup/starter.cpp": b"// TODO\n",
                      "labs/lab01_prompt_lookup/prompt_lookup.h": b"#pragma once\n",
                      "tests/lab01/points.txt": b"1 a case\n"}
        for rel, data in self.files.items():
            self.write(f"repo/{rel}", data)
        self.hidden = os.path.join(self.tmp, "hidden")
        self.write("hidden/lab01/test_secret.cpp", b"// secret\n")
        self.ws = workspace.Workspace(self.repo, os.path.join(self.tmp, "work"), self.hidden)
        self.ws.__enter__()
        self.addCleanup(self.ws.__exit__, None, None, None)
        self.ws.sync()
        self.configured = 0

        def configure():
            self.configured += 1
        self.ws.configure = configure
        self.old_object = self.write("work/build/labs/lab01_tests.o", b"object")

    def src(self, rel):
        with open(os.path.join(self.ws.src, rel), "rb") as f:
            return f.read()

    def test_what_a_submissions_code_changes_in_the_grading_folder_is_put_back_and_named(self):
        self.ws.place("labs/lab01_prompt_lookup/starter.cpp", b"// alice\n")
        time.sleep(0.02)
        self.ws.stamp()
        time.sleep(0.02)
        header = os.path.join(self.ws.src, "labs/lab01_prompt_lookup/prompt_lookup.h")
        with open(header, "ab") as f:
            f.write(b"#define CHECK(...) ((void)0)\n")
        self.write("work/src/labs/lab01_prompt_lookup/extra.h", b"// new\n")
        outside = self.write("outside.txt", b"someone else's\n")
        points = os.path.join(self.ws.src, "tests/lab01/points.txt")
        os.remove(points)
        os.symlink(outside, points)  # a restore that followed it would write outside the copy
        self.write("work/build/labs/lab01_tests_starter", b"tampered executable")
        changed = self.ws.undo_changes()
        self.assertEqual(changed, ["build/labs/lab01_tests_starter",
                                   "src/labs/lab01_prompt_lookup/extra.h",
                                   "src/labs/lab01_prompt_lookup/prompt_lookup.h",
                                   "src/tests/lab01/points.txt"])
        for rel, data in self.files.items():  # the placed file too: back to the starter
            self.assertEqual(self.src(rel), data, rel)
        self.assertFalse(os.path.islink(points))
        self.assertFalse(os.path.exists(os.path.join(self.ws.src, "labs/lab01_prompt_lookup/"
                                                     "extra.h")))
        with open(outside, "rb") as f:
            self.assertEqual(f.read(), b"someone else's\n")
        self.assertFalse(os.path.exists(os.path.join(self.ws.work, "build/labs/"
                                                     "lab01_tests_starter")))
        self.assertTrue(os.path.exists(self.old_object))  # built before the cases: kept
        self.assertEqual(self.configured, 1)  # so that make rebuilds what was deleted
        # Nothing changed since: nothing to name, nothing to configure again.
        self.ws.stamp()
        self.assertEqual(self.ws.undo_changes(), [])
        self.assertEqual(self.configured, 1)

    def test_a_folder_of_the_copy_replaced_by_a_link_is_not_written_through(self):
        # Writing the copy back through a link to a folder elsewhere would write outside WORK.
        self.ws.stamp()
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(elsewhere)
        shutil.rmtree(os.path.join(self.ws.src, "tests"))
        os.symlink(elsewhere, os.path.join(self.ws.src, "tests"))
        self.assertEqual(self.ws.undo_changes(), ["src/tests", "src/tests/lab01/points.txt"])
        self.assertEqual(os.listdir(elsewhere), [])
        self.assertFalse(os.path.islink(os.path.join(self.ws.src, "tests")))
        self.assertEqual(self.src("tests/lab01/points.txt"), b"1 a case\n")

    def test_the_copy_is_put_back_from_what_the_run_started_with_not_from_the_checkout(self):
        self.ws.stamp()
        self.write("repo/tests/lab01/points.txt", b"1000 a case\n")
        self.write("work/src/tests/lab01/points.txt", b"1000 a case\n")
        self.write("repo/labs/lab01_prompt_lookup/new.h", b"// new\n")
        self.assertEqual(self.ws.undo_changes(), ["src/tests/lab01/points.txt"])
        self.assertEqual(self.src("tests/lab01/points.txt"), b"1 a case\n")
        self.assertEqual(self.ws.checkout_changes(),
                         [os.path.join(self.repo, "labs/lab01_prompt_lookup/new.h"),
                          os.path.join(self.repo, "tests/lab01/points.txt")])
        # Each change is named once, for the submission during which it happened: the next one
        # is not blamed for it too.
        self.assertEqual(self.ws.checkout_changes(), [])
        self.write("repo/tests/lab01/points.txt", b"1 a case\n")
        self.assertEqual(self.ws.checkout_changes(),
                         [os.path.join(self.repo, "tests/lab01/points.txt")])
        # The copy is still written from what the run started with.
        self.ws.stamp()
        self.assertEqual(self.ws.undo_changes(), [])
        self.assertFalse(os.path.exists(os.path.join(self.ws.src,
                                                     "labs/lab01_prompt_lookup/new.h")))

    def test_the_reports_of_a_class_written_into_the_checkout_are_not_taken_for_tampering(self):
        # tools/grade a.zip b.zip --out results/, run in the checkout: a's reports, written
        # into repo/results/a/ after a was graded, were "a change to your checkout" found
        # after b, so b was flagged CHECK BY HAND for them, and each submission after it for
        # the one before. The hidden folder, or the checkout itself (--out .), may hold them.
        for out in ("results", ".", os.path.join("..", "hidden", "reports")):
            with self.subTest(out=out):
                out = os.path.normpath(os.path.join(self.repo, out, "alice"))
                paths = reports.write_all(sample_grade(), out).values()
                self.ws.wrote_reports(paths)
                self.assertEqual(self.ws.checkout_changes(), [])
                # A report a later submission's code changed is named, as is a change beside it.
                results = os.path.join(out, "results.json")
                with open(results, "a") as f:
                    f.write("{}")
                self.assertEqual(self.ws.checkout_changes(), [results])
                self.ws.wrote_reports(paths)
                self.write("repo/tests/lab01/points.txt", b"1000 a case\n")
                self.write("hidden/lab01/test_secret.cpp", b"// everything passes\n")
                self.assertEqual(self.ws.checkout_changes(),
                                 [os.path.join(self.hidden, "lab01/test_secret.cpp"),
                                  os.path.join(self.repo, "tests/lab01/points.txt")])
                self.write("repo/tests/lab01/points.txt", b"1 a case\n")
                self.write("hidden/lab01/test_secret.cpp", b"// secret\n")
                self.ws.checkout_changes()

    def test_a_changed_hidden_test_is_named(self):
        self.assertEqual(self.ws.checkout_changes(), [])
        self.write("hidden/lab01/test_secret.cpp", b"// everything passes\n")
        os.remove(os.path.join(self.repo, "CMakeLists.txt"))
        self.assertEqual(self.ws.checkout_changes(),
                         [os.path.join(self.hidden, "lab01/test_secret.cpp"),
                          os.path.join(self.repo, "CMakeLists.txt")])


class GradeRefusals(TempDir):
    """tools/grade exits 1 with a reason when grading cannot run, and 2 on bad usage."""

    def test_bad_arguments_are_refused_before_any_build(self):
        for args, message in (((os.path.join(self.tmp, "nope"),), "does not exist"),
                              ((self.tmp, "--hidden", os.path.join(self.tmp, "x")),
                               "is not a folder")):
            with self.subTest(args=args):
                p = grade(*args)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(message, p.stderr)
        self.assertEqual(grade().returncode, 2)
        report = self.write("out.txt", "mine\n")
        for args, message in (
                (("--lab", "01"), "--lab 01: expected a name like lab01"),
                # Each lab counted once per --lab: 80 / 80 on a 40-point lab.
                (("--lab", "lab01", "--lab", "lab01"), "--lab lab01 is named twice"),
                # An unset $HIDDEN graded without the hidden tests, with exit 0.
                (("--hidden", ""), "--hidden '': give the folder of hidden tests"),
                # '' is the current folder: run from the repository, it reconfigured build/.
                (("--work", ""), "--work '': give a folder"),
                (("--work", REPO), f"--work {REPO} is the repository or holds it"),
                (("--work", os.path.dirname(REPO)), "is the repository or holds it"),
                (("--out", ""), "--out '': give a folder"),
                (("--check-points", "--build-dir", ""), "--build-dir '': give the build"),
                # It graded everything, then ended in a FileExistsError traceback.
                (("--out", report), f"--out {report} is a file: give a folder for the reports"),
                # These ended in FileExistsError and NotADirectoryError tracebacks, the second
                # after grading everything.
                (("--work", report), f"--work {report} is a file: give a folder"),
                (("--out", os.path.join(report, "x")),
                 f"--out {os.path.join(report, 'x')} is inside {report}, which is a file"),
                (("--work", os.path.join(report, "x", "y")),
                 f"--work {os.path.join(report, 'x', 'y')} is inside {report}, which is a "
                 "file")):
            with self.subTest(args=args):
                p = grade(self.tmp, *args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(message, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
        with open(report) as f:
            self.assertEqual(f.read(), "mine\n")

    def test_a_hidden_folder_that_is_part_of_the_repository_build_is_refused_by_name(self):
        # --hidden tests/grader (the folder above the example hidden/) ended in a CMake error
        # ("add_subdirectory given source grader which is not an existing directory"): the
        # grading copy leaves --hidden out, and the workspace was configured before the folder
        # was checked. --hidden tests (labNN/ folders, but the repository's own) failed the same.
        sub = os.path.dirname(os.path.dirname(os.path.dirname(self.write(f"sub/{EDITABLE}"))))
        work = os.path.join(self.tmp, "work")
        for hidden, message in (
                (os.path.join(REPO, "tests", "grader"),
                 "holds no labNN/ folder, so no hidden test would run"),
                (os.path.join(REPO, "tests"),
                 f"--hidden {os.path.join(REPO, 'tests')} is part of the repository's build "
                 f"(it holds {os.path.join(REPO, 'tests', 'CMakeLists.txt')})")):
            with self.subTest(hidden=hidden):
                p = grade(sub, "--lab", "lab01", "--hidden", hidden, "--work", work)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(message, p.stderr)
                self.assertNotIn("CMake Error", p.stderr)
                self.assertFalse(os.path.exists(work), "checked before the workspace is made")

    def test_a_work_folder_the_grader_did_not_make_is_left_alone(self):
        # --work DIR deleted whatever DIR/src held that is not a repository file.
        thesis = self.write("mine/src/thesis/chapter1.tex", "\\chapter{One}\n")
        with self.assertRaisesRegex(GradingError, "holds files tools/grade did not put there"):
            with workspace.Workspace(REPO, os.path.join(self.tmp, "mine")):
                pass
        self.assertTrue(os.path.isfile(thesis))
        # A new or empty folder becomes the grader's, and is then its own on later runs; so is
        # a workspace made before the marker existed (it holds the grader's lock and src/).
        for folder, legacy in (("new", False), ("empty", False), ("legacy", True)):
            with self.subTest(folder=folder):
                path = os.path.join(self.tmp, folder)
                if folder == "empty":
                    os.makedirs(path)
                if legacy:
                    self.write("legacy/lock", "")
                    self.write("legacy/src/CMakeLists.txt", "")
                for _ in range(2):
                    with workspace.Workspace(REPO, path):
                        pass
                self.assertTrue(os.path.isfile(os.path.join(path, workspace.MARKER)))

    def test_a_memory_limit_too_small_for_a_test_program_to_start_is_a_usage_error(self):
        # A lab's test program needs about 8 MiB of address space just to start.
        for value in ("1", "8", "63"):
            with self.subTest(value=value):
                p = grade(self.tmp, "--mem-mb", value)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("argument --mem-mb: must be 0 (no limit) or at least 64 MiB",
                              p.stderr)
                self.assertIn(f"got {value}", p.stderr)
        for value in (0, 64, 2048):
            self.assertEqual(cli.parser().parse_args(["s", "--mem-mb", str(value)]).mem_mb, value)
        self.assertIn("--mem-mb M address-space limit of each process of one test case in MiB, at "
                      "least 64, or 0 for none", " ".join(cli.parser().format_help().split()))

    def test_limits_out_of_range_are_usage_errors_that_name_the_flag(self):
        for flag, value in (("--timeout", "0"), ("--timeout", "-1"), ("--timeout", "nan"),
                            ("--timeout", "inf"), ("--build-timeout", "0"),
                            ("--build-timeout", "x"), ("--jobs", "0"), ("-j", "-2"),
                            ("--jobs", "1.5"), ("--mem-mb", "-1"), ("--mem-mb", "big")):
            with self.subTest(flag=flag, value=value):
                p = grade(self.tmp, f"{flag}={value}")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"argument {'-j/--jobs' if flag in ('-j', '--jobs') else flag}: ",
                              p.stderr)
                self.assertIn(value, p.stderr)
        # An infinite limit was refused as "must be > 0, got inf", which it is: the message
        # must name what is wrong with it.
        for flag, value in (("--timeout", "inf"), ("--build-timeout", "1e400"),
                            ("--timeout", "nan")):
            with self.subTest(flag=flag, value=value):
                p = grade(self.tmp, f"{flag}={value}")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"argument {flag}: expected a finite number, got {value}",
                              p.stderr)
        # Past the system's own limits these used to end in a traceback (OverflowError from a
        # timeout's milliseconds, an rlimit that does not fit).
        for flag, value in (("--timeout", "2.2e6"), ("--build-timeout", "1e9"),
                            ("--mem-mb", "99999999999999"), ("--jobs", "100000")):
            with self.subTest(flag=flag, value=value), \
                    contextlib.redirect_stderr(io.StringIO()) as err, \
                    self.assertRaises(SystemExit) as e:
                cli.parser().parse_args(["s", flag, value])
            self.assertEqual(e.exception.code, 2)
            self.assertIn("must be at most", err.getvalue())
        ok = cli.parser().parse_args(["s", "--timeout", "0.5", "--build-timeout", "60",
                                      "--jobs", "1", "--mem-mb", "0"])
        self.assertEqual((ok.timeout, ok.build_timeout, ok.jobs, ok.mem_mb), (0.5, 60, 1, 0))

    @unittest.skipUnless(os.environ.get("SPECLAB_GRADE_WORK"), "needs SPECLAB_GRADE_WORK")
    def test_an_unknown_lab_and_a_hidden_case_without_points_stop_grading(self):
        work = os.environ["SPECLAB_GRADE_WORK"]
        sub = os.path.dirname(os.path.dirname(os.path.dirname(self.write(f"sub/{EDITABLE}"))))
        p = grade(sub, "--lab", "lab99", "--work", work, "--out", os.path.join(self.tmp, "o"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("unknown lab(s) lab99", p.stderr)

        hidden = os.path.join(self.tmp, "hidden")
        shutil.copytree(os.path.join(HERE, "hidden"), hidden)
        pts = os.path.join(hidden, "lab01", "points.txt")
        with open(pts) as f:
            lines = [line for line in f if "trigram" not in line]
        with open(pts, "w") as f:
            f.writelines(lines)
        p = grade(sub, "--lab", "lab01", "--hidden", hidden, "--work", work,
                  "--out", os.path.join(self.tmp, "o"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("gives no points to 1 lab01 hidden test case", p.stderr)
        self.assertIn("hidden: a trigram in a long periodic context", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o")))

    @unittest.skipUnless(os.environ.get("SPECLAB_GRADE_WORK"), "needs SPECLAB_GRADE_WORK")
    def test_a_build_timeout_too_short_for_the_reference_stops_grading_and_the_build_stays_sound(
            self):
        # The check builds the reference's file in the student's place, and here it is stopped
        # half-way: the next run must still build and grade a correct file in full.
        work = os.environ["SPECLAB_GRADE_WORK"]
        with open(os.path.join(REPO, "solutions", LAB.dir, "solution.cpp"), "rb") as f:
            sub = os.path.dirname(os.path.dirname(os.path.dirname(
                self.write(f"sub/{EDITABLE}", f.read()))))
        out = os.path.join(self.tmp, "o")
        p = grade(sub, "--lab", "lab01", "--work", work, "--build-timeout", "0.05", "--out", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("--build-timeout 0.05 s is too short for lab01", " ".join(p.stderr.split()))
        self.assertFalse(os.path.exists(out))
        p = grade(sub, "--lab", "lab01", "--work", work, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"lab01 reference builds as a submission in [\d.]+ s "
                                   r"\(--build-timeout 300 s\)")
        with open(os.path.join(out, "grade.json"), encoding="utf-8") as f:
            g = json.load(f)
        self.assertEqual(g["score"], g["max_score"])


if __name__ == "__main__":
    unittest.main()
