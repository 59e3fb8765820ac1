#!/usr/bin/env python3
"""tools/test refuses what ctest would silently pass over, before it builds or runs anything.

ctest 3.25 ignores an unknown option, an option without its value, `--label-regex=lab01`,
`-Llab01` and a bare word, and then runs every test: through tools/test, the whole suite instead
of an error. tools/ctest_args.py reads the installed ctest's options from `ctest --help`; these
cases run it on the arguments a student or an instructor would type, and run tools/test itself
(in a copy whose set-up, model fetch, cmake and ctest are stand-ins) to see that a refused
argument stops it before the build, and that good ones reach ctest unchanged. Standard library
only; needs ctest on PATH.
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import ctest_args  # noqa: E402

HELP = subprocess.run(["ctest", "--help"], capture_output=True, text=True, check=True).stdout
OPTIONS = ctest_args.parse_help(HELP)


def problem(*args):
    return ctest_args.check(list(args), OPTIONS)


class Arguments(unittest.TestCase):
    def test_what_ctest_reads_is_accepted(self):
        for args in ([], ["-L", "lab01"], ["-L", "lab01", "-L", "mutants"], ["-LE", "gpu"],
                     ["-R", "lab01 tests: .*", "-E", "slow"], ["-j2"], ["-j", "2"],
                     ["--parallel", "2"], ["--output-on-failure"], ["-N"], ["-V"], ["-VV"],
                     ["--show-only"], ["--show-only=json-v1"], ["--no-tests=error"],
                     ["--rerun-failed"], ["--stop-on-failure"], ["--timeout", "60"],
                     ["--repeat", "until-fail:3"], ["-I", "1,5"], ["--print-labels"],
                     ["--label-regex", "lab0[12]"], ["-E", "-leading-dash-regex"],
                     ["--preset=default"], ["--test-load", "3"]):
            with self.subTest(args=args):
                self.assertIsNone(problem(*args))

    def test_an_unknown_option_is_named(self):
        for bad in ("--bogus", "--rerun-faild", "-bogus", "-x"):
            with self.subTest(bad=bad):
                msg = problem("-L", "lab01", bad)
                self.assertIn(f"no option '{bad}'", msg)
                self.assertIn("run every test", msg)

    def test_a_missing_value_is_named(self):
        for opt in ("-L", "-R", "--label-regex", "-j", "--timeout", "-LE"):
            with self.subTest(opt=opt):
                self.assertIn(f"'{opt}' needs a value", problem(opt))
        self.assertIn("'--no-tests=' needs a value", problem("--no-tests="))

    def test_a_value_in_a_form_ctest_ignores_gets_the_form_it_reads(self):
        self.assertIn("write '--label-regex lab01'", problem("--label-regex=lab01"))
        self.assertIn("write '-L lab01'", problem("-Llab01"))
        self.assertIn("write '-LE gpu'", problem("-LEgpu"))
        self.assertIn("write '-R foo'", problem("-Rfoo"))

    def test_a_bare_word_is_refused_with_the_label_hint(self):
        msg = problem("lab01")
        self.assertIn("'lab01' is not a ctest option", msg)
        self.assertIn("write '-L lab01'", msg)
        self.assertIn("'mutants' is not", problem("-L", "lab01", "mutants"))

    def test_the_first_bad_argument_after_a_good_equals_form_is_still_found(self):
        self.assertIn("'--bogus'", problem("--show-only=json-v1", "--bogus"))


class ToolsTest(unittest.TestCase):
    """tools/test itself, in a copy with stand-ins for what it calls."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="speclab-tools-test-"))
        tools = self.tmp / "tools"
        tools.mkdir()
        shutil.copy(ROOT / "tools" / "test", tools / "test")
        shutil.copy(ROOT / "tools" / "ctest_args.py", tools / "ctest_args.py")
        self.log = self.tmp / "calls.log"
        stub = '#!/bin/sh\necho "{name} $*" >> "{log}"\n'
        for name in ("setup", "fetch_model"):
            self.write(tools / name, stub.format(name=name, log=self.log))
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir()
        self.write(bin_dir / "cmake", stub.format(name="cmake", log=self.log))
        real_ctest = shutil.which("ctest")
        self.write(bin_dir / "ctest",
                   f'#!/bin/sh\n[ "$1" = --help ] && exec "{real_ctest}" --help\n'
                   + stub.format(name="ctest", log=self.log).split("\n", 1)[1])
        self.env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    @staticmethod
    def write(path, text):
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)

    def run_test(self, *args):
        r = subprocess.run([str(self.tmp / "tools" / "test"), *args], capture_output=True,
                           text=True, env=self.env, timeout=60)
        calls = self.log.read_text().splitlines() if self.log.exists() else []
        return r, calls

    def test_a_refused_argument_stops_it_before_the_build(self):
        r, calls = self.run_test("-L", "lab01", "--bogus")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("ctest has no option '--bogus'", r.stderr)
        self.assertIn("Nothing was built or run", r.stderr)
        self.assertFalse([c for c in calls if c.startswith(("cmake", "ctest", "fetch_model"))],
                         calls)

    def test_help_prints_its_usage_without_setting_up_or_building(self):
        # tools/test --help ran tools/setup (apt-get), tools/fetch_model, the configure and the
        # whole build, and only then printed ctest's own help.
        for flag in ("--help", "-h"):
            with self.subTest(flag=flag):
                r, calls = self.run_test("-L", "lab01", flag)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("Usage: tools/test [CTEST OPTIONS]", r.stdout)
                self.assertIn("ctest --help", r.stdout)
                self.assertEqual(calls, [])

    def test_good_arguments_reach_ctest_unchanged(self):
        r, calls = self.run_test("-L", "lab01", "--rerun-failed")
        self.assertEqual(r.returncode, 0, r.stderr)
        ctest = [c for c in calls if c.startswith("ctest ")]
        self.assertEqual(len(ctest), 1, calls)
        self.assertTrue(ctest[0].endswith(" -L lab01 --rerun-failed"), ctest[0])
        self.assertTrue(any(c.startswith("cmake --build") for c in calls), calls)


if __name__ == "__main__":
    unittest.main()
