#!/usr/bin/env python3
"""Runs pytest with the project's .venv/ Python, for ctest: pytest_run.py PYTEST_ARGS...

pytest exits with 5 when it collected no test. A test run that tests nothing must not look
like a pass, so that exit code becomes a failure here with a message that says why.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"

if not PYTHON.exists():
    print(f"pytest_run: {PYTHON} is missing. Run tools/setup (or tools/venv) to create the "
          f"project's Python environment.", file=sys.stderr)
    sys.exit(1)
rc = subprocess.call([str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", *sys.argv[1:]])
if rc == 5:
    print(f"pytest_run: pytest collected no test from {' '.join(sys.argv[1:])}: a run that "
          f"tests nothing counts as a failure.", file=sys.stderr)
    sys.exit(1)
sys.exit(rc)
