#!/usr/bin/env python3
"""tools/bench_model.py's error paths: each stops with a message that names the problem.

The script is copied into a scratch tree with stand-ins for tools/fetch_model and
build/bin/speclab_bench_model, so no model and no build are needed:
  1. a parameter below 1 is refused by name;
  2. no model file: fetch_model's own message is passed on;
  3. the benchmark binary is missing: "build first";
  4. the benchmark binary fails: its exit status and its message are shown.
Standard library only; a second or so.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class BenchModelErrors(unittest.TestCase):
    def setUp(self):
        self.tree = Path(tempfile.mkdtemp(prefix="speclab-bench-model-"))
        self.addCleanup(shutil.rmtree, self.tree, True)
        (self.tree / "tools").mkdir()
        shutil.copy(ROOT / "tools" / "bench_model.py", self.tree / "tools" / "bench_model.py")
        self.model = self.tree / "model.gguf"
        self.model.write_bytes(b"GGUF")
        self.fetch(ok=True)

    def fetch(self, ok):
        # tools/fetch_model prints the cached model's path, or explains on stderr and fails.
        body = (f"print({str(self.model)!r})" if ok else
                "import sys\nsys.exit('fetch_model: the download failed: no network')")
        (self.tree / "tools" / "fetch_model").write_text(body + "\n")

    def bench_binary(self, script):
        exe = self.tree / "build" / "bin" / "speclab_bench_model"
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_text("#!/bin/sh\n" + script + "\n")
        exe.chmod(0o755)

    def run_script(self, *args):
        p = subprocess.run([sys.executable, str(self.tree / "tools" / "bench_model.py"), *args],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        return p.stderr

    def test_a_parameter_below_one_is_refused_by_name(self):
        for flag in ("--threads", "--repeats", "--prompt", "--decode", "--kmax"):
            self.assertIn(f"{flag} must be at least 1", self.run_script(flag, "0"))

    def test_no_model_file_passes_on_why(self):
        self.fetch(ok=False)
        err = self.run_script()
        self.assertIn("bench_model: no model file:", err)
        self.assertIn("the download failed: no network", err)

    def test_a_missing_benchmark_binary_says_build_first(self):
        err = self.run_script()
        self.assertIn("speclab_bench_model is missing: build first", err)

    def test_a_failing_benchmark_binary_shows_its_status_and_message(self):
        self.bench_binary("echo '--kmax: must be between 1 and 64' >&2\nexit 3")
        err = self.run_script()
        self.assertIn("bench_model: speclab_bench_model failed (exit 3):", err)
        self.assertIn("--kmax: must be between 1 and 64", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
