"""SpecLab's grader: the code behind tools/grade and tools/submit (book/instructors.md).

  labs.py        the declared labs, their editable files and their points files
  submission.py  reading a submission (a folder or a zip): only the editable files count
  workspace.py   the isolated copy of the repository and its grading build, reused across runs
  runner.py      running a lab's cases against a submission and classifying each outcome
  reports.py     the terminal table, grade.json, JUnit XML and Gradescope's results.json
  cli.py         tools/grade
  submit.py      tools/submit
"""
import re


def printable(text):
    """`text` safe to print on a terminal and to write as UTF-8: a file name's bytes that are
    not UTF-8 (os.walk hands them over as surrogates) and control characters but newline and
    tab (an escape sequence that clears the screen, a NUL) become \\xNN."""
    try:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no byte made
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", text)


class GradingError(Exception):
    """Grading could not run (as opposed to a submission scoring badly). The message says why."""


class SubmissionError(GradingError):
    """One submission could not be graded (unreadable, or nothing in it to grade); the others
    still are."""
