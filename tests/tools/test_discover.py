#!/usr/bin/env python3
"""cmake/discover_doctest.cmake registers each doctest case as one ctest test, whatever its name.

A case may be named "rates in [0, 1) are accepted". CMake keeps a ';' inside
square brackets from splitting a list, so such a name used to swallow every case listed after
it into one bogus test. The script must register such names whole, and must stop the build,
naming the problem, when the names it read do not add up to the count doctest printed.
Runs the script with `cmake -P` on fake test programs. Standard library only.

  test_discover.py SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

HEADER = '[doctest] doctest version is "2.4.9"\n[doctest] listing all test case names\n' + "=" * 79 + "\n"


def listing(names, count=None):
    count = len(names) if count is None else count
    return (HEADER + "".join(n + "\n" for n in names) + "=" * 79 + "\n"
            f"[doctest] unskipped test cases passing the current filters: {count}\n")


def discover(source_dir, work, names, count=None, emulator=None):
    """Runs the script on a fake program that lists `names`; returns (rc, output, registered
    names in the list file, the generated ctest script). With `emulator` (a cross build's
    CMAKE_CROSSCOMPILING_EMULATOR) the fake program is not executable: only the emulator runs it."""
    fake = os.path.join(work, "fake_tests")
    with open(os.path.join(work, "listing.txt"), "w") as f:
        f.write(listing(names, count))
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\ncat '{work}/listing.txt'\n")
    os.chmod(fake, 0o644 if emulator else 0o755)
    props = os.path.join(work, "props.cmake")
    with open(props, "w") as f:
        f.write("set(RUNNER [==[runner]==])\nset(PROPS [==[LABELS;demo]==])\n"
                f"set(EMULATOR [==[{emulator or ''}]==])\n")
    list_file, ctest_file = os.path.join(work, "cases.txt"), os.path.join(work, "cases.cmake")
    for p in (list_file, ctest_file):
        if os.path.exists(p):
            os.remove(p)
    r = subprocess.run(["cmake", f"-DEXE={fake}", f"-DLIST_FILE={list_file}",
                        f"-DCTEST_FILE={ctest_file}", "-DPREFIX=demo", f"-DPROPS_FILE={props}",
                        "-P", os.path.join(source_dir, "cmake", "discover_doctest.cmake")],
                       capture_output=True, text=True)
    registered = open(list_file).read().splitlines() if os.path.exists(list_file) else None
    script = open(ctest_file).read() if os.path.exists(ctest_file) else None
    return r.returncode, r.stdout + r.stderr, registered, script


def main():
    source_dir = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as work:
        names = ["rates in [0, 1) are accepted", "a later case", "closing ] alone", "plain"]
        rc, out, registered, script = discover(source_dir, work, names)
        if rc != 0 or registered != names:
            failures.append(f"bracketed names: rc={rc}, registered {registered!r}\n{out}")
        elif script.count("add_test(") != len(names) or \
                "add_test([==[demo: rates in [0, 1) are accepted]==]" not in script:
            failures.append(f"bracketed names: the ctest script is wrong:\n{script}")
        # A ';' in a name cannot survive a CMake list: the build stops and says so.
        rc, out, registered, _ = discover(source_dir, work, ["a;b", "c"])
        if rc == 0 or "lists 2 test cases but 3 were read" not in out or registered is not None:
            failures.append(f"';' in a name: rc={rc}, registered {registered!r}\n{out}")
        # A cross build lists the cases through its emulator (tools/arm_check: qemu-aarch64).
        rc, out, registered, _ = discover(source_dir, work, ["one", "two"], emulator="/bin/sh")
        if rc != 0 or registered != ["one", "two"]:
            failures.append(f"through an emulator: rc={rc}, registered {registered!r}\n{out}")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
