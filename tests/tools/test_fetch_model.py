#!/usr/bin/env python3
"""tools/fetch_model with SPECLAB_MODEL set (standard library only, no network).

A file named by SPECLAB_MODEL is used as it is, but one that is not the pinned SmolLM2 file is
said to be so (its docstring once promised a checksum check there that the code never made);
a SPECLAB_MODEL that does not exist fails with the hand-provision instructions.
"""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

FETCH = Path(__file__).resolve().parents[2] / "tools" / "fetch_model"


def fetch(env_extra, *args):
    """Runs tools/fetch_model with env_extra over the environment (a value of None removes it)."""
    env = dict(os.environ)
    env.update(env_extra)
    env = {k: v for k, v in env.items() if v is not None}
    p = subprocess.run([sys.executable, str(FETCH), *args], capture_output=True, text=True,
                       env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


class Options(unittest.TestCase):
    def test_help_explains_and_fetches_nothing(self):
        # --help used to be ignored: it printed the cached path, or started the download. An
        # empty cache and no network shows which: nothing may be fetched or attempted.
        with tempfile.TemporaryDirectory() as tmp:
            for flag in ("--help", "-h"):
                rc, out, err = fetch({"SPECLAB_CACHE": tmp, "SPECLAB_MODEL": ""}, flag)
                self.assertEqual(rc, 0, err)
                self.assertIn("Fetches SmolLM2-135M-Instruct", out)
                self.assertIn("Usage: tools/fetch_model", out)
                self.assertEqual(os.listdir(tmp), [])
            rc, out, err = fetch({"SPECLAB_CACHE": tmp, "SPECLAB_MODEL": ""}, "--force")
            self.assertEqual(rc, 2)
            self.assertIn("unexpected argument '--force'", err)
            self.assertEqual(os.listdir(tmp), [])

    def test_a_cache_path_that_is_a_file_is_named(self):
        # It ended in a FileExistsError traceback.
        with tempfile.NamedTemporaryFile() as f:
            rc, out, err = fetch({"SPECLAB_CACHE": f.name, "SPECLAB_MODEL": ""})
            self.assertEqual(rc, 1, err)
            self.assertIn(f"the cache folder {f.name} (SPECLAB_CACHE) is a file, not a folder",
                          err)
            self.assertNotIn("Traceback", err)


    def test_no_home_and_no_cache_folder_is_named_not_taken_for_the_root(self):
        # HOME='' made the cache /.cache/speclab: the 93 MB download went there.
        had_root_cache = os.path.exists("/.cache/speclab")
        for home in ("", None):  # empty, and not set at all
            rc, out, err = fetch({"SPECLAB_CACHE": "", "SPECLAB_MODEL": "", "HOME": home,
                                  "PIP_NO_INDEX": "1"})
            # fail() asked cache_dir() for the folder, which called fail() again: the message
            # was only the quoted source line of a 2,000-line RecursionError traceback (and a
            # Python error exits 1 too).
            self.assertFalse("Traceback" in err, err[:600])
            self.assertEqual(rc, 1, err)
            self.assertIn("fetch_model: neither SPECLAB_CACHE nor HOME is set", err)
            self.assertIn("copy\n  it to $SPECLAB_CACHE/SmolLM2-135M-Instruct.Q4_1.gguf", err)
            self.assertEqual(os.path.exists("/.cache/speclab"), had_root_cache)


class SpeclabModel(unittest.TestCase):
    def test_a_special_file_is_named_as_such_not_as_missing(self):
        # A FIFO (or a device) exists: "does not exist" sent the user looking for a typo.
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "model.fifo")
            os.mkfifo(fifo)
            rc, out, err = fetch({"SPECLAB_MODEL": fifo})
            self.assertEqual(rc, 1, err)
            self.assertIn(f"SPECLAB_MODEL={fifo} is not a regular file", err)
            self.assertNotIn("does not exist", err)

    def test_a_file_that_is_not_the_pinned_model_is_used_with_a_warning(self):
        with tempfile.TemporaryDirectory() as tmp:
            other = os.path.join(tmp, "other.gguf")
            with open(other, "wb") as f:
                f.write(b"GGUF not the pinned file")
            rc, out, err = fetch({"SPECLAB_MODEL": other})
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.strip(), other)
            self.assertIn(f"warning: SPECLAB_MODEL={other} is not the pinned SmolLM2 file", err)
            self.assertIn("expected b179c9523d0e6a0f", err)

    def test_a_missing_file_fails_and_says_how_to_provide_it(self):
        rc, out, err = fetch({"SPECLAB_MODEL": "/nonexistent/SmolLM2.gguf"})
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn("SPECLAB_MODEL=/nonexistent/SmolLM2.gguf does not exist", err)
        self.assertIn("To provide the model by hand", err)
        with tempfile.TemporaryDirectory() as tmp:  # it said "does not exist"
            rc, out, err = fetch({"SPECLAB_MODEL": tmp})
            self.assertEqual(rc, 1)
            self.assertIn(f"SPECLAB_MODEL={tmp} is a folder: give the path of the GGUF file", err)


if __name__ == "__main__":
    unittest.main()
