#!/usr/bin/env python3
"""tools/variant_check.py and tools/x86_check decide right, with the builds faked.

The real checks (ctest labels x86 and cross) build cpu_llama_tests for other CPUs and take
minutes; these cases replace the build with a small script that plays a test binary, so they
check in a second what a real run would only show when something is wrong:
  - a case that fails, exits 77 without saying SKIPPED, or hangs counts as failed; one that
    exits 77 with SKIPPED counts as skipped, never as passed;
  - a build that does not hold the kernel it was meant to fails, before any case runs, and so
    does one that dies before it can list its cases (SIGILL: instructions the CPU lacks);
  - a build this CPU cannot run is reported as built, not run, and fails nothing;
  - the model file is withheld from the variants that run without SmolLM2's cases;
  - x86_check skips (77) on a machine that is not x86-64, and marks a build this CPU lacks the
    instructions for.
Standard library only.
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import variant_check  # noqa: E402
from variant_check import Variant  # noqa: E402

# A stand-in for cpu_llama_tests: lists its cases, and behaves per case as its name says. It
# carries the kernel marker "fake kernel" in its text, as a real build carries its kernel name.
FAKE_BINARY = textwrap.dedent('''\
    import os, sys, time
    MARKER = "fake kernel"
    CASES = ["passes", "fails", "skips", "exits 77 silently", "hangs", "needs the model"]
    arg = sys.argv[1]
    if arg == "--list-test-cases":
        print("[doctest] listing all test case names")
        print("=" * 20)
        print("\\n".join(CASES))
        sys.exit(0)
    case = arg.split("=", 1)[1]
    if case == "passes":
        sys.exit(0)
    if case == "fails":
        print("CHECK( a == b ) is NOT correct!")
        sys.exit(1)
    if case == "skips":
        print("SKIPPED: no model")
        sys.exit(77)
    if case == "exits 77 silently":
        sys.exit(77)
    if case == "hangs":
        time.sleep(30)
    if case == "needs the model":
        if os.environ.get("SPECLAB_MODEL"):
            sys.exit(0)
        print("SKIPPED: the SmolLM2 model file is not in the cache")
        sys.exit(77)
    ''')


def load_x86_check():
    loader = importlib.machinery.SourceFileLoader("x86_check", str(ROOT / "tools" / "x86_check"))
    spec = importlib.util.spec_from_loader("x86_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class VariantCheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.exe = os.path.join(self.dir.name, "fake_tests.py")
        with open(self.exe, "w", encoding="utf-8") as f:
            f.write(FAKE_BINARY)

    def tearDown(self):
        self.dir.cleanup()

    def variant(self, **kw):
        fields = dict(name="fake", folder="fake", flags="-mfake", kernel=b"fake kernel",
                      runner=[sys.executable])
        fields.update(kw)
        return Variant(**fields)

    def run_check(self, variants, model=(), timeout=5):
        out = io.StringIO()
        with mock.patch.object(variant_check, "build", return_value=self.exe), \
                contextlib.redirect_stdout(out):
            failed = variant_check.check("test", variants, self.dir.name, 1, set(model), timeout,
                                         "(no model)")
        return failed, out.getvalue()

    def test_each_outcome_is_counted_as_what_it_is(self):
        v = self.variant()
        results = {case: variant_check.run_case(v, self.exe, case, dict(os.environ), 2)[0]
                   for case in variant_check.cases(v, self.exe)}
        self.assertEqual(results, {"passes": "passed", "fails": "failed", "skips": "skipped",
                                   "exits 77 silently": "failed", "hangs": "failed",
                                   "needs the model": results["needs the model"]})

    def test_a_run_reports_its_failures_by_case(self):
        with mock.patch.dict(os.environ, {"SPECLAB_MODEL": "/some/model.gguf"}):
            failed, out = self.run_check([self.variant()], model={"fake"}, timeout=2)
        self.assertEqual(failed, 3, out)
        for case in ("fails", "exits 77 silently", "hangs"):
            self.assertIn(f"FAIL fake: {case}\n", out)
        self.assertIn("timed out after 2 s", out)
        self.assertIn("fake (-mfake, kernel fake kernel): 2 passed, 3 failed, 1 skipped; ", out)

    def test_the_model_is_withheld_where_its_cases_do_not_run(self):
        with mock.patch.dict(os.environ, {"SPECLAB_MODEL": "/some/model.gguf"}):
            _, out = self.run_check([self.variant()], model=set(), timeout=2)
        # "needs the model" now skips: 1 passed, 2 skipped, and the note says why.
        self.assertIn("1 passed, 3 failed, 2 skipped (no model); ", out)

    def test_a_build_without_its_kernel_fails_before_any_case(self):
        failed, out = self.run_check([self.variant(kernel=b"avx2 (8 rows per instruction)")])
        self.assertEqual(failed, 1)
        self.assertIn("FAIL fake: the build does not hold the avx2 (8 rows per instruction) "
                      "kernel", out)
        self.assertNotIn("FAIL fake: fails", out)

    def test_a_build_that_cannot_list_its_cases_fails_by_name(self):
        # As a build for instructions the CPU lacks would: killed by SIGILL before any case.
        with open(self.exe, "w", encoding="utf-8") as f:
            f.write("import os, signal\nMARKER = 'fake kernel'\nos.kill(os.getpid(), signal.SIGILL)\n")
        failed, out = self.run_check([self.variant()])
        self.assertEqual(failed, 1)
        self.assertIn("FAIL fake: listing the cases was killed by SIGILL", out)

    def test_a_build_this_cpu_cannot_run_is_only_built(self):
        failed, out = self.run_check([self.variant(cannot_run="this CPU lacks avx_vnni")])
        self.assertEqual(failed, 0)
        self.assertIn("fake (-mfake, kernel fake kernel): built, not run: this CPU lacks "
                      "avx_vnni; ", out)


class X86CheckTest(unittest.TestCase):
    def test_bad_options_are_usage_errors_before_any_build(self):
        # '--build-dir ""' built in the current folder: inside the checkout, run from its root.
        for tool in ("x86_check", "arm_check"):
            for args, message in ((["--build-dir", ""], "--build-dir '': give the build tree"),
                                  (["-j", "0"], "--jobs must be at least 1")):
                with self.subTest(tool=tool, args=args), tempfile.TemporaryDirectory() as tmp:
                    p = subprocess.run([sys.executable, str(ROOT / "tools" / tool), *args],
                                       capture_output=True, text=True, timeout=60, cwd=tmp)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertIn(message, p.stderr)
                    self.assertEqual(os.listdir(tmp), [])


    def test_another_machine_is_skipped_with_the_reason(self):
        x86 = load_x86_check()
        out = io.StringIO()
        with mock.patch.object(x86.platform, "machine", return_value="aarch64"), \
                mock.patch.object(sys, "argv", ["x86_check"]), contextlib.redirect_stdout(out):
            self.assertEqual(x86.main(), 77)
        self.assertIn("x86_check: SKIPPED: this machine is aarch64, not x86-64", out.getvalue())

    def test_a_build_needing_what_the_cpu_lacks_is_not_run(self):
        x86 = load_x86_check()
        seen = {}

        def fake_check(tool, variants, under, jobs, model, timeout, model_note):
            seen.update({v.name: v.cannot_run for v in variants})
            seen["model"] = model
            return 0

        with mock.patch.object(x86.platform, "machine", return_value="x86_64"), \
                mock.patch.object(x86, "cpu_flags", return_value={"avx2", "fma", "f16c"}), \
                mock.patch.object(x86.variant_check, "check", fake_check), \
                mock.patch.object(sys, "argv", ["x86_check"]):
            self.assertEqual(x86.main(), 0)
        self.assertEqual(seen["avx2"], "")
        self.assertEqual(seen["scalar"], "")
        self.assertEqual(seen["avxvnni"], "this CPU lacks avx_vnni")
        self.assertEqual(seen["avx512"], "this CPU lacks avx512f, avx512bw, avx512vl, avx512_vnni")
        self.assertEqual(seen["model"], {"avx2", "avxvnni", "avx512"})  # not the scalar build's


if __name__ == "__main__":
    unittest.main()
