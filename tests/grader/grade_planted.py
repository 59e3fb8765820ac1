#!/usr/bin/env python3
"""Makes the planted lab01 submissions and grades them all in one tools/grade run.

The submissions are generated, never stored as code:
  solution, wrapped.zip   the reference solution (a folder; a zip with everything in one folder)
  starter, tampered,      the untouched starter (from git HEAD); the same with test and build
  submitted.zip           files that would make every test pass; the zip tools/submit makes
  stub                    the starter with every todo() returning a default (tools/make_stub.py)
  <name>                  tests/grader/planted/lab01/<name>.mutant applied to the solution:
                          throws, segfault, abort, loop, alloc, exits, no_compile
  mutant-<name>           tests/mutants/lab01/<name>.mutant applied to the solution

Grading uses the example hidden tests in tests/grader/hidden and expected.json's settings: a
short case timeout (for the planted infinite loop) and a small memory limit (for the planted
unbounded allocation).
check_planted.py then compares every report with expected.json.

usage: grade_planted.py --out DIR --work DIR [--jobs N]
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAB, LAB_DIR = "lab01", "lab01_prompt_lookup"
EDITABLE = f"labs/{LAB_DIR}/starter.cpp"
SOLUTION = os.path.join(REPO, "solutions", LAB_DIR, "solution.cpp")


def settings():
    """expected.json's settings: the case timeout and memory limit the expectations assume."""
    with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as f:
        return json.load(f)["settings"]


TAMPER = b"""
#include <fstream>
#include <iterator>
#include <string>
namespace {
const bool planted_tamper = [] {
  const std::string here = __FILE__;  // WORK/src/labs/lab01_prompt_lookup/starter.cpp
  const std::string header = here.substr(0, here.rfind('/')) + "/prompt_lookup.h";
  std::ifstream in(header);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("planted-tamper") == std::string::npos) {
    std::ofstream(header, std::ios::app) << "\\n// planted-tamper\\n#undef CHECK\\n"
                                            "#define CHECK(...) ((void)0)\\n";
  }
  return true;
}();
}  // namespace
"""


def read(path):
    with open(path, "rb") as f:
        return f.read()


def head_starter(editable=EDITABLE):
    """The starter as committed (a student's untouched file), or the working tree's outside git."""
    try:
        return subprocess.run(["git", "-C", REPO, "show", f"HEAD:{editable}"], check=True,
                              capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return read(os.path.join(REPO, editable))


def folder(root, name, files):
    d = os.path.join(root, name)
    for rel, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        with open(os.path.join(d, rel), "wb") as f:
            f.write(data)
    return d


def mutant(mutant_file, out_cpp):
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_mutant.py"), SOLUTION,
                    mutant_file, out_cpp], check=True)
    return read(out_cpp)


def make_submissions(root):
    """Writes the planted submissions under root; returns their paths in grading order (the same
    file content graded twice in a row is not recompiled)."""
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    gen = os.path.join(root, "_generated")
    os.makedirs(gen)
    subs = [folder(root, "solution", {EDITABLE: read(SOLUTION)})]
    wrapped = os.path.join(root, "wrapped.zip")
    with zipfile.ZipFile(wrapped, "w") as zf:
        zf.writestr(f"alice-lab01/{EDITABLE}", read(SOLUTION))
        zf.writestr("alice-lab01/notes.txt", "my notes\n")
    subs.append(wrapped)
    # A correct file whose code, while its cases run, turns the checks off in the grading copy's
    # lab header for whoever is built next: every submission after it is a victim, unless the
    # grader puts the copy back.
    subs.append(folder(root, "tamper", {EDITABLE: read(SOLUTION) + TAMPER}))

    starter = head_starter()
    subs.append(folder(root, "starter", {EDITABLE: starter}))
    # The starter with every todo() replaced by a default return: it compiles and does nothing.
    with open(os.path.join(gen, "starter.cpp"), "wb") as f:
        f.write(starter)
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_stub.py"),
                    os.path.join(gen, "starter.cpp"), os.path.join(gen, "stub.cpp")], check=True)
    subs.append(folder(root, "stub", {EDITABLE: read(os.path.join(gen, "stub.cpp"))}))
    passing = (b'#include <doctest/doctest.h>\nTEST_CASE("everything passes") { CHECK(true); }\n')
    subs.append(folder(root, "tampered", {
        EDITABLE: starter,
        f"tests/{LAB}/test_ngram_propose.cpp": passing,
        f"tests/{LAB}/test_verify_greedy.cpp": passing,
        f"tests/{LAB}/points.txt": b"1000 everything passes\n",
        "tests/CMakeLists.txt": b"# nothing to see\n",
        "tools/testrun.py": b"import sys\nsys.exit(0)\n",
    }))
    # The reference solution pulled in through a macro, which the text check of #include cannot
    # read: the compiler's dependency list still names it.
    subs.append(folder(root, "macro_include", {EDITABLE: (
        b'#define SOL "../../solutions/lab01_prompt_lookup/solution.cpp"\n#include SOL\n')}))
    # The same from the instructor's own checkout, outside the grading copy.
    checkout_solution = os.path.join(REPO, "solutions", "lab01_prompt_lookup", "solution.cpp")
    subs.append(folder(root, "macro_include_checkout", {EDITABLE: (
        f'#define SOL "{checkout_solution}"\n#include SOL\n'.encode())}))
    submitted = os.path.join(root, "submitted.zip")
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "submit"), LAB, "--out",
                    submitted], check=True, stdout=subprocess.DEVNULL)
    subs.append(submitted)

    for path in sorted(glob.glob(os.path.join(HERE, "planted", LAB, "*.mutant"))):
        name = os.path.basename(path)[:-len(".mutant")]
        subs.append(folder(root, name, {EDITABLE: mutant(path, os.path.join(gen, name + ".cpp"))}))
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "mutants", LAB, "*.mutant"))):
        name = "mutant-" + os.path.basename(path)[:-len(".mutant")]
        subs.append(folder(root, name, {EDITABLE: mutant(path, os.path.join(gen, name + ".cpp"))}))
    return subs


def hidden_files_in_copy(work):
    """Files in the grader's source copy with the content of a hidden test file."""
    def digest(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    hidden = {digest(os.path.join(r, f)) for r, _, fs in os.walk(os.path.join(HERE, "hidden"))
              for f in fs}
    return [os.path.join(r, f) for r, _, fs in os.walk(os.path.join(work, "src")) for f in fs
            if digest(os.path.join(r, f)) in hidden]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = p.parse_args()
    subs = make_submissions(os.path.join(a.out, "submissions"))
    grades = os.path.join(a.out, "grades")
    shutil.rmtree(grades, ignore_errors=True)
    limits = settings()
    cmd = [sys.executable, os.path.join(REPO, "tools", "grade"), *subs,
           "--hidden", os.path.join(HERE, "hidden"), "--timeout", str(limits["timeout_s"]),
           "--mem-mb", str(limits["mem_mb"]), "--out", grades, "--work", a.work,
           "--jobs", str(a.jobs)]
    print("running:", " ".join(cmd), flush=True)
    rc = subprocess.call(cmd)
    # Checked now, while this test still holds the grading folder (RESOURCE_LOCK): a later run
    # without --hidden copies the repository's example hidden tests like any other file.
    with open(os.path.join(a.out, "hidden_in_copy.json"), "w", encoding="utf-8") as f:
        json.dump(hidden_files_in_copy(a.work), f)
    if rc != 0:
        print(f"tools/grade exited with {rc}: grading the planted submissions must work "
              "(exit 0) whatever they score")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
