"""SpecLab's grader: the code behind tools/grade and tools/submit (book/instructors.md).

  labs.py        the declared labs, their editable files and their points files
  submission.py  reading a submission (a folder or a zip): only the editable files count
  workspace.py   the isolated copy of the repository and its grading build, reused across runs
  runner.py      running a lab's cases against a submission and classifying each outcome
  reports.py     the terminal table, grade.json, JUnit XML and Gradescope's results.json
  cli.py         tools/grade
  submit.py      tools/submit
"""


class GradingError(Exception):
    """Grading could not run (as opposed to a submission scoring badly). The message says why."""


class SubmissionError(GradingError):
    """One submission could not be graded (unreadable, or nothing in it to grade); the others
    still are."""
