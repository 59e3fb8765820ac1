#!/usr/bin/env python3
"""tools/make_stub.py writes a lab's do-nothing stub, and `tools/testrun.py stub-check` fails
when a case passes on it.

The stub is the starter with every todo(...) call replaced by the function's default return: it
compiles and does none of the lab's work, so a case that passes on it would give points for no
work (the `starters` test of each lab). These checks pin what the replacement is for each kind
of function, that a starter the tool cannot read is an error rather than a stub that tests
nothing, and what stub-check reports (a case that passes on the stub, or that crashes on it
instead of failing a check), on a scratch build folder with a stand-in test program.
Standard library only.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAKE_STUB = ROOT / "tools" / "make_stub.py"
TESTRUN = ROOT / "tools" / "testrun.py"

STARTER = '''#include "lab.h"

namespace speclab {

std::vector<Token> propose(std::span<const Token> context, int k) {
  // TODO(labXX): the scan.
  (void)context, (void)k;
  todo("labXX", "propose", "book/x.md, section 'A (tricky); name'");
}

void Pool::update(std::span<const Token> tokens) {
  (void)tokens;
  todo("labXX", "Pool::update",
       "book/x.md, section 'Updating'");
}

Pool::Pool(const Config& config) : config_(config) {
  todo("labXX", "Pool::Pool", "book/x.md");
}

Pool& Manager::pool(int id) {
  (void)id;
  todo("labXX", "Manager::pool", "book/x.md");
}

inline int count_keys(const Pool& pool) {
  (void)pool;
  todo("labXX", "count_keys", "book/x.md");
}

}  // namespace speclab
'''


def make_stub(text):
    """(exit code, the stub's text or '', stderr) for a starter holding `text`."""
    with tempfile.TemporaryDirectory(prefix="speclab-stub-") as d:
        src, out = Path(d) / "starter.cpp", Path(d) / "stub.cpp"
        src.write_text(text, encoding="utf-8")
        p = subprocess.run([sys.executable, str(MAKE_STUB), str(src), str(out)],
                           capture_output=True, text=True)
        return p.returncode, out.read_text(encoding="utf-8") if out.exists() else "", p.stderr


# A stand-in doctest program: the case named by --test-case= passes, fails or crashes as BEHAVIOUR
# says.
PROGRAM = r'''#!/usr/bin/env python3
import os, signal, sys
BEHAVIOUR = %r
case = next(a for a in sys.argv if a.startswith("--test-case=")).split("=", 1)[1]
if BEHAVIOUR[case] == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
ok = BEHAVIOUR[case] == "pass"
token = os.environ["SPECLAB_CASE_TOKEN"]
print(f"[doctest] test cases: 1 | {int(ok)} passed | {int(not ok)} failed | 0 skipped")
print(f"\nspeclab-case-end {token} {int(not ok)}")
sys.exit(0 if ok else 1)
'''


def stub_check(behaviour):
    """(exit code, output) of `testrun.py stub-check` on a scratch build whose lab01 stub's cases
    behave as `behaviour` says."""
    with tempfile.TemporaryDirectory(prefix="speclab-stubcheck-") as build:
        tests = Path(build) / "labtests"
        tests.mkdir()
        (tests / "lab01.cases").write_text("\n".join(behaviour) + "\n", encoding="utf-8")
        exe = tests / "lab01_stub"
        exe.write_text(PROGRAM % (behaviour,), encoding="utf-8")
        exe.chmod(0o755)
        p = subprocess.run([sys.executable, str(TESTRUN), "stub-check", "--build-dir", build,
                            "--lab", "lab01", "--timeout", "30", "--mem-mb", "0"],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


failures = []


def expect(cond, what, shown):
    if not cond:
        failures.append(f"FAIL: {what}\n--- got:\n{shown}")


def main():
    rc, stub, err = make_stub(STARTER)
    expect(rc == 0, f"a well-formed starter: exit {rc}", err)
    expect("todo(" not in stub.replace('todo("labXX", "Manager::pool"', ""),
           "every todo( call but the reference-returning one is replaced", stub)
    propose = stub[stub.index("propose("):stub.index("void Pool::update")]
    expect("return {};" in propose and "(void)context, (void)k;" in propose,
           "a function that returns a value returns {} (and keeps the rest of its body)", propose)
    expect("A (tricky); name" not in stub,
           "a section name holding '(' and ');' is part of the call it replaces", stub)
    update = stub[stub.index("void Pool::update"):stub.index("Pool::Pool(")]
    expect("return" not in update and "todo(" not in update,
           "a void function's call is removed, not replaced by a return", update)
    ctor = stub[stub.index("Pool::Pool("):stub.index("Pool& Manager::pool")]
    expect("return" not in ctor and "todo(" not in ctor, "a constructor's call is removed", ctor)
    ref = stub[stub.index("Pool& Manager::pool"):stub.index("inline int count_keys")]
    expect('todo("labXX", "Manager::pool"' in ref and "return" not in ref,
           "a function that returns a reference (no default value) keeps its todo( call", ref)
    inline = stub[stub.index("inline int count_keys"):]
    expect("return {};" in inline, "specifiers before the return type are not the type", inline)

    for text, says in (("int f() { return 1; }\n", "calls todo( nowhere"),
                       ("int f() {\n  todo(\"labXX\", \"f\", \"x\")\n}\n", "does not end with"),
                       ("  todo(\"labXX\", \"f\", \"x\");\n", "no function definition")):
        rc, stub, err = make_stub(text)
        expect(rc == 1 and says in err and "Traceback" not in err,
               f"a starter the tool cannot turn into a stub: exit 1 saying '{says}'",
               f"exit {rc}: {err}")
    p = subprocess.run([sys.executable, str(MAKE_STUB)], capture_output=True, text=True)
    expect(p.returncode == 2 and "usage:" in p.stderr, "no arguments: a usage line, exit 2",
           p.stderr)
    p = subprocess.run([sys.executable, str(MAKE_STUB), "/nonexistent/starter.cpp", os.devnull],
                       capture_output=True, text=True)
    expect(p.returncode == 1 and "cannot read the starter" in p.stderr,
           "a starter that does not exist is named", p.stderr)
    with tempfile.TemporaryDirectory(prefix="speclab-stub-") as d:
        src, out = Path(d) / "starter.cpp", Path(d) / "stub" / "labs" / "starter.cpp"
        src.write_text(STARTER, encoding="utf-8")
        p = subprocess.run([sys.executable, str(MAKE_STUB), str(src), str(out)],
                           capture_output=True, text=True)
        expect(p.returncode == 0 and out.is_file(), "OUT's folder is made when it is missing",
               p.stderr)
        p = subprocess.run([sys.executable, str(MAKE_STUB), str(src), str(src / "x.cpp")],
                           capture_output=True, text=True)
        expect(p.returncode == 1 and "cannot write" in p.stderr and "Traceback" not in p.stderr,
               "an OUT that cannot be written is named", p.stderr)

    rc, out = stub_check({"first case": "fail", "second case": "fail"})
    expect(rc == 0 and "all 2 lab01 cases that ran fail on the stub" in out,
           "every case fails a check: the check passes", out)
    rc, out = stub_check({"first case": "fail", "second case": "pass"})
    expect(rc == 1 and "1 of 2 lab01 cases pass on a stub" in out and "  second case" in out
           and "  first case" not in out,
           "a case that passes on the stub fails the check, and is the one named", out)
    rc, out = stub_check({"first case": "crash", "second case": "fail"})
    expect(rc == 1 and "1 of 2 lab01 cases do not fail a check" in out
           and "  first case (crashed)" in out and "  second case" not in out,
           "a case that crashes on the stub fails the check, and is the one named", out)

    for f in failures:
        print(f)
    if failures:
        return 1
    print("ok: make_stub.py's replacements and refusals, and stub-check's verdicts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
