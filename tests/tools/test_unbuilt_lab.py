#!/usr/bin/env python3
"""A lab whose cases are not registered yet must not look green.

A lab's cases are listed when its solution test binary is built (cmake/SpecLabTesting.cmake,
"Discovery runs on the solution build"). A student who builds only their starter target and runs
`LAB_IMPL=starter ctest -L lab01` used to see "100% tests passed" with no case run: the
placeholder test that says so had no lab label. This configures a scratch build of the project
and checks, for lab01:
  1. `ctest -L lab01` lists the placeholder, and it fails naming what to build;
  2. the lab's build step (tools/testrun.py lab-build) builds the solution binary too, so the
     same ctest command run again finds every case;
  3. the build step given a lab that does not exist says so (it used to blame compiler errors).
Standard library only. Takes about half a minute (a configure and lab01's build, one job).
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = "lab01"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def fail(msg, out=""):
    print(f"FAIL: {msg}\n{out}")
    sys.exit(1)


def main():
    build = Path(tempfile.mkdtemp(prefix="speclab-unbuilt-"))
    try:
        cfg = run(["cmake", "-S", str(ROOT), "-B", str(build), "-DSPECLAB_NO_CUDA=ON"])
        if cfg.returncode != 0:
            fail("configuring the scratch build failed", cfg.stdout + cfg.stderr)
        env = dict(os.environ, LAB_IMPL="starter", SPECLAB_CTEST_HOOKS="0")

        listed = run(["ctest", "--test-dir", str(build), "-N", "-L", LAB], env=env).stdout
        if f"{LAB}: NOT BUILT" not in listed:
            fail(f"`ctest -L {LAB}` in an unbuilt tree does not list '{LAB}: NOT BUILT'", listed)
        placeholder = run(["ctest", "--test-dir", str(build), "-L", LAB, "-R", "NOT BUILT",
                           "--output-on-failure"], env=env)
        if placeholder.returncode == 0:
            fail("the NOT BUILT placeholder passed", placeholder.stdout)
        if f"{LAB}_tests_solution" not in placeholder.stdout:
            fail(f"the placeholder's output does not name {LAB}_tests_solution",
                 placeholder.stdout)

        typo = run([sys.executable, str(ROOT / "tools" / "testrun.py"), "lab-build",
                    "--build-dir", str(build), "--lab", "lab99"], env=env)
        if typo.returncode == 0 or "no lab 'lab99'" not in typo.stdout:
            fail("lab-build of a lab that does not exist does not say so", typo.stdout)
        built = run([sys.executable, str(ROOT / "tools" / "testrun.py"), "lab-build",
                     "--build-dir", str(build), "--lab", LAB], env=env)
        if built.returncode != 0:
            fail("tools/testrun.py lab-build failed", built.stdout + built.stderr)
        if "run the same ctest command again" not in built.stdout.lower():
            fail("lab-build does not say to run ctest again", built.stdout)
        listed = run(["ctest", "--test-dir", str(build), "-N", "-L", LAB], env=env).stdout
        if "NOT BUILT" in listed or listed.count(f": {LAB}: ") < 10:
            fail(f"after lab-build, `ctest -L {LAB}` still does not list the lab's cases", listed)
        print(f"ok: an unbuilt {LAB} fails by name, and its build step registers its cases")
    finally:
        shutil.rmtree(build, ignore_errors=True)


if __name__ == "__main__":
    main()
