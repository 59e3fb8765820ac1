"""Builds the CPU model tests as another CPU would, and runs their cases one by one.

Shared by tools/arm_check (AArch64, cross-compiled, run under QEMU) and tools/x86_check (other
x86-64 instruction sets, run natively). The kernels pick their instructions when they are
compiled (mini_engine/targets/cpu_kernels.cpp), so a build for this machine's CPU tests only one
of them: each check builds cpu_llama_tests again with other compiler flags, in its own folder.

A variant is checked in four steps: configure and build, confirm from the binary that the build
holds the kernel it was meant to (a flag the compiler ignored would otherwise test the wrong
code and pass), list the doctest cases, run each in its own process. A case that exits 77 with
"SKIPPED:" (a model case without the model file) counts as skipped, not passed.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "cpu_llama_tests"
SKIP = 77


@dataclass
class Variant:
    name: str            # the name printed (and --cpu's choice)
    folder: str          # its build folder, under the build tree
    flags: str           # CMAKE_CXX_FLAGS
    kernel: bytes        # a kernel name string (cpu_kernels.cpp) the build must hold
    cmake_args: list = field(default_factory=list)  # further -D arguments
    runner: list = field(default_factory=list)      # the command that runs a binary (an emulator)
    cannot_run: str = ""  # why this machine cannot run the build ("": it can)


def check_usage(ap, args):
    """The usage errors both checks share: exits 2 through the argparse parser `ap`."""
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if not args.build_dir:  # '' is the current folder: the builds would land in the checkout
        ap.error("--build-dir '': give the build tree the builds go under (default build)")


def build(variant, under, jobs):
    """Configures and builds TARGET for `variant` in under/<folder>; returns the binary's path."""
    build_dir = os.path.join(under, variant.folder)
    subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                    "-DSPECLAB_NO_CUDA=ON", f"-DCMAKE_CXX_FLAGS={variant.flags}"]
                   + variant.cmake_args, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "--target", TARGET, "-j", str(jobs)],
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.join(build_dir, "tests", TARGET)


def cases(variant, exe):
    out = subprocess.run(variant.runner + [exe, "--list-test-cases", "--no-version"], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines()
            if line and not line.startswith("[doctest]") and not line.startswith("===")]


def run_case(variant, exe, case, env, timeout):
    """Runs one case: ('passed' | 'skipped' | 'failed', output)."""
    cmd = variant.runner + [exe, "--test-case=" + case.replace(",", "\\,"), "--no-version",
                            "--no-colors"]
    if variant.runner:
        # Tells the cases that ask the kernel for something an emulator only pretends to do
        # (QEMU's user mode accepts madvise and ignores it) that this is emulation.
        env = {**env, "SPECLAB_EMULATOR": variant.runner[0]}
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "failed", f"timed out after {timeout} s"
    out = r.stdout + r.stderr
    if r.returncode == 0:
        return "passed", out
    if r.returncode == SKIP and "SKIPPED:" in out:
        return "skipped", out
    return "failed", f"exit status {r.returncode}\n{out}"


def report_skip(tool, build_dir, case, reason):
    """Prints `reason` and, under ctest (`case` given), lists it at the end of the run."""
    print(f"{tool}: SKIPPED: {reason}")
    if case:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import testrun
        testrun.record_skip(build_dir, case, "SKIPPED: " + reason + "\n")
    return SKIP


def check(tool, variants, build_under, jobs, model, timeout, model_note):
    """Builds and runs every variant; prints a line for each and every failure. `model`: a set of
    variant names whose SmolLM2 cases run (the others run with no model file, so those cases
    skip at once). Returns the number of failures."""
    empty = tempfile.mkdtemp(prefix=f"speclab-{tool}-")
    no_model = dict(os.environ)
    no_model.pop("SPECLAB_MODEL", None)
    no_model["SPECLAB_CACHE"] = empty
    failed = 0
    try:
        for v in variants:
            t0 = time.time()
            try:
                exe = build(v, build_under, jobs)
            except subprocess.CalledProcessError as e:
                print(f"FAIL {v.name}: the build failed: '{' '.join(e.cmd)}' exited with "
                      f"{e.returncode} (its errors are above)")
                failed += 1
                continue
            with open(exe, "rb") as f:
                if v.kernel not in f.read():
                    print(f"FAIL {v.name}: the build does not hold the {v.kernel.decode()} kernel")
                    failed += 1
                    continue
            what = f"{v.name} ({v.flags}, kernel {v.kernel.decode()})"
            if v.cannot_run:
                print(f"{what}: built, not run: {v.cannot_run}; {time.time() - t0:.0f} s",
                      flush=True)
                continue
            with_model = v.name in model
            try:
                listed = cases(v, exe)
            except subprocess.CalledProcessError as e:  # it crashed before any case ran
                how = (f"was killed by {signal.Signals(-e.returncode).name}" if e.returncode < 0
                       else f"exited with {e.returncode}")
                print(f"FAIL {v.name}: listing the cases {how}\n{e.stdout}{e.stderr}")
                failed += 1
                continue
            counts = {"passed": 0, "skipped": 0, "failed": 0}
            for case in listed:
                status, out = run_case(v, exe, case, os.environ if with_model else no_model,
                                       timeout)
                counts[status] += 1
                if status == "failed":
                    print(f"FAIL {v.name}: {case}\n{out}")
                elif status == "skipped" and with_model:
                    print(f"skipped {v.name}: {case}: " + out.split("SKIPPED:", 1)[1].strip())
            failed += counts["failed"]
            print(f"{what}: {counts['passed']} passed, {counts['failed']} failed, "
                  f"{counts['skipped']} skipped{'' if with_model else ' ' + model_note}; "
                  f"{time.time() - t0:.0f} s", flush=True)
    finally:
        shutil.rmtree(empty, ignore_errors=True)
    return failed

