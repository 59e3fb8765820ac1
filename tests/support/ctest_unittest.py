"""unittest.main for a test that ctest runs, with ctest's meaning of the exit status.

unittest exits 0 when every test was skipped, so a ctest test whose whole subject is missing (the
model is not cached) read as Passed. main() exits:
  1   when a test failed or errored, or when no test ran at all;
  77  (the ctest test's SKIP_RETURN_CODE) when every test that ran was skipped, after printing
      each reason;
  0   otherwise. Skips next to passing tests are listed but do not turn the run into a skip.
"""
import sys
import unittest

SKIPPED = 77


def main(verbosity=2):
    program = unittest.main(verbosity=verbosity, exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0:
        print("ctest_unittest: no test ran: a run that tests nothing counts as a failure",
              file=sys.stderr)
        sys.exit(1)
    for test, reason in result.skipped:
        print(f"skipped: {test.id()}: {reason}", file=sys.stderr)
    sys.exit(SKIPPED if len(result.skipped) == result.testsRun else 0)
