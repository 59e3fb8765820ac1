"""tools/submit: packs a lab's editable files into a zip for grading.

  tools/submit labNN [labNN ...] [--out FILE|DIR]

The zip holds exactly the editable files (labs/labNN_*/starter.cpp) at their repository paths
and a MANIFEST.json with the labs, each file's sha256, the sha256 of the lab's headers, and the
git commit. It warns when a file has uncommitted changes (the zip takes the file as it is on
disk), when a lab header does (grading uses the course's copy), and when TODOs are left.
--out names the zip, or a folder to write submission-labNN.zip in: one that exists, or a path
that ends with /. A zip that cannot be written leaves nothing behind.
--out never replaces a file that is not a zip. Exit status: 0 when the zip was written, 1 when it
could not be (the reason is printed), 2 on bad usage (a lab that is not this repository's, an
--out that is not a .zip).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import zipfile

from . import GradingError
from .labs import LAB_NAME, editable_files, lab_headers, source_labs
from .submission import MANIFEST, MANIFEST_FORMAT, sha256

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def git(*args):
    """git's output in the repository, or None when git fails (no git, not a checkout)."""
    try:
        p = subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, text=True)
    except OSError:
        return None
    return p.stdout if p.returncode == 0 else None


def build_zip(labs, out):
    """Writes the zip for `labs` to `out`; returns (manifest, warnings). On failure it leaves
    nothing behind."""
    if os.path.isdir(out):
        raise GradingError(f"{out} is a folder; give --out a file name")
    known = source_labs(REPO)
    warnings, files, headers = [], [], []
    for lab in labs:
        if not LAB_NAME.match(lab) or lab not in known:
            raise GradingError(f"unknown lab '{lab}'; this repository has "
                               f"{', '.join(known) or 'no labs'}")
        for rel in editable_files(known[lab]):
            path = os.path.join(REPO, rel)
            if not os.path.isfile(path):
                raise GradingError(f"{rel} is missing")
            with open(path, "rb") as f:
                data = f.read()
            files.append({"path": rel, "lab": lab, "sha256": sha256(data), "bytes": len(data),
                          "data": data})
            todos = data.decode("utf-8", "replace").count(f'todo("{lab}"')
            if todos:
                warnings.append(f"{rel} still calls todo() {todos} time(s): those parts will "
                                "score 0")
        for rel in lab_headers(REPO, known[lab]):
            with open(os.path.join(REPO, rel), "rb") as f:
                headers.append({"path": rel, "sha256": sha256(f.read())})
    commit = git("rev-parse", "HEAD")
    commit = commit.strip() if commit else None
    dirty = []
    if commit is None:
        warnings.append("not a git checkout: the manifest records no commit")
    else:
        status = git("status", "--porcelain", "--", *[f["path"] for f in files]) or ""
        dirty = [line[3:] for line in status.splitlines() if len(line) > 3]
        if dirty:
            warnings.append("uncommitted changes in " + ", ".join(dirty) + ": the zip holds the "
                            "files as they are on disk; commit them so your history matches "
                            "what you submit")
        changed = git("status", "--porcelain", "--", *[h["path"] for h in headers]) or ""
        for line in changed.splitlines():
            if len(line) > 3:
                warnings.append(f"{line[3:]} has uncommitted changes: grading uses the course's "
                                "copy of it, so code that needs your change will not compile "
                                "there")
    manifest = {
        "format": MANIFEST_FORMAT,
        "labs": list(labs),
        "files": [{k: v for k, v in f.items() if k != "data"} for f in files],
        "headers": headers,  # what the files were written against: tools/grade names a change
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git": {"commit": commit, "uncommitted": dirty},
    }
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".part"
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MANIFEST, json.dumps(manifest, indent=2) + "\n")
            for f in files:
                zf.writestr(f["path"], f["data"])
        os.replace(tmp, out)
    except BaseException:
        if os.path.isfile(tmp):  # a half-written zip must not be mistaken for one
            os.remove(tmp)
        raise
    return manifest, warnings


def main(argv=None):
    p = argparse.ArgumentParser(prog="tools/submit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("labs", nargs="+", metavar="labNN")
    p.add_argument("--out", metavar="FILE|DIR",
                   help="the zip to write, or a folder to write submission-labNN.zip in "
                        "(default: submission-labNN.zip in the repository)")
    args = p.parse_args(argv)
    labs = list(dict.fromkeys(args.labs))
    known = source_labs(REPO)
    for lab in labs:
        if not LAB_NAME.match(lab):
            p.error(f"'{lab}' is not a lab name: expected labNN, such as lab01")
        if lab not in known:
            p.error(f"unknown lab '{lab}'; this repository has {', '.join(known) or 'no labs'}")
    if args.out == "":
        p.error("--out '': give a file name ending in .zip, or a folder")
    name = f"submission-{'-'.join(labs)}.zip"
    out = args.out or os.path.join(REPO, name)
    if args.out and (os.path.isdir(out) or out.endswith(("/", os.sep))):
        out = os.path.join(out, name)
    # The zip replaces what is at `out`: never a student's code or any other file.
    if not out.lower().endswith(".zip"):
        p.error(f"--out {out}: a zip's name must end in .zip")
    if os.path.lexists(out) and not os.path.isdir(out) and not (
            os.path.isfile(out) and zipfile.is_zipfile(out)):
        p.error(f"--out {out} exists and is not a zip: it was left as it is")
    parent = os.path.dirname(os.path.abspath(out))
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):  # the zip's folder would have to be made inside a file
        p.error(f"--out {out}: {parent} is a file, not a folder")
    try:
        manifest, warnings = build_zip(labs, out)
    except (GradingError, OSError) as e:
        print(f"submit: error: {e}", file=sys.stderr)
        return 1
    for w in warnings:
        print(f"submit: warning: {w}", file=sys.stderr)
    print(f"wrote {out}:")
    for f in manifest["files"]:
        print(f"  {f['path']}  ({f['bytes']} bytes, sha256 {f['sha256'][:12]})")
    print(f"  {MANIFEST}")
    print(f"Check it before you hand it in: tools/grade {out}")
    return 0
