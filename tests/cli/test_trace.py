"""`speclab trace`: the JSON Lines it writes keep the contract documented in
tools/speclab/trace_record.h, which the book's plots (tools/book_site/plots.py) rely on."""

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

SPECLAB = os.environ.get("SPECLAB_BIN", str(Path(__file__).resolve().parents[2] / "build/bin/speclab"))
# These tests are about speclab, not a student's drafters: they run the reference solutions even
# under `LAB_IMPL=starter ctest` (every speclab started below inherits this environment).
os.environ.pop("LAB_IMPL", None)
FIELDS = ["round", "position", "draft", "accepted", "emitted", "last", "draft_s", "verify_s"]
PROMPT_LEN = 16  # speclab trace's default --prompt-len


def trace(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "trace.jsonl"
    subprocess.run([SPECLAB, "trace", "--model", "toy", *args, "--out", str(out)], check=True,
                   capture_output=True, text=True)
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize("regime", ["periodic", "markov", "random"])
@pytest.mark.parametrize("k", [1, 4])
def test_every_record_keeps_the_round_contract(tmp_path, regime, k):
    rounds = trace(tmp_path, "--regime", regime, "--k", str(k), "--max-new-tokens", "200")
    assert rounds, "no records written"
    position = PROMPT_LEN
    for i, r in enumerate(rounds):
        assert list(r) == FIELDS
        assert r["round"] == i
        assert r["position"] == position
        assert len(r["draft"]) <= k
        assert 0 <= r["accepted"] <= len(r["draft"])
        assert r["emitted"][: r["accepted"]] == r["draft"][: r["accepted"]]
        assert len(r["emitted"]) == r["accepted"] + 1
        expected_last = ("plain" if not r["draft"]
                         else "bonus" if r["accepted"] == len(r["draft"]) else "correction")
        assert r["last"] == expected_last
        assert r["draft_s"] >= 0 and r["verify_s"] >= 0
        position += len(r["emitted"])
    # Two timings, not one written twice.
    assert any(r["draft_s"] != r["verify_s"] for r in rounds)
    assert position - PROMPT_LEN == 200, "the records must account for every emitted token"


def test_output_is_the_same_for_every_k(tmp_path):
    # Greedy speculation is lossless, so the emitted text cannot depend on k.
    texts = []
    for k in (1, 3, 8):
        rounds = trace(tmp_path, "--regime", "markov", "--k", str(k), "--max-new-tokens", "300",
                       "--seed", "7")
        texts.append([t for r in rounds for t in r["emitted"]])
    assert texts[0] == texts[1] == texts[2]


def test_periodic_text_is_mostly_accepted_and_random_text_never(tmp_path):
    periodic = trace(tmp_path, "--regime", "periodic", "--k", "5", "--max-new-tokens", "300")
    emitted = sum(len(r["emitted"]) for r in periodic)
    assert emitted / len(periodic) > 4.0
    assert any(r["last"] == "bonus" for r in periodic)
    random = trace(tmp_path, "--regime", "random", "--k", "5", "--max-new-tokens", "300")
    assert len(random) == 300
    assert sum(r["accepted"] for r in random) == 0


def test_noise_breaks_the_pattern(tmp_path):
    clean = trace(tmp_path, "--regime", "periodic", "--noise", "0", "--k", "5")
    noisy = trace(tmp_path, "--regime", "periodic", "--noise", "0.2", "--k", "5")
    assert not any(r["last"] == "correction" for r in clean)
    assert any(r["last"] == "correction" for r in noisy)


def test_out_dash_writes_to_standard_output():
    result = subprocess.run([SPECLAB, "trace", "--regime", "periodic", "--max-new-tokens", "10",
                             "--out", "-"], check=True, capture_output=True, text=True)
    lines = result.stdout.splitlines()
    assert sum(len(json.loads(line)["emitted"]) for line in lines) == 10
    assert "tokens/run" in result.stderr  # the summary goes to stderr, never into the data


@pytest.mark.parametrize("args, message", [
    (["--regime", "sawtooth"], "sawtooth not in"),
    (["--model", "llama"], "'llama' is neither 'toy', 'smollm2' nor an existing model file"),
    (["--k", "0"], "--k"),
])
def test_bad_options_are_rejected_with_a_message(tmp_path, args, message):
    result = subprocess.run([SPECLAB, "trace", *args, "--out", str(tmp_path / "x.jsonl")],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert message in result.stderr + result.stdout


def test_an_unwritable_output_file_is_bad_input(tmp_path):
    result = subprocess.run([SPECLAB, "trace", "--out", str(tmp_path)], capture_output=True,
                            text=True)
    assert result.returncode == 2
    assert f"--out '{tmp_path}' is a directory, not a file" in result.stderr


def test_the_output_folder_is_created(tmp_path):
    out = tmp_path / "new" / "trace.jsonl"
    subprocess.run([SPECLAB, "trace", "--model", "toy", "--max-new-tokens", "8", "--out", str(out)],
                   check=True, capture_output=True, text=True)
    assert len(out.read_text().splitlines()) > 0


def test_out_through_a_link_or_into_a_pipe_keeps_the_link_and_the_pipe(tmp_path):
    # The trace is written beside --out and renamed over it at the end (a failed run leaves --out
    # as it was): that must write through a link, and never replace a pipe or a device such as
    # /dev/null with a regular file.
    real = tmp_path / "real.jsonl"
    real.write_text("an earlier trace\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    subprocess.run([SPECLAB, "trace", "--max-new-tokens", "10", "--out", str(link)], check=True,
                   capture_output=True, text=True)
    assert link.is_symlink()
    assert sum(len(json.loads(line)["emitted"]) for line in real.read_text().splitlines()) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.jsonl", "real.jsonl"]

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    try:
        subprocess.run([SPECLAB, "trace", "--max-new-tokens", "10", "--out", str(fifo)],
                       check=True, capture_output=True, text=True, timeout=60)
        got, _ = reader.communicate(timeout=10)
    finally:
        reader.kill()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sum(len(json.loads(line)["emitted"]) for line in got.splitlines()) == 10


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupted_trace_leaves_no_scratch_file_and_out_as_it_was(tmp_path, sig):
    # Ctrl-C (or a kill) during a run left "<out>.partial-<pid>" behind: the clean-up for a
    # failed run only ran for exceptions. The signal still ends the run as it would any program.
    out = tmp_path / "trace.jsonl"
    out.write_text("an earlier trace\n")
    run = subprocess.Popen([SPECLAB, "trace", "--model", "toy", "--drafter", "none",
                            "--max-new-tokens", "1000000", "--out", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob("trace.jsonl.partial-*")):  # the run has begun
            assert run.poll() is None, run.stderr.read()
            assert time.monotonic() < deadline, "no scratch file appeared"
            time.sleep(0.01)
        run.send_signal(sig)
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == -sig, f"the run was not ended by the signal: {run.returncode} {err}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]
    assert out.read_text() == "an earlier trace\n"
