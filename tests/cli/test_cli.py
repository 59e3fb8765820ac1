#!/usr/bin/env python3
"""The speclab CLI run as a user runs it: subcommands and their --help, bad input (clear message,
non-zero exit), generate / chat / bench on the toy target, colour only on a terminal, LAB_IMPL.

Standard library only. Run one class: test_cli.py BadInput (ctest runs each class as a test).
SPECLAB_BIN names build/bin/speclab (the launcher).
"""
import io
import json
import math
import os
import pty
import re
import statistics
import select
import struct
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECLAB = os.environ.get("SPECLAB_BIN", str(ROOT / "build" / "bin" / "speclab"))
ESC = "\x1b["
ALL_DRAFTERS = ("prompt-lookup", "ngram", "nasd", "pool", "sa", "sa+ngram", "auto", "mine")


def speclab(*args, stdin=None, env=None, timeout=120, cwd=None):
    """Runs speclab; returns (exit code, stdout, stderr) as text (bytes kept as-is where invalid).
    `cwd`: the folder it runs in (a relative SPECLAB_BIN still names the same program)."""
    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.pop("LAB_IMPL", None)
    full_env.update(env or {})
    exe = os.path.abspath(SPECLAB) if cwd is not None and os.sep in SPECLAB else SPECLAB
    p = subprocess.run([exe, *args], input=stdin, capture_output=True, env=full_env,
                       timeout=timeout, cwd=cwd)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def speclab_on_tty(*args, typed=None, timeout=60):
    """Runs speclab with stdout and stderr on a pseudo-terminal; returns (exit code, output).
    With `typed` (bytes; end it with b"\\x04", Ctrl-D, to end the input) standard input is the
    terminal too, as for a user typing there, and the output includes the terminal's echo."""
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.pop("LAB_IMPL", None)
    master, slave = pty.openpty()
    p = subprocess.Popen([SPECLAB, *args], stdin=subprocess.DEVNULL if typed is None else slave,
                         stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    if typed is not None:
        os.write(master, typed)
    out = read_terminal(master, p, timeout)
    return p.wait(timeout=timeout), out.decode("utf-8", "replace")


def read_terminal(master, p, timeout):
    """Everything process `p` writes to the pseudo-terminal whose master end is `master`, until
    it closes the terminal; then closes `master`. Kills `p` if nothing comes for `timeout` s."""
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            p.kill()
            raise AssertionError("speclab on a terminal timed out")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return out


def cuda_plugin_built():
    """Whether this build has the CUDA backend plugin beside the speclab programs."""
    return (Path(SPECLAB).resolve().parent / "libspeclab_cuda_backend.so").is_file()


def warnings_in(err):
    """The warning lines of a speclab run's stderr."""
    return [line for line in err.splitlines() if line.startswith("speclab: warning: ")]


def warned_flags(err):
    """The flags that speclab's warnings say have no effect, in order."""
    return [line.split("speclab: warning: ")[1].split(" has no effect")[0]
            for line in warnings_in(err)]


def shared_libraries_loaded(*args):
    """The shared libraries a speclab run loads, its exit code and stderr (from LD_DEBUG=libs)."""
    rc, _, err = speclab(*args, env={"LD_DEBUG": "libs"})
    loaded = {line.split("calling init: ")[1].strip().rsplit("/", 1)[-1]
              for line in err.splitlines() if "calling init: " in line}
    return loaded, rc, err


class BadInput(unittest.TestCase):
    """Each bad input: a clear message on stderr and a non-zero exit code."""

    def assert_refused(self, args, *needles, stdin=None, cwd=None):
        rc, out, err = speclab(*args, stdin=stdin, cwd=cwd)
        # README: bad input exits 2 (1 is a failure while running), flag parsing errors included.
        self.assertEqual(rc, 2, f"speclab {' '.join(map(str, args))}: exit {rc}; stderr: {err}")
        for needle in needles:
            self.assertIn(needle, err, f"stderr of speclab {' '.join(map(str, args))}")
        self.assertNotIn("terminate called", err)  # an exception, not a crash
        return err

    def test_empty_prompt(self):
        self.assert_refused(["generate", "--model", "toy", "--prompt", ""], "the prompt is empty")
        self.assert_refused(["generate", "--model", "toy", "--prompt", "  \n"], "the prompt is empty")

    def test_k_zero_and_k_above_64(self):
        for k in ("0", "65"):
            for cmd in ("generate", "chat", "bench"):
                self.assert_refused([cmd, "--model", "toy", "--k", k], "--k",
                                    "must be between 1 and 64 (drafts per round)")
        # The bounds themselves are allowed.
        for k in ("1", "64"):
            for args in (["generate", "--max-new-tokens", "4"],
                         ["bench", "--workload", "toy-periodic", "--prompts", "1", "--repeats",
                          "1", "--max-new-tokens", "4", "--csv", "", "--json", ""]):
                rc, _, err = speclab(*args, "--model", "toy", "--k", k)
                self.assertEqual(rc, 0, f"--k {k}: {err}")

    def test_a_negative_noise_other_than_minus_one(self):
        # -1 means "the regime's default"; -0.5 was silently taken as that default.
        for cmd in ("generate", "bench"):
            self.assert_refused([cmd, "--model", "toy", "--noise", "-0.5"], "--noise",
                                "must be -1 (the regime's default) or between 0 and 1")

    def test_a_bench_list_that_names_a_value_twice(self):
        # Each case would run twice, doubling the time and the table's rows for nothing.
        for flag, value, named in (("--drafter", "sa,ngram,sa", "sa"), ("--k", "5,6,5", "5"),
                                   ("--n", "2,2", "2"), ("--workload", "toy-periodic,toy-periodic",
                                                         "toy-periodic"),
                                   ("--sa-draft-ratio", "2,2", "2")):
            self.assert_refused(["bench", "--model", "toy", "--repeats", "1", "--csv", "",
                                 "--json", "", flag, value],
                                f"{flag} names {named} twice")


    def test_a_whole_number_with_leading_zeros_is_refused_not_read_as_octal(self):
        # CLI11 converts whole numbers in base 0: '--k 010' ran k = 8 in generate while bench's
        # list flag read 10, '--seed 010' was seed 8, and '--k 08' said "Could not convert".
        # Every whole-number flag of every subcommand, as --help lists them (INT and UINT).
        for cmd in ("demo", "generate", "chat", "bench", "trace"):
            _, help_text, _ = speclab(cmd, "--help")
            flags = re.findall(r"^\s+(--[a-z-]+) U?INT\b", help_text, re.M)
            self.assertIn("--max-new-tokens", flags, f"speclab {cmd} --help: {help_text}")
            for flag in flags:
                for value, canonical in (("010", "10"), ("08", "8"), ("-01", "-1"), ("00", "0")):
                    self.assert_refused([cmd, "--model", "toy", flag, value], flag,
                                        f"got '{value}': write {canonical}, without leading zeros")

    def test_the_measurement_tools_read_whole_numbers_in_decimal_too(self):
        # Their CLI11 ranges took '--prompt 010' as 8 prompt tokens, without a word.
        bin_dir = Path(SPECLAB).resolve().parent
        for tool, args in (("speclab_bench_model", ["--model", "x.gguf", "--prompt", "010"]),
                           ("speclab_bench_cost_curve", ["--reps", "05"])):
            p = subprocess.run([str(bin_dir / tool), *args], capture_output=True, text=True,
                               timeout=60)
            self.assertNotEqual(p.returncode, 0, tool)
            self.assertIn("without leading zeros", p.stderr, tool)

    def test_a_whole_number_may_carry_a_plus_sign_on_every_flag(self):
        # '--k +5' was taken and '--seed +3' refused.
        for flag, value, shown in (("--k", "+5", "k=5"), ("--seed", "+3", "seed=3"),
                                   ("--n", "+2", "n=2")):
            rc, _, err = speclab("generate", "--model", "toy", flag, value, "--max-new-tokens", "2")
            self.assertEqual(rc, 0, err)
            self.assertIn(shown, err.splitlines()[0])

    def test_a_bench_list_with_an_empty_item(self):
        # CLI11 drops empty items when it splits a list: '--k 5,,6' ran k = 5 and 6 without a
        # word, and '--k ,' took the next argument as --k's value.
        for flag, value in (("--k", "5,,6"), ("--k", "5,"), ("--k", ","), ("--n", ",3"),
                            ("--drafter", "sa,,ngram"), ("--workload", "toy-periodic,"),
                            ("--batch", "1,,2")):
            self.assert_refused(["bench", "--model", "toy", "--repeats", "1", "--csv", "",
                                 "--json", "", flag, value, "--no-progress"],
                                flag, f"an empty item in '{value}'")
        self.assert_refused(["bench", "--model", "toy", "--drafter", ""], "--drafter: is empty")
        # A list's items are still checked one by one, and the usual forms still work.
        self.assert_refused(["bench", "--model", "toy", "--k", "5,x"], "--k",
                            "expected a whole number (drafts per round), got 'x'")
        self.assert_refused(["bench", "--model", "toy", "--k", "5,0"], "--k",
                            "must be between 1 and 64 (drafts per round), got 0")
    def test_n_larger_than_the_context(self):
        self.assert_refused(["generate", "--model", "toy", "--context", "64", "--max-new-tokens",
                             "32", "--n", "100"], "--n 100 is too long for the context")
        self.assert_refused(["bench", "--model", "toy", "--n", "500", "--max-new-tokens", "16",
                             "--repeats", "1", "--csv", "", "--json", ""],
                            "is too long for the context")
        # Equal is too long too (an n-gram is of use only with a token after it), and was
        # called "larger".
        self.assert_refused(["generate", "--model", "toy", "--prompt", "5", "--max-new-tokens",
                             "2", "--context", "3", "--n", "3"],
                            "--n 3 is too long for the context: this run holds at most 3 tokens")
        # An --n nobody gave (its default) does not stop a short run: a two-token run was refused
        # for a flag its user never typed. It runs, with a warning that nothing will be drafted.
        rc, out, err = speclab("generate", "--model", "toy", "--prompt", "5", "--max-new-tokens",
                               "1", "--no-color")
        self.assertEqual(rc, 0, err)
        self.assertIn("speclab: warning: --n 3 (the default) is too long for the context: this "
                      "run holds at most 2 tokens", err)
        self.assertIn("the drafter proposes nothing in this run; give a smaller --n to draft", err)
        self.assertIn("stats: 1 token, 1 target run, ", err)
        err = self.assert_refused(["generate", "--model", "toy", "--prompt", "5",
                                   "--max-new-tokens", "2", "--context", "3", "--n", "3"], "--n 3")
        self.assertNotIn("(the default)", err)
        # A chat grows turn by turn, and a bench has more than its first prompt: both were held to
        # the first prompt + --max-new-tokens, and refused runs that fit ("at most 3 tokens").
        rc, _, err = speclab("chat", "--model", "toy", "--max-new-tokens", "2", "--n", "5",
                             stdin=b"1\n2 3 4 5 6 7 8\n")
        self.assertEqual(rc, 0, err)
        self.assert_refused(["chat", "--model", "toy", "--context", "64", "--max-new-tokens", "8",
                             "--n", "64"],
                            "--n 64 is too long for the context: this run holds at most 64 "
                            "tokens (the model's limit", stdin=b"1 2 3\n")
        bench = ["bench", "--model", "toy", "--workload", "toy-periodic", "--max-new-tokens",
                 "4", "--repeats", "1", "--csv", "", "--json", "", "--no-progress"]
        rc, _, err = speclab(*bench, "--n", "12")
        self.assertEqual(rc, 0, err)
        err = self.assert_refused(bench + ["--n", "500"], "--n 500 is too long for the context: "
                                  "this run holds at most ")
        self.assertIn("the longest conversation of workload toy-periodic", err)

    def test_prompt_plus_new_tokens_past_the_context(self):
        # --context 64 is below what the toy target can hold, so raising it is the way out.
        self.assert_refused(["generate", "--model", "toy", "--context", "64",
                             "--max-new-tokens", "100"], "does not fit the context",
                            "or raise --context")
        # The way out names what the user can shorten: the toy target's own prompt is set by
        # --prompt-len, chat's opening by --system, and a chat with neither has nothing to
        # shorten ("shorten the prompt" pointed at nothing those runs take).
        err = self.assert_refused(["trace", "--model", "toy", "--prompt-len", "4096", "--context",
                                   "100", "--out", "-"], "does not fit the context",
                                  "(lower --prompt-len, lower --max-new-tokens, or raise --context")
        self.assertNotIn("shorten the prompt", err)
        err = self.assert_refused(["chat", "--model", "toy", "--context", "20", "--max-new-tokens",
                                   "4", "--system", " ".join(["7"] * 30)],
                                  "does not fit the context", "(shorten the system message, lower "
                                  "--max-new-tokens, or raise --context", stdin=b"1\n")
        err = self.assert_refused(["chat", "--model", "toy", "--context", "4", "--max-new-tokens",
                                   "8"], "does not fit the context",
                                  "(lower --max-new-tokens, or raise --context", stdin=b"1\n")
        self.assertNotIn("shorten", err)
        # A later message that outgrows the context: the conversation so far is no prompt.
        rc, _, err = speclab("chat", "--model", "toy", "--context", "40", "--max-new-tokens", "4",
                             stdin=b"1 2 3\n" + b"5 " * 40 + b"\n")
        self.assertIn("turn 2: the conversation so far", err)
        self.assertIn("(send a shorter message, lower --max-new-tokens, or raise --context", err)

    def test_unknown_drafter(self):
        for cmd in ("generate", "chat", "bench"):
            self.assert_refused([cmd, "--model", "toy", "--drafter", "magic"],
                                "unknown drafter 'magic'; valid: none, prompt-lookup")

    def test_missing_model(self):
        self.assert_refused(["generate", "--model", "/nonexistent/model.gguf", "--prompt", "hi"],
                            "nor an existing model file")

    def test_truncated_model(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "truncated.gguf"
            cached = os.environ.get("SPECLAB_MODEL") or str(
                Path.home() / ".cache" / "speclab" / "SmolLM2-135M-Instruct.Q4_1.gguf")
            if os.path.isfile(cached):  # the real file, cut short
                with open(cached, "rb") as f:
                    path.write_bytes(f.read(1 << 20))
            else:
                path.write_bytes(b"GGUF\x03\x00\x00\x00")
            self.assert_refused(["generate", "--model", str(path), "--prompt", "hi"],
                                "not a usable GGUF model")

    def test_a_name_in_a_corrupt_model_is_cut_short_in_the_message(self):
        # A corrupt length field makes a key swallow the rest of the file: the message quoted
        # all of it (82 MB of escaped bytes for a SmolLM2 file with its first key's length hit).
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "long_key.gguf"
            key = b"general.architecture" + b"\x01" * 999980
            path.write_bytes(b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, len(key)) + key +
                             struct.pack("<I", 0xFFFFFFFF))
            rc, _, err = speclab("generate", "--model", str(path), "--prompt", "hi")
            self.assertEqual(rc, 2, err[:500])
            self.assertLess(len(err), 1000, err[:500])
            self.assertIn("value type 4294967295 of 'general.architecture\\x01", err)
            self.assertIn("... (1000000 bytes in all)' is unknown", err)

    def test_a_damaged_cached_smollm2_says_how_to_get_a_good_copy(self):
        # --model smollm2 trusts the cached download; when it does not load, the message names
        # tools/fetch_model, which checks the file and fetches it again. A path is the user's own
        # file: no such advice.
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")
            env = {"SPECLAB_CACHE": tmp, "SPECLAB_MODEL": ""}
            for cmd in (["generate", "--prompt", "hi"], ["bench", "--batch", "1"]):
                rc, _, err = speclab(*cmd, "--model", "smollm2", env=env)
                self.assertEqual(rc, 2, err)
                self.assertIn("not a usable GGUF model", err)
                self.assertIn("the cached download is damaged: tools/fetch_model", err)
            rc, _, err = speclab("generate", "--prompt", "hi", "--model",
                                 str(Path(tmp) / "SmolLM2-135M-Instruct.Q4_1.gguf"))
            self.assertEqual(rc, 2, err)
            self.assertNotIn("tools/fetch_model", err)

    def test_no_home_and_no_model_cache_is_named_without_a_traceback(self):
        # With neither HOME nor SPECLAB_CACHE set (cron, env -i), tools/fetch_model's failure
        # message recursed into itself: demo and --model smollm2 printed a 2,000-line Python
        # RecursionError traceback as "its message above".
        env = {k: v for k, v in os.environ.items()
               if k not in ("HOME", "SPECLAB_CACHE", "SPECLAB_MODEL", "LAB_IMPL", "NO_COLOR")}
        for cmd in (["generate", "--model", "smollm2", "--prompt", "hi"],
                    ["demo", "--max-new-tokens", "4"]):
            p = subprocess.run([SPECLAB, *cmd], capture_output=True, env=env, timeout=120)
            err = p.stderr.decode("utf-8", "replace")
            self.assertFalse("Traceback" in err, err[:600])
            self.assertIn("fetch_model: neither SPECLAB_CACHE nor HOME is set", err)
            self.assertEqual(p.returncode, 2 if cmd[0] == "generate" else 0, err)

    def test_prompt_with_invalid_utf8(self):
        self.assert_refused(["generate", "--model", "toy", "--prompt", b"1 2 \xff 3"],
                            "the prompt is not valid UTF-8 (byte 4: 0xFF)")
        self.assert_refused(["chat", "--model", "toy"], "message 1 is not valid UTF-8",
                            stdin=b"1 2 \xc3\n")

    def test_device_cuda_without_a_gpu(self):
        err = self.assert_refused(["generate", "--model", "toy", "--device", "cuda"],
                                  "--device cuda: ")
        if shutil.which("nvidia-smi") is None:
            # cuda_unavailable_reason(): no backend in this build, no driver, or no device.
            self.assertRegex(err, r"--device cuda: .*(CUDA|cuda|GPU|device|driver)")
        # Refused (for want of a GPU, or because the toy target runs on the CPU only), so
        # --device is not also called idle: with a GPU both used to be printed.
        self.assertNotIn("--device has no effect", err)

    def test_a_missing_cuda_backend_is_named(self):
        # speclab loads the CUDA backend as a plugin when asked for --device cuda; a plugin that
        # is not there must give the reason, not a failed start (SPECLAB_CUDA_BACKEND overrides
        # where it is looked for). A build without CUDA says that instead.
        rc, _, err = speclab("generate", "--model", "toy", "--device", "cuda",
                             env={"SPECLAB_CUDA_BACKEND": "/nonexistent/libcuda_backend.so"})
        self.assertEqual(rc, 2, err)
        if cuda_plugin_built():
            self.assertIn("the CUDA backend library was not found (looked for "
                          "/nonexistent/libcuda_backend.so (missing))", err)
        else:
            self.assertIn("this build of SpecLab has no CUDA backend", err)

    def test_bad_flag_values(self):
        self.assert_refused(["generate", "--model", "toy", "--prompt", "1 two"], "'two' is not one")
        self.assert_refused(["generate", "--device", "tpu"], "--device")
        self.assert_refused(["bench", "--model", "toy", "--workload", "nope"],
                            "toy-periodic, toy-markov and toy-random")
        self.assert_refused(["chat", "--model", "toy"], "no message on standard input", stdin=b"")
        self.assert_refused(["generate", "--model", "toy", "--drafter", "auto", "--auto-inner",
                             "auto"], "--auto-inner")
        self.assert_refused(["generate", "--model", "toy", "--drafter", "ngram", "--n", "1"],
                            "--drafter ngram: --n 1 is too small")

    def test_a_drafter_option_out_of_its_range_is_named_by_its_flag(self):
        # The drafters' own errors named their config fields ("max_matching_ngram_size (k)"),
        # and a drafter steered by auto was named instead of --drafter auto.
        for args, needles in [
                (["--drafter", "pool", "--n", "65"],
                 ["--drafter pool: --n 65 is too large", "[1, 64]"]),
                (["--drafter", "auto", "--auto-inner", "ngram", "--n", "1"],
                 ["--drafter auto --auto-inner ngram: --n 1 is too small"]),
                (["--drafter", "nasd", "--n", "3", "--min-context", "3"],
                 ["--drafter nasd: --min-context 3 is too large", "n - 1 = 2"]),
                (["--drafter", "sa+ngram", "--n", "1"], ["--drafter sa+ngram: --n 1 is too small"]),
        ]:
            err = self.assert_refused(["generate", "--model", "toy", "--max-new-tokens", "100",
                                       *args], *needles)
            self.assertNotIn("Config", err)
            self.assertNotIn("NGramStorage", err)

    def test_an_unknown_subcommand_is_named(self):
        for word in ("genrate", "foo"):
            self.assert_refused([word, "--model", "toy"], f"unknown subcommand '{word}'",
                                "demo, generate, chat, bench, trace")

    def test_an_option_before_the_subcommand_is_named(self):
        # CLI11 said only "A subcommand is required", naming neither the option nor the rule.
        for args in (["--bogus"], ["--model", "toy", "generate"], ["-x", "demo"]):
            self.assert_refused(args, f"unknown option '{args[0]}'",
                                "before the subcommand (demo, generate, chat, bench, trace)")
        for args in (["--help"], ["-h"], ["--version"]):
            rc, out, err = speclab(*args)
            self.assertEqual(rc, 0, err)
            self.assertTrue(out)

    def test_an_unknown_option_of_a_subcommand_is_named(self):
        # CLI11 said "The following arguments were not expected: 5 --K": the words backwards,
        # and never that --K is not an option of generate.
        for args, needles in (
                (["generate", "--K", "5"], ["unknown option '--K' for speclab generate",
                                            "did you mean --k?"]),
                (["generate", "--max_new_tokens=5"],
                 ["unknown option '--max_new_tokens' for speclab generate",
                  "did you mean --max-new-tokens?"]),
                (["chat", "--prompt", "hi"], ["unknown option '--prompt' for speclab chat",
                                              "speclab chat --help lists its options"]),
                (["bench", "--bogus"], ["unknown option '--bogus' for speclab bench"]),
                (["generate", "--max-new-tokens", "4", "foo", "bar"],
                 ["unexpected argument 'foo': speclab generate takes options only"]),
                (["generate", "--", "--k", "5"],  # after "--" every word is an argument
                 ["unexpected argument '--k': speclab generate takes options only"])):
            err = self.assert_refused(args, *needles)
            self.assertNotIn("not expected", err)

    def test_an_option_given_twice_is_named(self):
        # CLI11 said "--k: At Most 1 required but received 2".
        for args, needle in ((["generate", "--k", "1", "--k", "2"], "--k is given 2 times"),
                             (["trace", "--out", "a", "--out", "b", "--out", "c"],
                              "--out is given 3 times"),
                             (["bench", "--csv", "a.csv", "--csv", "b.csv"],
                              "--csv is given 2 times")):
            err = self.assert_refused(args, needle, "give it once")
            self.assertNotIn("At Most", err)
        # A list flag may still be given more than once.
        rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic", "--workload",
                             "toy-markov", "--prompts", "1", "--repeats", "1", "--drafter", "sa",
                             "--max-new-tokens", "4", "--csv", "", "--json", "", "--no-progress")
        self.assertEqual(rc, 0, err)

    def test_a_nul_byte_in_the_input_is_shown_not_cut_short(self):
        # The message was printed as a C string: it stopped at the NUL, before "is not one".
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "nul.txt")
            Path(path).write_bytes(b"1 2\x00 3")
            self.assert_refused(["generate", "--model", "toy", "--prompt-file", path],
                                "'2\\x00' is not one")
        self.assert_refused(["chat", "--model", "toy"], "'4\\x00' is not one",
                            stdin=b"3 4\x00\n")

    def test_a_prompt_file_too_large_for_any_context_is_refused_unread(self):
        # It was read whole: /dev/zero ran out of memory (std::bad_alloc) or filled the RAM.
        with tempfile.TemporaryDirectory() as tmp:
            big = os.path.join(tmp, "big.txt")
            with open(big, "wb") as f:
                f.truncate(17 << 20)  # sparse: no disk used
            self.assert_refused(["generate", "--model", "toy", "--prompt-file", big],
                                f"--prompt-file '{big}' holds more than 16 MiB")
        self.assert_refused(["generate", "--model", "toy", "--prompt-file", "/dev/zero"],
                            "--prompt-file '/dev/zero' holds more than 16 MiB")
        self.assert_refused(["generate", "--model", "toy", "--prompt-file", "-"],
                            "--prompt-file '-' holds more than 16 MiB",
                            stdin=b"1 " * (9 << 20))
        self.assert_refused(["chat", "--model", "toy"], "a message of more than 16 MiB",
                            stdin=b"1 " * (9 << 20))

    def test_system_on_the_toy_target_names_system_when_it_is_not_token_ids(self):
        self.assert_refused(["chat", "--model", "toy", "--system", "hi"],
                            "--system: the toy target reads token ids", stdin=b"1 2 3\n")

    def test_a_bad_toy_workload_names_the_workload(self):
        for name in ("toy-foo", "toy-periodic "):
            err = self.assert_refused(["bench", "--model", "toy", "--workload", name, "--csv", "",
                                       "--json", ""], f"workload '{name}'",
                                      "toy-periodic, toy-markov and toy-random")
            self.assertNotIn("--regime", err)

    def test_a_refused_bench_leaves_no_folder_behind(self):
        # The output paths' folders were created when the paths were checked, before the other
        # checks: a refused run left out/ (the default --csv's folder) and the like behind.
        with tempfile.TemporaryDirectory() as tmp:
            for args, needle in [
                    (["--workload", "nope"], "workload 'nope'"),
                    (["--batch", "2", "--csv", "d2/b.csv", "--json", "d3/b.json"],
                     "--batch needs a real model"),
                    (["--csv", "newdir/", "--json", ""], "--csv 'newdir/' names a folder"),
                    (["--csv", "a.csv", "--json", "a.csv/"], "--json 'a.csv/' names a folder"),
                    (["--csv", "x/y/z.csv", "--json", "", "--k", "0"], "--k")]:
                self.assert_refused(["bench", "--model", "toy", "--repeats", "1", *args], needle,
                                    cwd=tmp)
                self.assertEqual(os.listdir(tmp), [], f"bench {args} left files behind")
            # A run that goes ahead creates the folders when it writes.
            rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                 "--drafter", "sa", "--repeats", "1", "--max-new-tokens", "8",
                                 "--csv", "new/b.csv", "--json", "other/deep/b.json", cwd=tmp)
            self.assertEqual(rc, 0, err)
            self.assertTrue(Path(tmp, "new", "b.csv").is_file())
            self.assertTrue(Path(tmp, "other", "deep", "b.json").is_file())

    def test_empty_and_dash_output_paths_say_what_they_mean_here(self):
        # trace's '' failed as "cannot open it for writing"; bench wrote a file named '-'.
        with tempfile.TemporaryDirectory() as tmp:
            self.assert_refused(["trace", "--model", "toy", "--out", ""],
                                "--out '': give a file, or - for standard output", cwd=tmp)
            for flag, other in (("--csv", "--json"), ("--json", "--csv")):
                self.assert_refused(["bench", "--model", "toy", flag, "-", other, ""],
                                    f"{flag} '-': bench prints its table on standard output",
                                    cwd=tmp)
            self.assertEqual(os.listdir(tmp), [])

    def test_a_decimal_flag_takes_decimal_numbers_only(self):
        # std::stod read hex floats: --temperature 0x10 sampled at 16.
        for value in ("0x10", "0x1p3", " 1", "1e"):
            self.assert_refused(["generate", "--model", "toy", "--temperature", value],
                                "--temperature: expected a number")
        for value in ("0x10", " 5", "+-5"):
            self.assert_refused(["generate", "--model", "toy", "--max-new-tokens", value],
                                "--max-new-tokens: expected a whole number")
        # A number too small to hold is named as such: neither "not a number" nor "must be
        # between 0 and 100", which it is.
        self.assert_refused(["generate", "--model", "toy", "--temperature", "1e-400"],
                            "--temperature: got 1e-400, too close to 0 to hold as a number")
        self.assert_refused(["generate", "--model", "toy", "--temperature", "1e400"],
                            "--temperature: must be between 0 and 100")
        rc, _, err = speclab("generate", "--model", "toy", "--temperature", "0.5e1",
                             "--max-new-tokens", "4")
        self.assertEqual(rc, 0, err)

    def test_flag_values_out_of_range(self):
        for args, needle in [
                (["generate", "--max-new-tokens", "0"], "--max-new-tokens: must be between 1 and"),
                (["generate", "--max-new-tokens", "-1"], "--max-new-tokens: must be between 1 and"),
                (["bench", "--max-new-tokens", "0"], "--max-new-tokens: must be between 1 and"),
                (["generate", "--threads", "100000"], "--threads: must be between 0 and"),
                (["generate", "--temperature", "-1"], "--temperature: must be between 0 and 100"),
                (["bench", "--temperature", "-1"], "--temperature: must be between 0 and 100"),
                (["bench", "--repeats", "0"], "--repeats: must be between 1 and 1000"),
                (["generate", "--n", "0"], "--n: must be between"),
                (["generate", "--sa-draft-ratio", "-1"],
                 "--sa-draft-ratio: must be between 0 and 64"),
                (["bench", "--sa-draft-ratio", "65"], "--sa-draft-ratio: must be between 0 and 64"),
                (["demo", "--model", "bogus"], "--model"),
                (["generate", "--bogus"], "--bogus"),
                ([], "A subcommand is required")]:
            self.assert_refused(args, needle)

    def test_an_input_file_that_cannot_be_opened_says_why(self):
        # A link that points at itself cannot be opened even by root: the message gives the
        # system's reason, as output files' messages do (it said only "cannot open it").
        with tempfile.TemporaryDirectory() as tmp:
            loop = os.path.join(tmp, "loop")
            os.symlink(loop, loop)
            self.assert_refused(["generate", "--model", "toy", "--prompt-file", loop],
                                f"--prompt-file '{loop}': cannot open it for reading (Too many "
                                "levels of symbolic links)")
            self.assert_refused(["bench", "--model", "toy", "--workload", loop, "--csv", "",
                                 "--json", ""], "(Too many levels of symbolic links)")

    def test_a_folder_where_a_file_is_expected(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assert_refused(["generate", "--model", "toy", "--prompt-file", tmp],
                                f"--prompt-file '{tmp}' is a directory")
            self.assert_refused(["bench", "--model", "toy", "--workload", tmp, "--csv", "",
                                 "--json", ""], f"workload '{tmp}' is a directory")

    def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            blocker = os.path.join(tmp, "a-file")
            open(blocker, "w").close()
            under_a_file = os.path.join(blocker, "bench.json")
            for args, needles in [
                (["--csv", tmp, "--json", ""], [f"--csv '{tmp}' is a directory, not a file"]),
                (["--csv", "", "--json", under_a_file], [f"--json '{under_a_file}'", "cannot"]),
                # Batched mode writes JSON too, and checks it as early.
                (["--batch", "2", "--csv", "", "--json", under_a_file],
                 [f"--json '{under_a_file}'", "cannot"]),
            ]:
                cmd = ["bench", "--model", "toy", "--repeats", "1", "--max-new-tokens", "8", *args]
                self.assert_refused(cmd, *needles)
                rc, out, err = speclab(*cmd)
                self.assertNotIn("speedup", out, "the bench ran before checking its output files")
            self.assert_refused(["trace", "--model", "toy", "--out", tmp],
                                f"--out '{tmp}' is a directory, not a file")
            self.assertEqual(sorted(os.listdir(tmp)), ["a-file"], "a refused run left files behind")

    def test_tokens_file_is_checked_like_the_other_outputs(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = ["bench", "--model", "toy", "--repeats", "1", "--max-new-tokens", "8",
                    "--prompts", "1"]
            self.assert_refused([*base, "--json", "r.out", "--tokens", "./r.out"],
                                "--json 'r.out' and --tokens './r.out' are the same file", cwd=tmp)
            self.assert_refused([*base, "--tokens", "-"], "--tokens '-'", cwd=tmp)
            self.assert_refused([*base, "--tokens", tmp], f"--tokens '{tmp}' is a directory",
                                cwd=tmp)
            self.assert_refused(["bench", "--model", "toy", "--batch", "2", "--tokens", "t.jsonl"],
                                "--tokens", "batched mode", cwd=tmp)
            self.assertEqual(os.listdir(tmp), [], "a refused run left files behind")

    def test_csv_and_json_naming_one_file_are_refused_before_the_run(self):
        # The JSON used to overwrite the CSV, and bench said "wrote X and X". However the two
        # paths are spelled, in the main mode and in batched mode.
        with tempfile.TemporaryDirectory() as tmp:
            same = os.path.join(tmp, "r.out")
            for csv_path, json_path in [("r.out", "r.out"), ("r.out", "./r.out"), ("r.out", same),
                                        ("sub/../r.out", "r.out")]:
                for extra in ([], ["--batch", "2"]):
                    cmd = ["bench", "--model", "toy", "--repeats", "1", "--max-new-tokens", "8",
                           "--prompts", "1", *extra, "--csv", csv_path, "--json", json_path]
                    self.assert_refused(cmd, f"--csv '{csv_path}' and --json '{json_path}' are "
                                        "the same file", cwd=tmp)
                    _, out, _ = speclab(*cmd, cwd=tmp)
                    self.assertNotIn("speedup", out, "the bench ran before checking its outputs")
            self.assertEqual(os.listdir(tmp), [], "a refused run left files behind")
            # A link to the other file is the same file too, and the file is left alone.
            Path(same).write_text("kept\n")
            os.symlink(same, os.path.join(tmp, "link"))
            self.assert_refused(["bench", "--model", "toy", "--csv", "r.out", "--json", "link"],
                                "are the same file", cwd=tmp)
            self.assertEqual(Path(same).read_text(), "kept\n")

    def test_an_output_inside_another_output_is_refused_before_the_run(self):
        # Neither path existed, so each passed its own check; the bench ran, then the second
        # write made a folder where the first file had to go (or the reverse), and the run
        # failed with nothing written (exit 1, or 2 after the whole run) and a folder left.
        with tempfile.TemporaryDirectory() as tmp:
            for csv_path, json_path, tokens, inner, outer in [
                    ("o/r.csv", "o/r.csv/r.json", "", "--json 'o/r.csv/r.json'", "--csv 'o/r.csv'"),
                    ("o/x/r.csv", "o/x", "", "--csv 'o/x/r.csv'", "--json 'o/x'"),
                    ("o/r.csv", "o/r.json", "./o/r.json/../r.json/t.jsonl",
                     "--tokens './o/r.json/../r.json/t.jsonl'", "--json 'o/r.json'")]:
                cmd = ["bench", "--model", "toy", "--repeats", "1", "--max-new-tokens", "8",
                       "--prompts", "1", "--drafter", "sa", "--csv", csv_path, "--json",
                       json_path, "--tokens", tokens]
                self.assert_refused(cmd, f"{inner} lies inside {outer}, which names a file",
                                    cwd=tmp)
                _, out, _ = speclab(*cmd, cwd=tmp)
                self.assertNotIn("speedup", out, "the bench ran before checking its outputs")
                self.assertEqual(os.listdir(tmp), [], "a refused run left a folder behind")
            # A file beside another whose name starts the same is not inside it.
            rc, _, err = speclab("bench", "--model", "toy", "--repeats", "1", "--max-new-tokens",
                                 "8", "--prompts", "1", "--drafter", "sa", "--csv", "o/r",
                                 "--json", "o/r.json", cwd=tmp)
            self.assertEqual(rc, 0, err)
            self.assertEqual(sorted(os.listdir(os.path.join(tmp, "o"))), ["r", "r.json"])

    def test_an_empty_value_after_equals_is_that_empty_value(self):
        # CLI11 read "--csv=" as a flag with no value and took the next word for it: "--csv=
        # --json=" wrote the CSV to a file named "--json=" and the JSON to the default path, and
        # "trace --out= --raw" wrote to a file named "--raw" and lost the flag.
        with tempfile.TemporaryDirectory() as tmp:
            rc, out, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                   "--drafter", "sa", "--repeats", "1", "--max-new-tokens", "8",
                                   "--csv=", "--json=", cwd=tmp)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("bench: wrote", err)
            self.assertEqual(os.listdir(tmp), [], "'--csv= --json=' wrote files")
            self.assert_refused(["trace", "--model", "toy", "--out=", "--raw"],
                                "--out '': give a file", cwd=tmp)
            self.assert_refused(["bench", "--model", "toy", "--k=", "--csv", "", "--json", ""],
                                "--k")
            self.assertEqual(os.listdir(tmp), [], "a refused run left files behind")

    def test_a_flag_that_takes_no_value_given_an_empty_one_is_named(self):
        # "--no-color=" said "The following argument was not expected: " and named nothing.
        for args, flag in ((["generate", "--model", "toy", "--no-color="], "--no-color"),
                           (["bench", "--model", "toy", "--no-progress="], "--no-progress"),
                           (["trace", "--model", "toy", "--raw="], "--raw")):
            self.assert_refused(args, f"{flag} takes no value, got '{flag}='")

    def test_an_output_that_is_one_of_the_inputs_is_refused_before_the_run(self):
        # bench --csv over its own workload file, or trace --out over its prompt file, replaced
        # the input with the results, and said it had written them.
        with tempfile.TemporaryDirectory() as tmp:
            prompt = Path(tmp, "p.txt")
            prompt.write_text("1 2 3 1 2 3\n")
            err = self.assert_refused(["trace", "--model", "toy", "--prompt-file", "p.txt",
                                       "--out", "./p.txt"],
                                      "--out './p.txt' is the input --prompt-file 'p.txt'", cwd=tmp)
            workload = Path(tmp, "w.jsonl")
            shutil.copy(ROOT / "data" / "workloads" / "rag.jsonl", workload)
            model = Path(tmp, "m.gguf")
            model.write_bytes(b"not a model")
            # Checked before the model is read: the error is the overwrite, not the bad model.
            self.assert_refused(["bench", "--model", "m.gguf", "--workload", "w.jsonl",
                                 "--csv", "w.jsonl", "--json", ""],
                                "--csv 'w.jsonl' is the input workload 'w.jsonl'", cwd=tmp)
            self.assert_refused(["bench", "--model", "m.gguf", "--workload", "w.jsonl",
                                 "--csv", "", "--json", "m.gguf"],
                                "--json 'm.gguf' is the input --model 'm.gguf'", cwd=tmp)
            self.assert_refused(["trace", "--model", "m.gguf", "--prompt", "hi", "--out",
                                 "m.gguf"], "--out 'm.gguf' is the input --model 'm.gguf'",
                                cwd=tmp)
            self.assertEqual(prompt.read_text(), "1 2 3 1 2 3\n")
            self.assertEqual(model.read_bytes(), b"not a model")
            self.assertEqual(workload.read_bytes(),
                             (ROOT / "data" / "workloads" / "rag.jsonl").read_bytes())

    def test_an_output_over_the_smollm2_file_is_refused_before_the_run(self):
        # --model smollm2 names the cached download (or SPECLAB_MODEL's file): an output there
        # replaced the 98 MB model with the results, and the run exited 0.
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp, "cache")
            cache.mkdir()
            model = cache / "SmolLM2-135M-Instruct.Q4_1.gguf"
            model.write_bytes(b"stands in for the model")
            workload = Path(tmp, "w.jsonl")
            shutil.copy(ROOT / "data" / "workloads" / "rag.jsonl", workload)
            own = Path(tmp, "own.gguf")
            own.write_bytes(b"the user's own model")
            cached = {"SPECLAB_CACHE": str(cache), "SPECLAB_MODEL": ""}

            def bench(flag, path, env):
                outputs = {"--csv": "", "--json": "", flag: str(path)}
                return speclab("bench", "--model", "smollm2", "--workload", str(workload),
                               *[x for kv in outputs.items() for x in kv], env=env)

            for flag in ("--csv", "--json", "--tokens"):
                rc, _, err = bench(flag, model, cached)
                self.assertEqual(rc, 2, err)
                self.assertIn(f"{flag} '{model}' is the input --model", err)
            rc, _, err = speclab("trace", "--model", "smollm2", "--prompt", "hi", "--out",
                                 str(model), env=cached)
            self.assertEqual(rc, 2, err)
            self.assertIn(f"--out '{model}' is the input --model", err)
            rc, _, err = bench("--json", own, {"SPECLAB_MODEL": str(own)})
            self.assertEqual(rc, 2, err)
            self.assertIn(f"--json '{own}' is the input --model", err)
            self.assertEqual(model.read_bytes(), b"stands in for the model")
            self.assertEqual(own.read_bytes(), b"the user's own model")
            # Not cached yet: the download would land there, and the results over it.
            model.unlink()
            rc, _, err = bench("--csv", model, cached)
            self.assertEqual(rc, 2, err)
            self.assertIn(f"--csv '{model}' is the input --model", err)
            self.assertFalse(model.exists())

    def test_a_link_to_a_file_not_yet_written_is_that_file(self):
        # y.json -> x.csv, with x.csv not there yet: the JSON used to land in x.csv, over the CSV.
        with tempfile.TemporaryDirectory() as tmp:
            os.symlink("x.csv", os.path.join(tmp, "y.json"))
            self.assert_refused(["bench", "--model", "toy", "--csv", "x.csv", "--json", "y.json"],
                                "--csv 'x.csv' and --json 'y.json' are the same file", cwd=tmp)
            self.assertEqual(sorted(os.listdir(tmp)), ["y.json"])

    def test_a_folder_where_no_file_can_be_created_is_refused_before_the_run(self):
        # /proc takes no new files, even from root (whom access() lets write anywhere): the bench
        # ran to the end and then lost its results.
        if not os.path.isdir("/proc/self"):
            self.skipTest("no /proc on this system")
        cmd = ["bench", "--model", "toy", "--workload", "toy-periodic", "--drafter", "sa",
               "--repeats", "1", "--max-new-tokens", "8", "--csv", "/proc/speclab.csv",
               "--json", ""]
        self.assert_refused(cmd, "--csv '/proc/speclab.csv': cannot create it in '/proc'")
        _, out, _ = speclab(*cmd)
        self.assertNotIn("speedup", out, "the bench ran before checking its output files")
        err = self.assert_refused(["trace", "--model", "toy", "--out", "/proc/speclab.jsonl"],
                                  "--out '/proc/speclab.jsonl': cannot create it in '/proc'")
        self.assertNotIn("partial", err)

    def test_all_listed_with_other_drafters_is_named(self):
        # It was called an unknown drafter, though --help offers it.
        for drafters in (["--drafter", "all", "--drafter", "sa"], ["--drafter", "sa,all"]):
            self.assert_refused(["bench", "--model", "toy", *drafters],
                                "--drafter: 'all' stands for every drafter on its own")

    def test_an_unknown_auto_inner_is_refused_even_without_auto(self):
        # Without --drafter auto it only drew "has no effect", and the typo went unnoticed.
        for drafter in ("auto", "sa"):
            err = self.assert_refused(["generate", "--model", "toy", "--drafter", drafter,
                                       "--auto-inner", "bogus"],
                                      "--auto-inner: unknown drafter 'bogus'; valid: "
                                      "prompt-lookup, ngram, ")
            # none and auto are refused as --auto-inner: the list must not offer them.
            self.assertNotIn("none", err)
            self.assertNotIn(", auto", err)

    def test_one_workload_by_name_and_by_path_is_named_twice(self):
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "m.gguf").write_bytes(b"not a model")
            path = str(ROOT / "data" / "workloads" / "two_turn.jsonl")
            self.assert_refused(["bench", "--model", "m.gguf", "--workload", f"two_turn,{path}",
                                 "--csv", "", "--json", ""],
                                f"--workload names one file twice, as 'two_turn' and '{path}'",
                                cwd=tmp)

    def test_a_folder_as_standard_input_is_named(self):
        # `< folder` read as empty input: "the prompt is empty", "no message on standard input".
        with tempfile.TemporaryDirectory() as tmp:
            for args, needle in ((["generate", "--prompt-file", "-"],
                                  "--prompt-file '-': standard input is a directory"),
                                 (["chat"], "chat: standard input is a directory")):
                fd = os.open(tmp, os.O_RDONLY)
                try:
                    p = subprocess.run([SPECLAB, *args, "--model", "toy"], stdin=fd,
                                       capture_output=True, text=True, timeout=60,
                                       env={k: v for k, v in os.environ.items()
                                            if k != "LAB_IMPL"})
                finally:
                    os.close(fd)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(needle, p.stderr)

    def test_a_closed_standard_input_is_named(self):
        # `<&-` read as empty input: "the prompt is empty", "no message on standard input".
        for args, needle in ((["generate", "--prompt-file", "-"],
                              "--prompt-file '-': standard input is closed"),
                             (["chat"], "chat: standard input is closed")):
            p = subprocess.run([SPECLAB, *args, "--model", "toy"], preexec_fn=lambda: os.close(0),
                               capture_output=True, text=True, timeout=60,
                               env={k: v for k, v in os.environ.items() if k != "LAB_IMPL"})
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(needle, p.stderr)

    def test_demo_with_more_threads_than_cores_is_refused_not_a_fallback(self):
        # It fell back to the toy target, saying "SmolLM2 is not available: --threads 64 ...".
        cores = os.cpu_count() or 1
        err = self.assert_refused(["demo", "--threads", str(cores + 1)],
                                  f"--threads {cores + 1} is more than the {cores} cores")
        self.assertNotIn("not available", err)

    def test_a_prompt_that_does_not_fit_is_blamed_before_n(self):
        # A 4-token prompt in a 3-token context was reported as "--n 3 is too long".
        err = self.assert_refused(["generate", "--model", "toy", "--prompt", "1 2 3 4",
                                   "--context", "3"], "does not fit the context")
        self.assertNotIn("--n", err)

    def test_an_empty_prompt_file_name_is_named(self):
        self.assert_refused(["generate", "--model", "toy", "--prompt-file", ""],
                            "--prompt-file '': give a file name, or - for standard input")

    def test_a_workload_name_that_is_a_folder_here_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "wl"))
            Path(tmp, "m.gguf").write_bytes(b"not a model")
            self.assert_refused(["bench", "--model", "m.gguf", "--workload", "wl", "--csv", "",
                                 "--json", ""], "unknown workload 'wl'",
                                "'wl' here is a folder", cwd=tmp)

    def test_a_bench_whose_prompts_alone_outgrow_the_context_does_not_suggest_fewer_tokens(self):
        # The toy's built-in prompts hold about 40 tokens: fewer new tokens cannot make them fit.
        err = self.assert_refused(["bench", "--model", "toy", "--workload", "toy-periodic",
                                   "--context", "20", "--max-new-tokens", "4", "--csv", "",
                                   "--json", ""], "do not fit the context",
                                  "its prompts alone hold")
        self.assertNotIn("lower --max-new-tokens", err)

    def test_a_seed_outside_0_to_2_to_the_64_minus_1_is_refused(self):
        # -1 used to wrap to 18446744073709551615 and 2^64 to be clamped, both without a word.
        for cmd in (["generate"], ["chat"], ["bench"], ["trace", "--out", "-"], ["demo"]):
            for seed in ("-1", "18446744073709551616", "99999999999999999999999"):
                self.assert_refused([*cmd, "--model", "toy", "--seed", seed],
                                    "--seed: must be in [0, 2^64-1] (0 to 18446744073709551615",
                                    f"got {seed}", stdin=b"")
            self.assert_refused([*cmd, "--model", "toy", "--seed", "0x10"],
                                "--seed: expected a whole number in [0, 2^64-1]", stdin=b"")
        rc, _, err = speclab("generate", "--model", "toy", "--seed", "18446744073709551615",
                             "--max-new-tokens", "4")
        self.assertEqual(rc, 0, err)
        self.assertIn("seed=18446744073709551615", err)
    def test_an_output_file_whose_writes_fail_fails_the_run(self):
        # /dev/full opens for writing, so the check before the run passes, but every write to it
        # fails (ENOSPC), as on a full disk. bench used to test the stream before closing it, so
        # the buffered rows were lost without a word: "bench: wrote /dev/full" and exit 0.
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full on this system")
        for flag, other in (("--csv", "--json"), ("--json", "--csv")):
            rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                 "--drafter", "sa", "--repeats", "1", "--max-new-tokens", "16",
                                 flag, "/dev/full", other, "")
            self.assertEqual(rc, 1, f"bench {flag} /dev/full: exit {rc}; stderr: {err}")
            self.assertIn("writing '/dev/full' failed", err)
            self.assertNotIn("bench: wrote", err)

    def test_a_failed_write_leaves_no_folder_it_made(self):
        # The folders of an output are made when it is written. When another output then failed,
        # the files went but their new folders stayed: "a refused run leaves nothing behind".
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full on this system")
        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "kept").mkdir()
            for csv in (Path(tmp, "new", "deeper", "b.csv"), Path(tmp, "kept", "b.csv")):
                rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                     "--drafter", "sa", "--repeats", "1", "--max-new-tokens", "16",
                                     "--csv", str(csv), "--json", "/dev/full")
                self.assertEqual(rc, 1, err)
                self.assertIn("writing '/dev/full' failed", err)
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), ["kept"],
                             "the folders made for --csv were left behind")
            self.assertEqual(list(Path(tmp, "kept").iterdir()), [],
                             "a folder that was there before must stay, and empty")

    def test_a_failed_write_leaves_every_output_as_it_was(self):
        # bench wrote its files one after another, each cut to nothing first: a write that failed
        # left an empty or half-written file, and the files written before it new while the rest
        # were old. Each is now written beside its name and renamed over it once all are written.
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full on this system")
        with tempfile.TemporaryDirectory() as tmp:
            files = {"--csv": Path(tmp, "b.csv"), "--json": Path(tmp, "b.json"),
                     "--tokens": Path(tmp, "t.jsonl")}
            for failing in files:
                for path in files.values():
                    path.write_text("earlier results\n")
                outputs = [x for flag, path in files.items()
                           for x in (flag, "/dev/full" if flag == failing else str(path))]
                rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                     "--drafter", "sa", "--repeats", "1", "--max-new-tokens",
                                     "16", *outputs)
                self.assertEqual(rc, 1, f"{failing} /dev/full: {err}")
                self.assertIn("writing '/dev/full' failed", err)
                for flag, path in files.items():
                    if flag != failing:
                        self.assertEqual(path.read_text(), "earlier results\n",
                                         f"{flag} was replaced though {failing} failed")
                self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()),
                                 ["b.csv", "b.json", "t.jsonl"], "a scratch file was left")

    def test_a_standard_output_whose_writes_fail_fails_the_run(self):
        # The text, the table or the answers were lost: the run must not report success.
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full on this system")
        runs = (["generate", "--model", "toy", "--max-new-tokens", "64"],
                ["chat", "--model", "toy", "--max-new-tokens", "16"],
                ["bench", "--model", "toy", "--workload", "toy-periodic", "--drafter", "sa",
                 "--repeats", "1", "--max-new-tokens", "16", "--csv", "", "--json", ""])
        env = {k: v for k, v in os.environ.items() if k != "LAB_IMPL"}
        # With its files written (each write since the table's succeeded, and errno with it).
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        runs += (runs[-1][:-4] + ["--csv", os.path.join(tmp, "b.csv"), "--json",
                                  os.path.join(tmp, "b.json")],)
        for args in runs:
            with open("/dev/full", "wb") as full:
                p = subprocess.run([SPECLAB, *args], input=b"1 2 3\n", stdout=full,
                                   stderr=subprocess.PIPE, env=env, timeout=120)
            err = p.stderr.decode("utf-8", "replace")
            self.assertEqual(p.returncode, 1, f"speclab {' '.join(args)} > /dev/full: exit "
                             f"{p.returncode}; stderr: {err}")
            self.assertIn("speclab: error: writing to the standard output failed", err)
            self.assertNotIn("Success", err)  # no errno to name is no "(Success)"
        for args in (["--help"], ["bench", "--help"], ["--version"]):  # they exited 0
            with open("/dev/full", "wb") as full:
                p = subprocess.run([SPECLAB, *args], stdout=full, stderr=subprocess.PIPE,
                                   env=env, timeout=60)
            self.assertEqual(p.returncode, 1, f"speclab {' '.join(args)} > /dev/full")
            self.assertIn(b"writing to the standard output failed", p.stderr)


    def test_a_missing_workload_file_is_named(self):
        self.assert_refused(["bench", "--model", "toy", "--workload", "/nonexistent/w.jsonl",
                             "--csv", "", "--json", ""], "'/nonexistent/w.jsonl': no such file")

    def test_a_workload_line_past_16_mib_is_refused_unread(self):
        # /dev/zero is one endless line: it was read into memory until that ran out (4 GB and
        # more), and a failed allocation read as "holds no conversation".
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp, "m.gguf")  # read after the workloads: never reached
            model.write_bytes(b"not a model")
            big = Path(tmp, "big.jsonl")
            big.write_text('{"id": "a", "turns": ["hi"]}\n' + "x" * (17 << 20) + "\n")
            for workload, line in (("/dev/zero", 1), (str(big), 2)):
                if os.path.exists(workload):
                    self.assert_refused(["bench", "--model", str(model), "--workload", workload,
                                         "--csv", "", "--json", ""],
                                        f"{workload}:{line}: a line of more than 16 MiB")

    def test_a_workload_field_given_twice_is_refused(self):
        # JSON allows a key twice and the parser kept the last value: a line with "turns" twice
        # lost its first turns without a word, which the refusal of unknown fields is there to
        # prevent. A "note" that is not a string was taken too, though the format says string.
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp, "m.gguf")  # read after the workloads: never reached
            model.write_bytes(b"not a model")
            for line, needle in (
                    ('{"id": "a", "turns": ["q1", "q2"], "turns": ["q3"]}',
                     'the field "turns" appears twice'),
                    ('{"id": "a", "id": "b", "turns": ["q"]}', 'the field "id" appears twice'),
                    ('{"id": "a", "turns": ["q"], "note": 5}', '"note" must be a string')):
                path = Path(tmp, "w.jsonl")
                path.write_text('{"id": "ok", "turns": ["fine"], "note": "x"}\n' + line + "\n")
                self.assert_refused(["bench", "--model", str(model), "--workload", str(path),
                                     "--csv", "", "--json", ""], f"{path}:2: ", needle)

    def test_bad_lab_impl(self):
        rc, _, err = speclab("--help", env={"LAB_IMPL": "solutions"})
        self.assertEqual(rc, 2)
        self.assertIn("LAB_IMPL='solutions' is not valid; valid values: solution", err)
        self.assertIn("starter", err)
        # Set but empty (`LAB_IMPL= speclab ...`) is the default, as for ctest: the solutions.
        rc, out, err = speclab("--help", env={"LAB_IMPL": ""})
        self.assertEqual(rc, 0, err)
        self.assertIn("LAB_IMPL=solution", out)


class Help(unittest.TestCase):
    def test_every_subcommand_has_help_naming_the_implementation(self):
        rc, out, _ = speclab("--help")
        self.assertEqual(rc, 0)
        self.assertIn("LAB_IMPL=solution", out)
        for cmd in ("demo", "generate", "chat", "bench"):
            self.assertIn(cmd, out)
            rc, sub, err = speclab(cmd, "--help")
            self.assertEqual(rc, 0, err)
            self.assertIn(f"Usage: speclab {cmd}", sub)
            self.assertIn("LAB_IMPL=solution", sub)

    def test_common_flags_are_on_every_decoding_subcommand(self):
        for cmd in ("generate", "chat", "bench"):
            _, sub, _ = speclab(cmd, "--help")
            for flag in ("--model", "--device", "--threads", "--drafter", "--k", "--n",
                         "--temperature", "--seed", "--max-new-tokens"):
                self.assertIn(flag, sub, f"speclab {cmd} --help")


class Generate(unittest.TestCase):
    def test_plain_text_and_a_stats_line_when_not_on_a_terminal(self):
        rc, out, err = speclab("generate", "--model", "toy", "--max-new-tokens", "40")
        self.assertEqual(rc, 0, err)
        tokens = out.split()
        self.assertEqual(len(tokens), 40)
        self.assertTrue(all(t.isdigit() for t in tokens))
        self.assertNotIn(ESC, out)
        stats = [l for l in err.splitlines() if l.startswith("stats: ")]
        self.assertEqual(len(stats), 1, err)
        for part in ("40 tokens", "target runs", "tokens/run", "acceptance", "draft", "verify",
                     "other", "tokens/s"):
            self.assertIn(part, stats[0])

    def test_one_token_and_one_run_are_counted_in_the_singular(self):
        # "stats: 1 tokens, 1 target runs", and "the prompt (1 tokens)" in a refusal.
        rc, _, err = speclab("generate", "--model", "toy", "--prompt", "5", "--max-new-tokens",
                             "1", "--n", "1", "--no-color")
        self.assertEqual(rc, 0, err)
        self.assertIn("stats: 1 token, 1 target run, 1.00 tokens/run", err)
        rc, _, err = speclab("trace", "--model", "toy", "--prompt", "5", "--max-new-tokens", "1",
                             "--n", "1", "--out", "-")
        self.assertEqual(rc, 0, err)
        self.assertIn(", k=5: 1 token, 1 target run, 1.00 tokens/run", err)
        self.assertIn("the prompt (1 token) + --max-new-tokens 8 does not fit the context",
                      self.refused("generate", "--model", "toy", "--prompt", "5",
                                   "--max-new-tokens", "8", "--context", "4"))
        self.assertIn("n - 1 = 1 token\n",
                      self.refused("generate", "--model", "toy", "--prompt", "5", "--drafter",
                                   "ngram", "--n", "2", "--min-context", "2"))

    def refused(self, *args):
        rc, _, err = speclab(*args)
        self.assertEqual(rc, 2, err)
        return err

    def test_every_drafter_gives_the_plain_decoding_output(self):
        _, base, _ = speclab("generate", "--model", "toy", "--regime", "markov", "--drafter", "none",
                             "--max-new-tokens", "120")
        for drafter in ALL_DRAFTERS:
            for k in ("1", "4"):
                rc, out, err = speclab("generate", "--model", "toy", "--regime", "markov",
                                       "--drafter", drafter, "--k", k, "--max-new-tokens", "120")
                self.assertEqual(rc, 0, err)
                self.assertEqual(out, base, f"{drafter} k={k}")

    def test_sampled_speculation_gives_the_plain_sampling_output(self):
        args = ["generate", "--model", "toy", "--regime", "markov", "--max-new-tokens", "120",
                "--temperature", "0.8", "--seed", "7"]
        _, base, _ = speclab(*args, "--drafter", "none")
        _, greedy, _ = speclab("generate", "--model", "toy", "--regime", "markov",
                               "--max-new-tokens", "120", "--drafter", "none")
        self.assertNotEqual(base, greedy, "the temperature must change the text")
        for drafter in ALL_DRAFTERS:
            rc, out, err = speclab(*args, "--drafter", drafter)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out, base, drafter)
            # The header says how it sampled, not just "sampled".
            self.assertIn(", sampled (temperature 0.8, seed 7)\n", err)

    def test_periodic_text_needs_far_fewer_target_runs(self):
        _, _, err = speclab("generate", "--model", "toy", "--max-new-tokens", "200", "--k", "5")
        stats = next(l for l in err.splitlines() if l.startswith("stats: "))
        runs = int(stats.split(" target runs")[0].split()[-1])
        self.assertLess(runs, 80, stats)

    def test_accepted_drafts_are_highlighted_on_a_terminal_only(self):
        rc, out = speclab_on_tty("generate", "--model", "toy", "--max-new-tokens", "60")
        self.assertEqual(rc, 0, out)
        self.assertIn("\x1b[1;32m", out)
        rc, out = speclab_on_tty("generate", "--model", "toy", "--max-new-tokens", "60",
                                 "--no-color")
        self.assertEqual(rc, 0, out)
        self.assertNotIn(ESC, out)

    def test_the_colour_legend_has_no_escape_codes_on_a_stderr_that_is_no_terminal(self):
        # The legend went to stderr highlighted whenever stdout was a terminal: `2>log` wrote
        # escape codes into the log.
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "LAB_IMPL")}
        master, slave = pty.openpty()
        p = subprocess.Popen([SPECLAB, "generate", "--model", "toy", "--max-new-tokens", "60"],
                             stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                             env=env, close_fds=True)
        os.close(slave)
        out = read_terminal(master, p, 60)
        err = p.stderr.read().decode("utf-8", "replace")
        self.assertEqual(p.wait(timeout=60), 0, err)
        self.assertIn("\x1b[1;32m", out.decode("utf-8", "replace"))  # the text is highlighted
        self.assertNotIn(ESC, err)
        self.assertIn("accepted draft tokens are shown in bold green", err)


    def test_a_flag_that_has_no_effect_is_named_in_a_warning(self):
        """A flag that does not apply to the run is no error (scripts keep working), but it gets
        one line on stderr that names it and says why; it used to be ignored without a word."""
        def run(*args, cmd="generate"):
            extra = ["--out", "-"] if cmd == "trace" else []
            rc, out, err = speclab(cmd, "--model", "toy", "--max-new-tokens", "8", *extra, *args)
            self.assertEqual(rc, 0, err)
            return out, err

        _, base = run()
        self.assertEqual(warnings_in(base), [])
        # Flags that apply: sa+ngram's n-gram drafter reads --n, --min-context and --pad; auto
        # reads its inner drafter's options.
        for args in (["--regime", "markov", "--noise", "0.1", "--context", "4096", "--seed", "3"],
                     ["--drafter", "sa+ngram", "--n", "4", "--min-context", "2", "--pad",
                      "--sa-threshold", "3"],
                     ["--drafter", "auto", "--auto-inner", "nasd", "--filler-top-k", "2", "--n",
                      "2"],
                     ["--drafter", "pool", "--pool-private", "--pool-newest", "--pool-keep-one"],
                     ["--drafter", "sa", "--sa-min-match", "3", "--sa-draft-ratio", "2"]):
            _, err = run(*args)
            self.assertEqual(warnings_in(err), [], args)
        # One drafter's options with another drafter: named, and the output is unchanged.
        out_ngram, _ = run("--drafter", "ngram")
        out, err = run("--drafter", "ngram", "--pool-private")
        self.assertEqual(out, out_ngram)
        self.assertEqual(warnings_in(err), [
            "speclab: warning: --pool-private has no effect: it is an option of --drafter pool, "
            "and this run uses ngram"])
        _, err = run("--drafter", "prompt-lookup", "--min-context", "2", "--pad",
                     "--filler-top-k", "2", "--pool-private", "--pool-newest", "--pool-keep-one",
                     "--sa-min-match", "3", "--sa-draft-ratio", "2", "--sa-threshold", "3",
                     "--auto-inner", "ngram")
        self.assertEqual(warned_flags(err), [
            "--min-context", "--pad", "--filler-top-k", "--pool-private", "--pool-newest",
            "--pool-keep-one", "--sa-min-match", "--sa-draft-ratio", "--sa-threshold",
            "--auto-inner"])
        self.assertIn("--min-context has no effect: it is an option of --drafter ngram, nasd, "
                      "sa+ngram, and this run uses prompt-lookup", err)
        _, err = run("--drafter", "auto", "--auto-inner", "sa", "--n", "4")
        self.assertEqual(warned_flags(err), ["--n"])
        self.assertIn("this run uses auto (steering sa)", err)
        _, err = run("--drafter", "none", "--k", "4")
        self.assertEqual(warned_flags(err), ["--k"])
        self.assertIn("--drafter none", err)
        # The toy target: its prompt is token ids, with no chat template and no threads.
        out_plain, _ = run("--prompt", "1 2 3")
        out, err = run("--prompt", "1 2 3", "--system", "4 5", "--raw", "--threads", "2")
        self.assertEqual(out, out_plain)
        self.assertEqual(warned_flags(err), ["--system", "--raw", "--threads"])
        self.assertIn("--system has no effect: the toy target has no chat template", err)
        # trace's --prompt-len sets the toy target's own prompt, unused when a prompt is given.
        _, err = run("--prompt-len", "8", cmd="trace")
        self.assertEqual(warnings_in(err), [])
        _, err = run("--prompt-len", "8", "--prompt", "1 2 3", cmd="trace")
        self.assertEqual(warned_flags(err), ["--prompt-len"])

    def test_the_cuda_libraries_are_loaded_only_for_device_cuda(self):
        # Loading the CUDA runtime and cuBLAS costs some 70 ms at every start: a command that
        # does not use the GPU must not pay it (mini_engine/targets/cuda/cuda_plugin.h).
        loaded, rc, err = shared_libraries_loaded("generate", "--model", "toy",
                                                  "--max-new-tokens", "2")
        self.assertEqual(rc, 0, err[-2000:])
        self.assertTrue(loaded, "LD_DEBUG=libs printed no library: the check would prove nothing")
        self.assertFalse({lib for lib in loaded if "cuda" in lib or "cublas" in lib}, loaded)
        if cuda_plugin_built():
            loaded, rc, _ = shared_libraries_loaded("generate", "--model", "toy", "--device",
                                                    "cuda", "--max-new-tokens", "2")
            self.assertIn("libspeclab_cuda_backend.so", loaded)
            self.assertTrue(any(lib.startswith("libcudart") for lib in loaded), loaded)


class Chat(unittest.TestCase):
    def test_turns_from_stdin_with_stats_per_turn(self):
        rc, out, err = speclab("chat", "--model", "toy", "--regime", "markov", "--max-new-tokens",
                               "30", stdin=b"1 2 3 4 5\n\n6 7 8 1 2 3\n")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("assistant> "), 2, out)  # the blank line is no turn
        self.assertIn("you> 6 7 8 1 2 3", out)
        self.assertIn("[turn 1] 30 tokens", err)
        self.assertIn("[turn 2] 30 tokens", err)
        self.assertIn("chat: 2 turns", err)
        # The later turns are turn 2 alone here: "turns 2..2" read as a range.
        self.assertRegex(err, r"chat: 2 turns\. tokens/run: turn 1 [\d.]+, turn 2 [\d.]+; "
                              r"acceptance: turn 1 [\d.]+%, later [\d.]+%\n")

    def test_an_n_past_the_context_is_refused_before_any_message_is_read(self):
        # It was checked with each message: at a terminal every message was refused with "send
        # another message", and Ctrl-D then said "no message on standard input".
        needle = ("--n 200 is too long for the context: this run holds at most 100 tokens (the "
                  "model's limit")
        args = ("chat", "--model", "toy", "--context", "100", "--n", "200", "--max-new-tokens", "5")
        for stdin in (b"", b"1 2 3\n"):
            rc, out, err = speclab(*args, stdin=stdin)
            self.assertEqual(rc, 2, err)
            self.assertIn(needle, err)
            self.assertNotIn("no message on standard input", err)
            self.assertEqual(out, "")
        rc, out = speclab_on_tty(*args, typed=b"1 2 3\n\x04")
        self.assertEqual(rc, 2, out)
        self.assertIn(needle, out)
        self.assertNotIn("send another message", out)
        self.assertNotIn("you> ", out)

    def test_a_reply_length_past_the_context_is_refused_before_any_message_is_read(self):
        # No message can fit: it was refused message by message ("send another message" at a
        # terminal), and empty input said "no message on standard input".
        needle = ("the conversation's opening with a one-character message (1 token) + "
                  "--max-new-tokens 20 does not fit the context")
        args = ("chat", "--model", "toy", "--context", "10", "--max-new-tokens", "20")
        rc, out, err = speclab(*args, stdin=b"")
        self.assertEqual(rc, 2, err)
        self.assertIn(needle, err)
        rc, out = speclab_on_tty(*args, typed=b"1 2 3\n\x04")
        self.assertEqual(rc, 2, out)
        self.assertIn(needle, out)
        self.assertNotIn("send another message", out)
        # One token less of reply fits a one-token message.
        rc, out, err = speclab("chat", "--model", "toy", "--context", "10", "--max-new-tokens",
                               "9", stdin=b"1\n")
        self.assertEqual(rc, 0, err)

    def test_the_closing_summary_adds_up_the_turns(self):
        # Turn 1 on its own, turns 2..N together: tokens / target runs and accepted / drafted.
        rc, _, err = speclab("chat", "--model", "toy", "--max-new-tokens", "24",
                             stdin=b"1 2 3 4 5 6 7 8\n1 2 3 4 5 6 7 8\n1 2 3 4\n")
        self.assertEqual(rc, 0, err)
        turns = [tuple(int(x) for x in m) for m in re.findall(
            r"\[turn \d+\] (\d+) tokens, (\d+) target runs, .*? \((\d+)/(\d+)\)", err)]
        self.assertEqual(len(turns), 3, err)
        later = [sum(t[i] for t in turns[1:]) for i in range(4)]
        self.assertGreater(later[3], 0, "the later turns drafted nothing: the check could not fail")
        first = turns[0]
        first_acc = f"{100 * first[2] / first[3]:.1f}%" if first[3] else "0.0%"
        self.assertIn(f"chat: 3 turns. tokens/run: turn 1 {first[0] / first[1]:.2f}, turns 2..3 "
                      f"{later[0] / later[1]:.2f}; acceptance: turn 1 {first_acc}, later "
                      f"{100 * later[2] / later[3]:.1f}%", err)

    def test_a_flag_that_has_no_effect_is_named_in_a_warning(self):
        # On the toy target --system applies: its token ids open the conversation.
        rc, out, err = speclab("chat", "--model", "toy", "--regime", "markov", "--max-new-tokens",
                               "8", "--system", "1 2", "--drafter", "ngram", "--pool-newest",
                               stdin=b"3 4\n")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--pool-newest"])
        _, without, _ = speclab("chat", "--model", "toy", "--regime", "markov",
                                "--max-new-tokens", "8", stdin=b"3 4\n")
        self.assertNotEqual(out, without, "--system changes the toy target's reply")

    def test_the_piped_example_of_help_and_readme_runs(self):
        # `chat --help` and the README show `printf '...' | speclab chat ...` as the way to chat
        # non-interactively: the example must run as written (with a short reply), not end with
        # the toy target's "not a token id" error.
        _, help_text, _ = speclab("chat", "--help")
        readme = (ROOT / "README.md").read_text()
        example = re.compile(r"printf '([^']*)' \\?\| speclab chat((?: --[\w-]+(?: [\w.-]+)?)*)")
        for where, text in (("speclab chat --help", help_text), ("README.md", readme)):
            with self.subTest(where=where):
                m = example.search(text)
                self.assertIsNotNone(m, f"{where} has no piped chat example")
                args = m.group(2).split()
                if "smollm2" in args and smollm2_path() is None:
                    self.skipTest("SmolLM2 is not cached (tools/fetch_model)")
                stdin = m.group(1).replace("\\n", "\n").encode()
                rc, out, err = speclab("chat", *args, "--max-new-tokens", "4", stdin=stdin)
                self.assertEqual(rc, 0, f"{where}: {m.group(0)}\n{err}")
                self.assertEqual(out.count("assistant> "), stdin.count(b"\n"), out)

    def test_a_turn_continues_the_conversation(self):
        # Turn 2's reply continues the whole conversation, so it differs from the reply the same
        # message gets as a first turn.
        _, first, _ = speclab("chat", "--model", "toy", "--regime", "markov", "--max-new-tokens",
                              "20", stdin=b"9 9 9\n")
        _, both, _ = speclab("chat", "--model", "toy", "--regime", "markov", "--max-new-tokens",
                             "20", stdin=b"1 2 3\n9 9 9\n")
        reply_alone = first.split("assistant> ")[1].strip()
        reply_second = both.split("assistant> ")[2].strip()
        self.assertNotEqual(reply_alone, reply_second)

    def test_a_turn_that_no_longer_fits_ends_a_piped_chat_after_the_summary(self):
        # The conversation grows with each turn; --context 60 holds turns 1 and 2 (6 + 20 and
        # 7 + 20 tokens) but not turn 3 (53 + 3 + 20). The answered turns keep their summary,
        # then the error names the turn; the rest of a script would build on the missing answer.
        rc, out, err = speclab("chat", "--model", "toy", "--context", "60", "--max-new-tokens",
                               "20", stdin=b"1 2 3 4 5 6\n1 2 3 4 5 6 7\n3 4 5\n9 9\n")
        self.assertEqual(rc, 2, err)
        self.assertEqual(out.count("assistant> "), 2, out)
        self.assertIn("[turn 2] 20 tokens", err)
        self.assertIn("chat: 2 turns.", err)
        self.assertIn("speclab: error: turn 3: the conversation so far (56 tokens) + "
                      "--max-new-tokens 20 does not fit the context", err)
        self.assertLess(err.index("chat: 2 turns."), err.index("speclab: error: turn 3"), err)

    def test_a_message_that_does_not_fit_is_refused_at_a_terminal_and_the_chat_goes_on(self):
        # At a terminal the user can send something shorter: the refused message changes nothing.
        long_message = " ".join(["7"] * 40).encode()
        rc, shown = speclab_on_tty(
            "chat", "--model", "toy", "--context", "60", "--max-new-tokens", "20",
            typed=b"1 2 3 4 5 6\n" + long_message + b"\n7 8\n\x04")
        self.assertEqual(rc, 0, shown)
        self.assertIn("turn 2: the conversation so far (66 tokens) + --max-new-tokens 20 does "
                      "not fit the context", shown)
        self.assertIn("the conversation is unchanged", shown)
        self.assertEqual(shown.count("assistant> "), 2, shown)
        self.assertIn("[turn 2] 20 tokens", shown)  # "7 8" is turn 2: 26 + 2 + 20 <= 60
        self.assertIn("chat: 2 turns.", shown)


class Bench(unittest.TestCase):
    def test_table_csv_and_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            csv, js = Path(tmp) / "r.csv", Path(tmp) / "sub" / "r.json"
            rc, out, err = speclab("bench", "--model", "toy", "--drafter", "prompt-lookup,auto",
                                   "--k", "2,4", "--n", "2", "--repeats", "2",
                                   "--max-new-tokens", "64", "--prompts", "3",
                                   "--csv", str(csv), "--json", str(js))
            self.assertEqual(rc, 0, err)
            self.assertNotIn("ETA", err)  # no progress bar when stderr is not a terminal
            # The header line counts prompts apart from drafter settings ("1 cases" read as one
            # prompt): 3 toy workloads of 3 conversations, 2 drafters x 2 values of k.
            self.assertIn("3 workloads (9 conversations) x 4 drafter settings x 2 repeats", err)
            self.assertIn("speedup", out)
            rows = csv.read_text().splitlines()
            self.assertEqual(len(rows), 1 + 3 * 2 * 2)  # workloads x drafters x k
            data = json.loads(js.read_text())
            self.assertEqual(len(data["cases"]), 12)
            by = {(c["workload"], c["drafter"], c["k"]): c for c in data["cases"]}
            for c in data["cases"]:
                self.assertTrue(c["identical"])
                self.assertEqual(len(c["plain_seconds"]), 2)
                # Decode-only times: per repeat, within the whole run's, and their ratio's median
                # is the decode-only speedup (two repeats: the mean of the two ratios).
                for whole, decode in (("plain_seconds", "plain_decode_seconds"),
                                      ("spec_seconds", "spec_decode_seconds")):
                    self.assertEqual(len(c[decode]), 2)
                    for w_s, d_s in zip(c[whole], c[decode]):
                        self.assertGreater(d_s, 0)
                        self.assertLessEqual(d_s, w_s)
                ratios = [p / s for p, s in zip(c["plain_decode_seconds"],
                                                c["spec_decode_seconds"])]
                self.assertAlmostEqual(c["decode_speedup"], sum(ratios) / 2, places=9)
                # Run cost: a round's time over a plain step's, per repeat, and its median. Plain
                # decoding runs the target once a token; with the same tokens emitted, each
                # repeat's decode-only speedup is its AL over its run cost (prompt lookup has the
                # same AL in every repeat; auto's choices follow the timings, so its ALs differ).
                self.assertEqual(c["plain_target_runs"], [c["emitted"] // 2] * 2)
                self.assertEqual(sum(c["spec_target_runs"]), c["target_runs"])
                costs = [(s / r) / (p / b) for p, s, b, r in zip(
                    c["plain_decode_seconds"], c["spec_decode_seconds"], c["plain_target_runs"],
                    c["spec_target_runs"])]
                self.assertAlmostEqual(c["run_cost"], sum(costs) / 2, places=9)
                if c["drafter"] == "prompt-lookup":
                    for ratio, cost in zip(ratios, costs):
                        self.assertAlmostEqual(ratio * cost, c["tokens_per_run"], places=9)
                self.assertEqual(len(c["acceptance_by_position"]) <= c["k"], True)
                # tokens/s: a repeat's tokens (emitted / repeats) over its time, the median of the
                # two repeats' rates.
                for rate, seconds in (("plain_tokens_per_s", "plain_seconds"),
                                      ("spec_tokens_per_s", "spec_seconds")):
                    expect = sum(c["emitted"] / 2 / s for s in c[seconds]) / 2
                    self.assertAlmostEqual(c[rate] / expect, 1.0, places=9)
            # Prompt lookup on periodic text drafts at every position: one rate per position, in
            # the JSON as in the CSV.
            pl = by[("toy-periodic", "prompt-lookup", 4)]
            self.assertEqual(len(pl["acceptance_by_position"]), 4)
            # Each case is timed against its own plain runs (back to back with its speculative
            # ones), not against one plain run shared by every case of the workload.
            for w in ("toy-periodic", "toy-markov", "toy-random"):
                plains = [tuple(c["plain_seconds"]) for c in data["cases"] if c["workload"] == w]
                self.assertEqual(len(set(plains)), len(plains), w)
            # The spread behind each mean AL: one AL per conversation (3 prompts), around it.
            for c in data["cases"]:
                per_conv = c["tokens_per_run_by_conversation"]
                self.assertEqual(len(per_conv), 3, c["drafter"])
                self.assertLessEqual(min(per_conv), c["tokens_per_run"] + 1e-9)
                self.assertGreaterEqual(max(per_conv), c["tokens_per_run"] - 1e-9)
            # The table's AL range is the lowest and the highest of them.
            markov = by[("toy-markov", "prompt-lookup", 4)]["tokens_per_run_by_conversation"]
            self.assertNotEqual(min(markov), max(markov))  # or the check below could not fail
            row = [line for line in out.splitlines()
                   if line.split()[:4] == ["toy-markov", "prompt-lookup", "4", "2"]]
            self.assertEqual(len(row), 1, out)
            self.assertIn(f" {min(markov):.2f}-{max(markov):.2f} ", row[0])
            self.assertIn("AL range", out)
            header = rows[0].split(",")
            self.assertIn("tokens_per_run_by_conversation", header)
            # The CSV holds what decode_speedup and run_cost are computed from, as the JSON does
            # (it had only the whole-run times): per repeat, ';'-separated, 9 significant digits.
            import csv as csv_module
            for row in csv_module.DictReader(io.StringIO(csv.read_text())):
                c = by[(row["workload"], row["drafter"], int(row["k"]))]
                for field in ("plain_decode_seconds", "spec_decode_seconds"):
                    self.assertEqual([float(v) for v in row[field].split(";")],
                                     [float(f"{v:.9g}") for v in c[field]], field)
                for field in ("plain_target_runs", "spec_target_runs"):
                    self.assertEqual([int(v) for v in row[field].split(";")], c[field], field)
            self.assertGreater(by[("toy-periodic", "prompt-lookup", 4)]["tokens_per_run"], 2.0)
            self.assertEqual(by[("toy-random", "prompt-lookup", 4)]["tokens_per_run"], 1.0)

    def test_a_case_that_drafted_nothing_has_no_acceptance_rate_in_any_output(self):
        # Random toy text gives prompt lookup nothing to copy: not one draft in the run. The
        # table said '-' (0.0% would read as every draft rejected), while the CSV and the JSON
        # wrote acceptance_rate 0, that very reading.
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, js = Path(tmp) / "r.csv", Path(tmp) / "r.json"
            rc, out, err = speclab("bench", "--model", "toy", "--workload",
                                   "toy-random,toy-periodic", "--drafter", "prompt-lookup",
                                   "--repeats", "1", "--prompts", "2", "--max-new-tokens", "32",
                                   "--csv", str(csv_path), "--json", str(js))
            self.assertEqual(rc, 0, err)
            import csv
            rows = {r["workload"]: r for r in csv.DictReader(io.StringIO(csv_path.read_text()))}
            cases = {c["workload"]: c for c in json.loads(js.read_text())["cases"]}
            none, some = cases["toy-random"], cases["toy-periodic"]
            self.assertEqual(none["drafted"], 0)  # or the checks below could not fail
            self.assertGreater(some["drafted"], 0)
            row = [l for l in out.splitlines() if l.startswith("toy-random")]
            self.assertEqual(row[0].split()[6], "-", out)
            self.assertIsNone(none["acceptance_rate"])
            self.assertEqual(rows["toy-random"]["acceptance_rate"], "")
            # A case that drafted keeps its rate, accepted / drafted, in both files.
            self.assertAlmostEqual(some["acceptance_rate"], some["accepted"] / some["drafted"])
            self.assertAlmostEqual(float(rows["toy-periodic"]["acceptance_rate"]),
                                   some["acceptance_rate"], places=5)

    def test_every_csv_column_and_json_field_is_named_in_the_readme(self):
        # The main mode's files had no reference: what `identical`, `plain_seconds` or
        # `tokens_per_run_by_conversation` hold could only be read from bench_report.cpp.
        readme = (ROOT / "README.md").read_text()
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, js = Path(tmp) / "r.csv", Path(tmp) / "r.json"
            rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                 "--drafter", "prompt-lookup", "--repeats", "1", "--prompts", "1",
                                 "--max-new-tokens", "32", "--csv", str(csv_path), "--json",
                                 str(js), "--corrupt-verify-for-testing")  # first_mismatch too
            self.assertEqual(rc, 1, err)
            data = json.loads(js.read_text())
            names = set(csv_path.read_text().splitlines()[0].split(","))
            names |= set(data["meta"]) | set(data["cases"][0])
            names |= set(data["cases"][0]["time_split_seconds"])
            missing = sorted(n for n in names if f"`{n}`" not in readme)
            self.assertEqual(missing, [], "bench output fields the README does not name")

    def test_cpu_clock_is_recorded(self):
        with tempfile.TemporaryDirectory() as tmp:
            js = Path(tmp) / "r.json"
            rc, out, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                   "--drafter", "prompt-lookup", "--repeats", "1",
                                   "--max-new-tokens", "16", "--clock", "cpu", "--csv", "",
                                   "--json", str(js))
            self.assertEqual(rc, 0, err)
            self.assertIn("cpu clock", out)
            data = json.loads(js.read_text())
            self.assertEqual(data["meta"]["clock"], "cpu")
            # The loop's own split is on the same clock as the run's time: they add up exactly.
            for c in data["cases"]:
                self.assertAlmostEqual(sum(c["time_split_seconds"].values()),
                                       c["spec_seconds"][0], places=9)

    def test_the_cpu_placement_is_recorded(self):
        """The cross-core round trip, probed before each conversation and after the last: its
        range over the run in the table and the JSON meta, and per case (the probes on either
        side of its runs) in the CSV and JSON; n/a, with the reason, under one CPU."""
        def run(prefix):
            with tempfile.TemporaryDirectory() as tmp:
                csv_path, js = Path(tmp) / "r.csv", Path(tmp) / "r.json"
                p = subprocess.run([*prefix, SPECLAB, "bench", "--model", "toy", "--workload",
                                    "toy-periodic", "--drafter", "prompt-lookup,sa", "--repeats",
                                    "2", "--prompts", "2", "--max-new-tokens", "16", "--csv",
                                    str(csv_path), "--json", str(js)], capture_output=True,
                                   text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                import csv
                return (p.stdout, json.loads(js.read_text()), list(csv.DictReader(io.StringIO(csv_path.read_text()))))
        if len(os.sched_getaffinity(0)) >= 2:
            out, data, rows = run([])
            meta = data["meta"]
            self.assertEqual(meta["core_round_trip_probes"], 1 + 2 * 2)  # conversations x repeats
            lo, hi = meta["core_round_trip_ns"]["min"], meta["core_round_trip_ns"]["max"]
            self.assertGreater(lo, 5.0)
            self.assertLessEqual(lo, hi)
            self.assertLess(hi, 1e8)  # milliseconds when another job shares a CPU
            line = [l for l in out.splitlines() if l.startswith("cross-core round trip:")]
            self.assertEqual(len(line), 1, out)
            def lround(x):  # C++'s std::lround, as speclab prints: halves away from zero
                return math.floor(x + 0.5)  # (Python's round() takes halves to even)
            span = (f"{lround(lo)} ns" if lround(lo) == lround(hi)
                    else f"{lround(lo)} to {lround(hi)} ns")
            self.assertIn(f"{span} over 5 probes", line[0])
            for case, row in zip(data["cases"], rows):
                mine = case["core_round_trip_ns"]
                self.assertTrue(lo <= mine["min"] <= mine["max"] <= hi, (mine, lo, hi))
                self.assertAlmostEqual(float(row["core_round_trip_ns_min"]), mine["min"], places=3)
                self.assertAlmostEqual(float(row["core_round_trip_ns_max"]), mine["max"], places=3)
        if shutil.which("taskset"):
            first = min(os.sched_getaffinity(0))
            out, data, rows = run(["taskset", "-c", str(first)])
            self.assertIsNone(data["meta"]["core_round_trip_ns"])
            self.assertEqual(data["meta"]["core_round_trip_probes"], 0)
            self.assertEqual({c["core_round_trip_ns"] for c in data["cases"]}, {None})
            self.assertEqual(rows[0]["core_round_trip_ns_min"], "")
            self.assertIn("cross-core round trip: n/a (this process may run on one CPU only)\n",
                          out)

    def test_a_speculative_output_that_differs_fails_loudly(self):
        rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic", "--drafter",
                             "prompt-lookup", "--repeats", "1", "--max-new-tokens", "32",
                             "--prompts", "2", "--csv", "", "--json", "",
                             "--corrupt-verify-for-testing")
        self.assertEqual(rc, 1)
        self.assertIn("MISMATCH: toy-periodic/len8", err)
        self.assertIn("FAILED", err)
        # One conversation, one repeat: a single differing run is marked in the table, the CSV
        # and the JSON, and the message names the turn from 1.
        with tempfile.TemporaryDirectory() as tmp:
            csv, js = Path(tmp) / "r.csv", Path(tmp) / "r.json"
            rc, out, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                   "--drafter", "prompt-lookup", "--repeats", "1",
                                   "--max-new-tokens", "32", "--prompts", "1", "--csv", str(csv),
                                   "--json", str(js), "--corrupt-verify-for-testing")
            self.assertEqual(rc, 1)
            self.assertIn("turn 1, output token", err)
            self.assertIn("OUTPUT DIFFERS FROM PLAIN DECODING", out)
            # One of each, counted in the singular ("1 workloads (1 conversations) x 1 drafter
            # settings x 1 repeats", "1 speculative outputs differed").
            self.assertIn(": 1 workload (1 conversation) x 1 drafter setting x 1 repeat\n", err)
            self.assertIn(", max 32 new tokens, median of 1 repeat, wall clock\n", out)
            self.assertIn("bench: FAILED: 1 speculative output differed from plain decoding;", err)
            case = json.loads(js.read_text())["cases"][0]
            self.assertFalse(case["identical"])
            rows = csv.read_text().splitlines()
            col = rows[0].split(",").index("identical")
            self.assertEqual(rows[1].split(",")[col], "false")

    def test_an_option_that_no_compared_drafter_reads_is_named_in_a_warning(self):
        base = ["bench", "--model", "toy", "--workload", "toy-periodic", "--prompts", "1",
                "--repeats", "1", "--max-new-tokens", "8", "--csv", "", "--json", ""]
        # An option that one of the compared drafters reads applies (every drafter is the
        # default).
        for args in (["--drafter", "prompt-lookup,pool", "--pool-private", "--n", "2"],
                     ["--pool-private", "--min-context", "2", "--noise", "0.1"]):
            rc, _, err = speclab(*base, *args)
            self.assertEqual(rc, 0, err)
            self.assertEqual(warnings_in(err), [], args)
        rc, _, err = speclab(*base, "--drafter", "prompt-lookup,sa", "--pool-private",
                             "--min-context", "2")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--min-context", "--pool-private"])
        self.assertIn("and this bench compares prompt-lookup, sa", err)
        rc, _, err = speclab(*base, "--drafter", "sa", "--n", "2,3")
        self.assertEqual(warned_flags(err), ["--n"])
        # bench's toy workloads set the regime themselves.
        rc, _, err = speclab(*base, "--regime", "markov")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--regime"])
        self.assertIn("--workload", err)

    def test_bench_sweeps_the_automaton_draft_ratio_side_by_side(self):
        """--sa-draft-ratio is a list in bench, like --k and --n: one case per value for the
        drafters that read it (sa, and auto steering sa), so ratios are timed side by side."""
        import csv
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, js = Path(tmp) / "r.csv", Path(tmp) / "r.json"
            rc, out, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                   "--prompts", "2", "--repeats", "1", "--max-new-tokens", "48",
                                   "--drafter", "sa,prompt-lookup", "--k", "8",
                                   "--sa-draft-ratio", "0,1", "--csv", str(csv_path), "--json",
                                   str(js))
            self.assertEqual(rc, 0, err)
            self.assertEqual(warnings_in(err), [])
            cases = json.loads(js.read_text())["cases"]
            self.assertEqual([(c["drafter"], c["drafter_name"], c["sa_draft_ratio"])
                              for c in cases],
                             [("sa", "sa(min_match=2)", 0),
                              ("sa", "sa(min_match=2, draft_ratio=1)", 1),
                              ("prompt-lookup", "prompt-lookup(n=3)", None)])
            rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
            self.assertEqual([r["sa_draft_ratio"] for r in rows], ["0", "1", ""])
            # The table tells the two sa rows apart.
            labels = [line.split()[1:3] for line in out.splitlines()
                      if line.startswith("toy-periodic")]
            self.assertEqual(labels, [["sa", "8"], ["sa", "r=1"], ["prompt-lookup", "8"]], out)
            # A ratio of 1 never drafts more per round than the match is long, so it drafts
            # less than the uncut automaton on the same text.
            self.assertLess(cases[1]["drafted"], cases[0]["drafted"])
        # A drafter that does not read it: warned about, and no extra cases.
        rc, out, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                               "--prompts", "1", "--repeats", "1", "--max-new-tokens", "8",
                               "--drafter", "prompt-lookup", "--sa-draft-ratio", "0,2", "--csv",
                               "", "--json", "")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--sa-draft-ratio"])
        self.assertEqual(len([l for l in out.splitlines() if l.startswith("toy-periodic")]), 1)

    def test_tokens_file_holds_each_turns_prompt_and_plain_reply_once(self):
        """--tokens writes one JSON line per conversation turn, from the first repeat's plain
        run: what tools/ceiling.py replays. Not one per case or repeat."""
        with tempfile.TemporaryDirectory() as tmp:
            js, tokens = Path(tmp) / "r.json", Path(tmp) / "sub" / "t.jsonl"
            rc, out, err = speclab("bench", "--model", "toy", "--prompts", "2", "--repeats", "2",
                                   "--max-new-tokens", "24", "--drafter", "prompt-lookup,sa",
                                   "--k", "2,4", "--csv", "", "--json", str(js),
                                   "--tokens", str(tokens))
            self.assertEqual(rc, 0, err)
            self.assertIn(f"wrote {js} and {tokens}", err)
            lines = [json.loads(l) for l in tokens.read_text().splitlines()]
            self.assertEqual([(l["workload"], l["turn"]) for l in lines],
                             [(w, 1) for w in ("toy-periodic", "toy-markov", "toy-random")
                              for _ in range(2)])
            for l in lines:
                self.assertEqual(list(l), ["workload", "id", "turn", "prompt", "reply"])
                self.assertTrue(1 <= len(l["reply"]) <= 24, l)
                self.assertTrue(l["prompt"] and all(isinstance(t, int) for t in l["prompt"]), l)
            # Greedy decoding is lossless: every case of a workload emits the plain replies, so
            # each case's tokens per repeat are the sum of the recorded replies' lengths.
            cases = json.loads(js.read_text())["cases"]
            self.assertEqual(len(cases), 3 * 2 * 2)
            for c in cases:
                replies = [l["reply"] for l in lines if l["workload"] == c["workload"]]
                self.assertEqual(c["emitted"], 2 * sum(map(len, replies)), c["workload"])
            # The two conversations of a workload are different prompts, recorded as such.
            self.assertNotEqual(lines[0]["prompt"], lines[1]["prompt"])
            self.assertNotEqual(lines[0]["id"], lines[1]["id"])

    def test_tools_ceiling_reads_the_tokens_file_bench_writes(self):
        # The two ends of one pipeline: a key renamed on one side must fail here, not in a
        # reader's hands. The cost curve is made up (a verify pass over d + 1 tokens costs
        # 1 + d / 2 steps, so every accepted draft pays); the toy's periodic text repeats itself,
        # so its oracles draft and emit more than one token per pass.
        with tempfile.TemporaryDirectory() as tmp:
            tokens, cost, out = Path(tmp) / "t.jsonl", Path(tmp) / "c.json", Path(tmp) / "o.json"
            rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic,toy-random",
                                 "--prompts", "2", "--repeats", "1", "--max-new-tokens", "32",
                                 "--drafter", "prompt-lookup", "--csv", "", "--json", "",
                                 "--tokens", str(tokens))
            self.assertEqual(rc, 0, err)
            cost.write_text(json.dumps({
                "decode_step_ms": 1.0, "prefill_tokens_per_s": 1000.0,
                "verify": [{"k": k, "relative_to_decode": 1 + k / 2} for k in range(1, 9)]}))
            p = subprocess.run([sys.executable, str(ROOT / "tools" / "ceiling.py"), "--tokens",
                                str(tokens), "--cost", str(cost), "--k", "4,8", "--json",
                                str(out)], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            result = {w["workload"]: w for w in json.loads(out.read_text())["workloads"]}
            self.assertEqual(sorted(result), ["toy-periodic", "toy-random"])
            for w in result.values():
                self.assertEqual(w["turns"], 2)
                self.assertEqual(len(w["oracles"]), 4)  # sa and copy, at k = 4 and 8
                for o in w["oracles"]:
                    self.assertGreaterEqual(o["speedup"], 1.0, o)
            periodic = result["toy-periodic"]["oracles"]
            self.assertTrue(all(o["tokens_per_run"] > 1.2 for o in periodic), periodic)
            self.assertIn("toy-periodic", p.stdout)

    def test_a_replaced_output_file_keeps_its_permissions(self):
        # The outputs are written beside the file and renamed over it: the new file had the
        # umask's mode, so a trace or a CSV kept private (0600) came back readable by everyone.
        with tempfile.TemporaryDirectory() as tmp:
            trace, csv_path = Path(tmp) / "t.jsonl", Path(tmp) / "b.csv"
            for path, mode in ((trace, 0o600), (csv_path, 0o640)):
                path.write_text("earlier\n")
                os.chmod(path, mode)
            rc, _, err = speclab("trace", "--model", "toy", "--max-new-tokens", "8", "--out",
                                 str(trace))
            self.assertEqual(rc, 0, err)
            rc, _, err = speclab("bench", "--model", "toy", "--repeats", "1", "--prompts", "1",
                                 "--max-new-tokens", "8", "--drafter", "sa", "--csv",
                                 str(csv_path), "--json", "")
            self.assertEqual(rc, 0, err)
            for path, mode in ((trace, 0o600), (csv_path, 0o640)):
                self.assertNotEqual(path.read_text(), "earlier\n")
                self.assertEqual(oct(os.stat(path).st_mode & 0o777), oct(mode), path.name)

    def test_progress_bar_with_an_eta_on_a_terminal(self):
        rc, out = speclab_on_tty("bench", "--model", "toy", "--workload", "toy-markov",
                                 "--repeats", "1", "--max-new-tokens", "32", "--csv", "",
                                 "--json", "")
        self.assertEqual(rc, 0, out)
        self.assertIn("ETA", out)


def gguf_tensor_data_offset(data, name):
    """The byte offset in a GGUF file's bytes of tensor `name`'s data (a reader of the header only:
    metadata values are skipped by type, tensor infos read until the name is found)."""
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip_string(p):
        return p + 8 + struct.unpack_from("<Q", data, p)[0]

    def skip_value(p, vtype):
        if vtype == 8:
            return skip_string(p)
        if vtype == 9:
            atype, count = struct.unpack_from("<IQ", data, p)
            p += 12
            if atype == 8:
                for _ in range(count):
                    p = skip_string(p)
                return p
            return p + fixed[atype] * count
        return p + fixed[vtype]

    alignment = 32
    for _ in range(n_kv):
        key_end = skip_string(pos)
        key = data[pos + 8:key_end].decode()
        vtype = struct.unpack_from("<I", data, key_end)[0]
        if key == "general.alignment":
            alignment = struct.unpack_from("<I", data, key_end + 4)[0]
        pos = skip_value(key_end + 4, vtype)
    found = None
    for _ in range(n_tensors):
        name_end = skip_string(pos)
        n_dims = struct.unpack_from("<I", data, name_end)[0]
        info_end = name_end + 4 + 8 * n_dims + 4 + 8
        if data[pos + 8:name_end].decode() == name:
            found = struct.unpack_from("<Q", data, info_end - 8)[0]
        pos = info_end
    assert found is not None, f"no tensor {name}"
    return (pos + alignment - 1) // alignment * alignment + found


def smollm2_path():
    """The cached SmolLM2 file (as tests/support/model_path.h finds it), or None."""
    path = os.environ.get("SPECLAB_MODEL") or os.path.join(
        os.environ.get("SPECLAB_CACHE") or str(Path.home() / ".cache" / "speclab"),
        "SmolLM2-135M-Instruct.Q4_1.gguf")
    return path if os.path.isfile(path) else None


class CostCurveTool(unittest.TestCase):
    """speclab_bench_cost_curve (lab 06's cost curves), beside speclab in build/bin."""
    TOOL = str(Path(SPECLAB).resolve().parent / "speclab_bench_cost_curve")
    TOY = ["--target", "toy", "--clock", "simulated", "--max-k", "2", "--reps", "1",
           "--warmup", "0"]

    def run_tool(self, *args):
        p = subprocess.run([self.TOOL, *self.TOY, *args], capture_output=True, text=True,
                           timeout=60)
        return p.returncode, p.stdout, p.stderr

    def test_a_batch_list_gives_one_row_per_batch_size_and_k(self):
        rc, out, err = self.run_tool("--batch", "1,4")
        self.assertEqual(rc, 0, err)
        rows = [line for line in out.splitlines() if line and not line.startswith("#")]
        self.assertEqual(rows[0], "b,k,seconds")
        self.assertEqual([r.split(",")[:2] for r in rows[1:]],
                         [[b, k] for b in ("1", "4") for k in ("0", "1", "2")])

    def test_a_batch_list_with_an_empty_item_is_refused(self):
        # CLI11's own splitting dropped the empty item: '1,,4' measured batches 1 and 4.
        for value in ("1,,4", "1,", ","):
            rc, out, err = self.run_tool("--batch", value)
            self.assertNotEqual(rc, 0, value)
            self.assertIn("--batch", err)
            self.assertIn(f"an empty item in '{value}'", err)
            self.assertEqual(out, "", value)
        rc, _, err = self.run_tool("--batch", "1,x")
        self.assertNotEqual(rc, 0)
        self.assertIn("expected a whole number (batch size), got 'x'", err)


class Library(unittest.TestCase):
    """README's "The engine from your own program": its program, built by its command line
    against this build tree, and run on SmolLM2 when it is cached."""

    def test_the_readme_example_builds_and_gives_the_plain_output(self):
        readme = (ROOT / "README.md").read_text()
        section = readme.split("## The engine from your own program", 1)[1].split("\n## ", 1)[0]
        code = re.search(r"```cpp\n(.*?)```", section, re.S).group(1)
        command = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
        build_line = command.replace("\\\n", " ").splitlines()[0]
        build = Path(SPECLAB).resolve().parents[1]  # build/bin/speclab -> build
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "my_app.cpp").write_text(code)
            args = []
            for arg in build_line.split():
                if arg.startswith("build/"):
                    arg = str(build / arg[len("build/"):])
                elif arg.startswith("-I"):
                    arg = "-I" + str(ROOT / arg[2:])
                elif arg in ("my_app.cpp", "my_app"):
                    arg = str(Path(tmp) / arg)
                args.append(arg)
            p = subprocess.run(args, capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, f"{' '.join(args)}\n{p.stderr}")
            model = smollm2_path()
            if model is None:
                self.skipTest("built; not run: SmolLM2 is not cached (tools/fetch_model)")
            p = subprocess.run([str(Path(tmp) / "my_app"), model], capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, f"the outputs differ or it failed:\n{p.stdout}"
                             f"{p.stderr}")
            self.assertRegex(p.stdout, r"plain: \d+ tokens, \d+ target runs")


class Demo(unittest.TestCase):
    """speclab demo without the model: the toy target, and a line that says why."""

    DEMO_SCRIPT = ROOT / "tools" / "demo"

    def test_the_readme_demo_refuses_an_unknown_flag_before_setting_up(self):
        # tools/demo --bogus ran the whole set-up and build (minutes on a fresh machine) before
        # speclab refused the flag. It refuses at once now; a value that starts with '-' is the
        # option's, and speclab judges it.
        for args, needle in ((["--bogus"], "unknown option '--bogus'"),
                             (["--k", "5", "--Model=toy"], "unknown option '--Model'"),
                             (["toy"], "unexpected argument 'toy'"),
                             (["--k", "5", "--seed"], "--seed needs a value")):
            with self.subTest(args=args):
                p = subprocess.run([str(self.DEMO_SCRIPT), *args], capture_output=True,
                                   text=True, timeout=20, env={**os.environ, "PATH": "/usr/bin:/bin"})
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(needle, p.stderr)
                self.assertIn("speclab demo --help", p.stderr)
                self.assertEqual(p.stdout, "")  # no set-up ran

    def test_the_readme_demo_help_prints_its_usage_without_setting_up(self):
        # tools/demo --help ran tools/setup (apt-get) and the whole build before speclab printed
        # the subcommand's help. It prints its own usage now, and sets up and builds nothing.
        with tempfile.TemporaryDirectory(prefix="speclab-demo-help-") as tmp:
            tree = Path(tmp)
            (tree / "tools").mkdir()
            shutil.copy(self.DEMO_SCRIPT, tree / "tools" / "demo")
            log = tree / "calls.log"
            bin_dir = tree / "bin"
            bin_dir.mkdir()
            for stub in (tree / "tools" / "setup", bin_dir / "cmake"):
                stub.write_text(f'#!/bin/sh\necho "{stub.name} $*" >> "{log}"\n')
                stub.chmod(0o755)
            for args in (["--help"], ["-h"], ["--k", "5", "--help"]):
                with self.subTest(args=args):
                    p = subprocess.run([str(tree / "tools" / "demo"), *args], capture_output=True,
                                       text=True, timeout=20,
                                       env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"})
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertIn("Usage: tools/demo [OPTIONS]", p.stdout)
                    self.assertIn("--max-new-tokens", p.stdout)
                    self.assertIn("speclab demo --help", p.stdout)
                    self.assertFalse(log.exists(), log.read_text() if log.exists() else "")

    def test_the_demo_scripts_list_of_flags_is_speclab_demos(self):
        # The script's list must follow the subcommand, or it would refuse a real flag.
        script = self.DEMO_SCRIPT.read_text()
        m = re.search(r"^DEMO_FLAGS=\((.*)\)$", script, re.M)
        self.assertIsNotNone(m, "tools/demo has no DEMO_FLAGS=(...) line")
        rc, out, err = speclab("demo", "--help")
        self.assertEqual(rc, 0, err)
        flags = set(re.findall(r"^\s+(?:-\w,)?(--[\w-]+)", out, re.M)) | {"-h"}
        self.assertEqual(set(m.group(1).split()), flags)

    def test_demo_falls_back_to_the_toy_target_and_says_why(self):
        missing = {"SPECLAB_MODEL": "/nonexistent/SmolLM2.gguf"}  # fetch_model fails at once
        rc, out, err = speclab("demo", env=missing)
        self.assertEqual(rc, 0, err)
        self.assertIn("SmolLM2 is not available", out)
        self.assertIn("see its message above", out)
        self.assertIn("Showing the toy target instead", out)
        self.assertRegex(out, r"periodic .* identical")
        self.assertIn("SPECLAB_MODEL=/nonexistent/SmolLM2.gguf does not exist", err)
        rc, _, err = speclab("demo", "--model", "smollm2", env=missing)
        self.assertEqual(rc, 2)
        self.assertIn("--model smollm2: tools/fetch_model", err)

    def test_demo_refuses_an_n_longer_than_its_runs_like_the_other_subcommands(self):
        # generate, trace and bench refuse an --n that no run can hold; demo ran, showed no
        # speedup at all, and never said why.
        missing = {"SPECLAB_MODEL": "/nonexistent/SmolLM2.gguf"}
        for model in ("toy", "auto"):
            rc, out, err = speclab("demo", "--model", model, "--n", "64", "--max-new-tokens", "10",
                                   env=missing)
            self.assertEqual(rc, 2, err)
            self.assertIn("--n 64 is too long for the context: this run holds at most 26 tokens "
                          "(the toy table's prompt 16 + max-new-tokens 10)", err)
            self.assertEqual(out, "")
        rc, _, err = speclab("demo", "--model", "toy", "--n", "25", "--max-new-tokens", "10")
        self.assertEqual(rc, 0, err)

    def test_demo_counts_one_token_in_the_singular(self):
        rc, out, err = speclab("demo", "--model", "toy", "--max-new-tokens", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("SpecLab demo: greedy decoding of 1 token on the toy target", out)

    def test_demo_names_a_flag_that_has_no_effect(self):
        missing = {"SPECLAB_MODEL": "/nonexistent/SmolLM2.gguf"}
        rc, _, err = speclab("demo", "--model", "toy", "--threads", "2", "--max-new-tokens", "16",
                             env=missing)
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--threads"])
        rc, _, err = speclab("demo", "--model", "toy", "--seed", "3", "--max-new-tokens", "16",
                             env=missing)
        self.assertEqual(warnings_in(err), [])
        # --model auto shows SmolLM2 and the toy table when it can: every flag may apply.
        rc, _, err = speclab("demo", "--threads", "2", "--seed", "3", "--max-new-tokens", "16",
                             env=missing)
        self.assertEqual(warnings_in(err), [])


@unittest.skipIf(smollm2_path() is None, "SmolLM2 is not cached (tools/fetch_model)")
class RealModel(unittest.TestCase):
    """SmolLM2 on the CPU, briefly: every subcommand, and speculation stays lossless."""
    PROMPT = ("Rename x to count and reply with the code only:\n"
              "def add_one(x):\n    y = x + 1\n    return y")

    def test_demo_too_long_for_the_context_points_at_its_own_flags(self):
        # demo's prompt is built in: "shorten the prompt" pointed at nothing it takes.
        rc, _, err = speclab("demo", "--model", "smollm2", "--threads", "2", "--max-new-tokens",
                             "100000")
        self.assertEqual(rc, 2, err)
        self.assertIn("does not fit the context", err)
        self.assertIn("(lower --max-new-tokens)", err)
        self.assertNotIn("shorten the prompt", err)

    def test_running_out_of_memory_is_named(self):
        # Under `ulimit -v 150000` loading the model printed "speclab: error: std::bad_alloc".
        import resource

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (150 << 20, 150 << 20))

        p = subprocess.run([SPECLAB, "generate", "--model", "smollm2", "--threads", "2",
                            "--prompt", "hi", "--max-new-tokens", "4"], preexec_fn=limit,
                           capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "LAB_IMPL"})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("speclab: error: out of memory (an allocation failed)", p.stderr)
        self.assertNotIn("terminate called", p.stderr)

    def test_generate_is_text_and_lossless_for_every_drafter(self):
        args = ["generate", "--model", "smollm2", "--threads", "2", "--max-new-tokens", "24",
                "--prompt", self.PROMPT]
        rc, base, err = speclab(*args, "--drafter", "none")
        self.assertEqual(rc, 0, err)
        self.assertRegex(base, r"[a-z]{3}", "the reply should be text")
        for drafter in ALL_DRAFTERS:
            rc, out, err = speclab(*args, "--drafter", drafter)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out, base, drafter)

    def test_a_blank_prompt_is_refused_before_the_chat_template_wraps_it(self):
        # Wrapped in the template, spaces encode to tokens: only the check on the text refuses
        # them (on the toy target the encoder finds no tokens either way).
        for blank in ("", "   ", " \n\t"):
            rc, out, err = speclab("generate", "--model", "smollm2", "--threads", "2",
                                   "--max-new-tokens", "4", "--prompt", blank)
            self.assertEqual(rc, 2, err)
            self.assertIn("the prompt is empty: give some text to continue", err)
            self.assertEqual(out, "")

    def test_the_stats_line_says_the_reply_ended_at_the_end_of_its_turn(self):
        rc, _, err = speclab("generate", "--model", "smollm2", "--threads", "2",
                             "--max-new-tokens", "64", "--prompt", "Say OK.")
        self.assertEqual(rc, 0, err)
        stats = [line for line in err.splitlines() if line.startswith("stats: ")]
        self.assertEqual(len(stats), 1, err)
        self.assertTrue(stats[0].endswith(" tokens/s (stopped at end of turn)"), stats[0])

    def test_a_model_with_a_nan_weight_is_refused_naming_the_tensor(self):
        # The real file with one NaN in a norm weight: without the check it loads and greedy
        # decoding emits token 0 (end of text) at once, with no word of why.
        source = smollm2_path()
        if source is None:
            self.skipTest("SmolLM2 is not cached")
        data = bytearray(Path(source).read_bytes())
        at = gguf_tensor_data_offset(data, "blk.3.ffn_norm.weight")
        data[at + 4 * 5:at + 4 * 6] = b"\x00\x00\xc0\x7f"  # a quiet NaN, little-endian
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "nan.gguf"
            path.write_bytes(bytes(data))
            rc, out, err = speclab("generate", "--model", str(path), "--prompt", "hi")
        self.assertEqual(rc, 2, err)
        self.assertIn("is not a model SpecLab can run", err)
        self.assertIn("tensor 'blk.3.ffn_norm.weight' holds nan at index 5", err)
        self.assertEqual(out, "")

    def test_a_piped_message_is_echoed_whole_and_printable(self):
        # printf("%s") stopped at the NUL ("you> hi") and passed an escape sequence through.
        rc, out, err = speclab("chat", "--model", "smollm2", "--threads", "2",
                               "--max-new-tokens", "2", stdin=b"hi\x00there \x1b[2J\n")
        self.assertEqual(rc, 0, err)
        self.assertIn("you> hi\\x00there \\x1B[2J\n", out)

    def test_chat_two_turns_with_the_public_pool(self):
        rc, out, err = speclab("chat", "--model", "smollm2", "--threads", "2",
                               "--max-new-tokens", "16", "--drafter", "pool",
                               stdin=b"Name three colours.\nRepeat them in reverse order.\n")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("assistant> "), 2)
        self.assertIn("[turn 2]", err)
        self.assertIn("chat: 2 turns", err)

    def test_bench_on_a_shipped_workload(self):
        rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "2", "--workload",
                               "code_edit", "--prompts", "1", "--repeats", "1",
                               "--max-new-tokens", "16", "--drafter", "prompt-lookup,sa",
                               "--csv", "", "--json", "")
        self.assertEqual(rc, 0, err)
        self.assertIn("code_edit", out)

    def test_bench_json_of_a_workload_whose_file_name_is_not_utf8(self):
        # The workload is named by its file: a name that is not UTF-8 made the JSON writer throw
        # after the whole run ("[json.exception.type_error.316] invalid UTF-8 byte"), exit 1,
        # and the CSV and the tokens were lost with it.
        with tempfile.TemporaryDirectory() as tmp:
            name = b"w\xff"
            with open(os.path.join(os.fsencode(tmp), name + b".jsonl"), "wb") as f:
                f.write(b'{"id": "a", "turns": ["Say hi."]}\n')
            rc, _, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                 b"./" + name + b".jsonl", "--repeats", "1", "--max-new-tokens",
                                 "4", "--drafter", "sa", "--csv", "r.csv", "--json", "r.json",
                                 "--tokens", "t.jsonl", cwd=tmp)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("json.exception", err)
            report = json.loads(Path(tmp, "r.json").read_text())
            self.assertEqual(report["cases"][0]["workload"], "w\ufffd")
            self.assertTrue(Path(tmp, "r.csv").is_file() and Path(tmp, "t.jsonl").is_file())

    def test_bench_tokens_of_a_two_turn_conversation(self):
        # Turn 2's prompt is the whole conversation so far: turn 1's prompt and reply, what
        # closes the reply, then the user's second message.
        with tempfile.TemporaryDirectory() as tmp:
            tokens = Path(tmp) / "t.jsonl"
            csv_path, json_path = Path(tmp) / "r.csv", Path(tmp) / "r.json"
            rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "2", "--workload",
                                   "two_turn", "--prompts", "1", "--repeats", "1",
                                   "--max-new-tokens", "8", "--drafter", "prompt-lookup",
                                   "--csv", str(csv_path), "--json", str(json_path),
                                   "--tokens", str(tokens))
            self.assertEqual(rc, 0, err)
            # The CSV writes the later turns' AL as it writes every AL (six significant digits,
            # as the JSON's value rounds to); it had six fixed decimals ("2.000000").
            import csv
            row = list(csv.DictReader(io.StringIO(csv_path.read_text())))[0]
            case = json.loads(json_path.read_text())["cases"][0]
            for field in ("tokens_per_run", "tokens_per_run_turn2plus"):
                self.assertEqual(row[field], f"{case[field]:.6g}", field)
            one, two = [json.loads(l) for l in tokens.read_text().splitlines()]
            self.assertEqual((one["workload"], one["turn"], two["turn"]), ("two_turn", 1, 2))
            self.assertEqual(one["id"], two["id"])
            head = one["prompt"] + one["reply"]
            self.assertEqual(two["prompt"][:len(head)], head)
            self.assertGreater(len(two["prompt"]), len(head))

    def test_bench_batch_mode_is_lossless_and_writes_one_row_per_size(self):
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, json_path = Path(tmp) / "b.csv", Path(tmp) / "out" / "b.json"
            rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                   "code_edit", "--batch", "1,2", "--repeats", "2",
                                   "--max-new-tokens", "8", "--drafter", "mine",
                                   "--csv", str(csv_path), "--json", str(json_path))
            self.assertEqual(rc, 0, err)
            self.assertIn(f"wrote {csv_path} and {json_path}", err)
            self.assertIn("2 requests", out)
            import csv
            rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
            self.assertEqual([r["batch"] for r in rows], ["1", "2"])
            self.assertEqual({r["mismatches"] for r in rows}, {"0"})
            self.assertEqual({r["identical"] for r in rows}, {"true"})
            # mine reads neither --n nor --sa-draft-ratio: empty, as in the other mode's CSV
            # (null in the JSON), not 0, which would read as a value.
            self.assertEqual([(r["n"], r["sa_draft_ratio"]) for r in rows], [("", "")] * 2)
            self.assertEqual(rows[0]["emitted"], rows[1]["emitted"], "the same requests at each size")
            # A batched speculative step's cost in batched plain steps: T(b, k) / T(b, 0). At
            # batch 1 a plain step emits one token and a speculative step one round, so within
            # each repeat the decode-only speedup times the run cost is the AL. (Only within a
            # repeat: the median of two products is not the product of two medians.)
            for r in rows:
                self.assertGreater(float(r["run_cost"]), 0.0, r)
            one = json.loads(json_path.read_text())["cases"][0]
            self.assertEqual(one["batch"], 1)
            speedups, costs = [], []
            for pd, sd, ps, ss in zip(one["plain_decode_seconds"], one["spec_decode_seconds"],
                                      one["plain_steps"], one["spec_steps"]):
                speedups.append(pd / sd)
                costs.append((sd / ss) / (pd / ps))
                self.assertAlmostEqual(speedups[-1] * costs[-1], one["tokens_per_run"], delta=1e-9)
            self.assertAlmostEqual(float(rows[0]["decode_speedup"]), statistics.median(speedups),
                                   delta=1e-4)
            self.assertAlmostEqual(float(rows[0]["run_cost"]), statistics.median(costs),
                                   delta=1e-4)
            self.assertIn("run cost: one batched speculative step", out)
            # The drafter's time per emitted token, as in the main mode: propose, begin and
            # observe, summed over the requests and repeats (each repeat emits the same tokens).
            self.assertIn("draft us/tok: the drafters' time", out)
            for r in rows:
                self.assertGreater(float(r["draft_us_per_token"]), 0.0, r)
            for case in json.loads(json_path.read_text())["cases"]:
                self.assertEqual(len(case["draft_seconds"]), 2)
                self.assertAlmostEqual(
                    case["draft_us_per_token"],
                    1e6 * sum(case["draft_seconds"]) / case["emitted"], delta=1e-6)
            # The CPU placement, as in the main mode (Bench.test_the_cpu_placement_is_recorded).
            self.assertIn("cross-core round trip:", out)
            if len(os.sched_getaffinity(0)) >= 2:
                for r in rows:  # the probes on either side of each batch size's runs
                    self.assertGreater(float(r["core_round_trip_ns_min"]), 5.0)
                    self.assertLessEqual(float(r["core_round_trip_ns_min"]),
                                         float(r["core_round_trip_ns_max"]))
            # The JSON holds the same cases, with the per-repeat figures behind the medians.
            data = json.loads(json_path.read_text())
            meta = data["meta"]
            self.assertEqual((meta["mode"], meta["requests"], meta["batches"], meta["repeats"]),
                             ("batch", 2, [1, 2], 2))
            self.assertEqual(meta["core_round_trip_probes"], 2 * 2 + 1 if
                             len(os.sched_getaffinity(0)) >= 2 else 0)
            self.assertEqual(len(data["cases"]), len(rows))
            for case, row in zip(data["cases"], rows):
                self.assertEqual((case["batch"], case["drafter"], case["k"], case["emitted"],
                                  case["target_runs"], case["identical"]),
                                 (int(row["batch"]), row["drafter"], int(row["k"]),
                                  int(row["emitted"]), int(row["target_runs"]), True))
                for key in ["run_cost", "decode_speedup", "speedup_median",
                            "plain_seconds_median", "spec_seconds_median"]:
                    self.assertAlmostEqual(case[key], float(row[key]), delta=1e-4, msg=key)
                for key in ["tokens_per_run", "plain_tokens_per_s", "spec_tokens_per_s"]:
                    self.assertAlmostEqual(case[key], float(row[key]), delta=1e-4, msg=key)
                for key in ["plain_seconds", "spec_seconds", "plain_decode_seconds",
                            "spec_decode_seconds", "plain_steps", "spec_steps"]:
                    self.assertEqual(len(case[key]), 2, key)
                self.assertAlmostEqual(case["plain_seconds_median"],
                                       statistics.median(case["plain_seconds"]), delta=1e-9)
                self.assertAlmostEqual(case["spec_seconds_median"],
                                       statistics.median(case["spec_seconds"]), delta=1e-9)
                self.assertGreater(case["plain_seconds_median"], 0)
                self.assertAlmostEqual(
                    case["speedup_median"],
                    statistics.median(p / s for p, s in zip(case["plain_seconds"],
                                                            case["spec_seconds"])), delta=1e-9)
                if case["core_round_trip_ns"] is not None:
                    self.assertAlmostEqual(case["core_round_trip_ns"]["min"],
                                           float(row["core_round_trip_ns_min"]), delta=0.01)

    def test_bench_batch_mode_names_its_csv_columns_as_the_main_mode_does(self):
        # The same quantity went by two names ('al' here, 'tokens_per_run' in the main mode's CSV
        # and both JSONs), and the batch CSV lacked 'identical' and the tokens per second its
        # JSON has. A column of the batch CSV is now the main CSV's column of that name, in the
        # same order, or one only batched mode has; the README names every one, and every field
        # of the JSON. Neither batch file had acceptance_rate, which both of the main mode's have,
        # and the batch JSON's fields came in an order of their own: its shared fields now come in
        # the main JSON's order, and its batch-only ones after the fields they follow in the CSV.
        batch_only = ["batch", "plain_seconds_median", "spec_seconds_median", "mismatches"]
        with tempfile.TemporaryDirectory() as tmp:
            main_csv, batch_csv = Path(tmp) / "main.csv", Path(tmp) / "batch.csv"
            main_json, batch_json = Path(tmp) / "main.json", Path(tmp) / "batch.json"
            rc, _, err = speclab("bench", "--model", "toy", "--workload", "toy-periodic",
                                 "--prompts", "1", "--repeats", "1", "--max-new-tokens", "4",
                                 "--drafter", "mine", "--csv", str(main_csv), "--json",
                                 str(main_json))
            self.assertEqual(rc, 0, err)
            rc, _, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                 "code_edit", "--batch", "1", "--prompts", "1", "--repeats", "1",
                                 "--max-new-tokens", "4", "--drafter", "mine", "--csv",
                                 str(batch_csv), "--json", str(batch_json))
            self.assertEqual(rc, 0, err)
            main = main_csv.read_text().splitlines()[0].split(",")
            batch = batch_csv.read_text().splitlines()[0].split(",")
            data = json.loads(batch_json.read_text())
            main_fields = list(json.loads(main_json.read_text())["cases"][0])
        self.assertEqual([c for c in batch if c not in main], batch_only)
        self.assertEqual([c for c in batch if c in main], [c for c in main if c in batch])
        fields = list(data["cases"][0])
        shared = ("tokens_per_run", "acceptance_rate", "identical", "plain_tokens_per_s",
                  "spec_tokens_per_s", "draft_us_per_token", "run_cost", "speedup_median",
                  "decode_speedup")
        for column in shared:
            self.assertIn(column, batch)
            self.assertIn(column, fields)
        self.assertEqual([f for f in fields if f in main_fields],
                         [f for f in main_fields if f in fields],
                         "the batch JSON's shared fields in the main JSON's order")
        for column in batch_only:
            self.assertEqual(fields[fields.index(column) - 1], batch[batch.index(column) - 1],
                             column)
        # The JSON's own per-repeat arrays come where the main JSON has its per-repeat run counts.
        self.assertEqual([f for f in fields if f not in main_fields and f not in batch],
                         ["plain_steps", "spec_steps", "draft_seconds"])
        self.assertEqual(fields.index("plain_steps"), fields.index("spec_decode_seconds") + 1)
        readme = (ROOT / "README.md").read_text()
        names = set(batch) | set(data["meta"]) | set(data["cases"][0]) | {"first_mismatch"}
        self.assertEqual(sorted(n for n in names if f"`{n}`" not in readme), [],
                         "batched mode's output fields the README does not name")
        # The `--batch` paragraph of the `speclab bench` row lists the batch files' fields from
        # `batch` on (those before it, the run's and the case's, it names as ranges, and the
        # cross-core round trips in words); acceptance_rate was named only for the main mode.
        row = readme[readme.index("`--batch 1,4,32`"):]
        row = row[:row.index("\n")]
        own = batch[batch.index("batch"):] + fields[fields.index("batch"):]
        self.assertEqual(sorted({n for n in own if not n.startswith("core_round_trip")
                                 and f"`{n}`" not in row}), [],
                         "batch fields the README's --batch paragraph does not name")

    def test_bench_batch_mode_writes_the_acceptance_rate_as_the_main_mode_does(self):
        # Neither batch file had acceptance_rate. As in the main mode's: accepted / drafted, six
        # significant digits in the CSV, and empty (null in the JSON) where nothing was drafted:
        # prompt lookup with an --n no 60 tokens of a short prompt repeat drafts nothing.
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, json_path = Path(tmp) / "b.csv", Path(tmp) / "b.json"
            rc, _, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                 "code_edit", "--batch", "1", "--prompts", "1", "--repeats", "1",
                                 "--max-new-tokens", "16", "--drafter", "mine,prompt-lookup",
                                 "--n", "60", "--csv", str(csv_path), "--json", str(json_path))
            self.assertEqual(rc, 0, err)
            import csv
            rows = {r["drafter"]: r for r in csv.DictReader(io.StringIO(csv_path.read_text()))}
            cases = {c["drafter"]: c for c in json.loads(json_path.read_text())["cases"]}
        some, none = cases["mine"], cases["prompt-lookup"]
        self.assertGreater(some["drafted"], 0)  # or the checks below could not fail
        self.assertEqual(none["drafted"], 0)
        self.assertEqual(some["acceptance_rate"], some["accepted"] / some["drafted"])
        self.assertEqual(rows["mine"]["acceptance_rate"], f"{some['acceptance_rate']:.6g}")
        self.assertEqual((int(rows["mine"]["accepted"]), int(rows["mine"]["drafted"])),
                         (some["accepted"], some["drafted"]))
        self.assertIsNone(none["acceptance_rate"])
        self.assertEqual(rows["prompt-lookup"]["acceptance_rate"], "")

    def test_bench_batch_mode_records_the_sampling_it_ran_with(self):
        # Batched mode decodes with --temperature and --seed, but its table, CSV and JSON did
        # not say so: a sampled run read as a greedy one (the main mode records both).
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, json_path = Path(tmp) / "b.csv", Path(tmp) / "b.json"
            rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                   "code_edit", "--batch", "2", "--repeats", "1",
                                   "--max-new-tokens", "4", "--drafter", "sa", "--temperature",
                                   "0.7", "--seed", "4", "--csv", str(csv_path), "--json",
                                   str(json_path))
            self.assertEqual(rc, 0, err)
            self.assertIn("LAB_IMPL=solution, sampled (temperature 0.7, seed 4), max-new-tokens 4",
                          out)
            # One repeat and one model thread, in the singular ("1 repeats", "1 threads").
            self.assertIn(", 1 thread), LAB_IMPL=", out)
            self.assertIn(", max-new-tokens 4, 1 repeat, wall clock\n", out)
            import csv
            rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
            self.assertEqual({r["temperature"] for r in rows}, {"0.7"})
            meta = json.loads(json_path.read_text())["meta"]
            self.assertEqual((meta["temperature"], meta["seed"]), (0.7, 4))

    def test_bench_batch_mode_quotes_the_csv_fields_it_names(self):
        # A workload is named by its file; batched mode wrote the name unquoted, so a line break
        # or a quote in it split the row. (--workload is a comma-separated list: no commas.)
        with tempfile.TemporaryDirectory() as tmp:
            odd = Path(tmp) / 'edit\n"quoted".jsonl'
            shutil.copy(ROOT / "data" / "workloads" / "code_edit.jsonl", odd)
            csv_path = Path(tmp) / "b.csv"
            rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                   str(odd), "--batch", "1", "--prompts", "1", "--repeats", "1",
                                   "--max-new-tokens", "4", "--drafter", "sa", "--csv",
                                   str(csv_path), "--json", "")
            self.assertEqual(rc, 0, err)
            self.assertIn("first turns only: 1 request (the workload's conversations in turn)",
                          out)
            import csv
            rows = list(csv.reader(io.StringIO(csv_path.read_text())))
            self.assertEqual(len(rows), 2, rows)
            self.assertEqual(len(rows[1]), len(rows[0]), rows)
            row = dict(zip(rows[0], rows[1]))
            self.assertIn('edit\n"quoted"', row["workload"])
            self.assertEqual(row["batch"], "1")

    def test_bench_model_gives_each_repeat_its_placement(self):
        """speclab_bench_model (the engine's speed tool, beside speclab): the cross-core round
        trip before each repeat, next to that repeat's verify-cost ratio."""
        exe = str(Path(SPECLAB).parent / "speclab_bench_model")
        args = [exe, "--model", smollm2_path(), "--threads", "2", "--prompt", "16", "--decode",
                "4", "--repeats", "3", "--kmax", "2"]
        p = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        data = json.loads(p.stdout)
        self.assertEqual(len(data["core_round_trip_ns"]), 3)
        for rt in data["core_round_trip_ns"]:
            if len(os.sched_getaffinity(0)) >= 2:
                self.assertGreater(rt, 5.0)
            else:
                self.assertIsNone(rt)
        for v in data["verify"]:
            per_repeat = v["relative_per_repeat"]
            self.assertEqual(len(per_repeat), 3)
            self.assertEqual(min(per_repeat), v["relative_min"])
            self.assertEqual(max(per_repeat), v["relative_max"])
        # SmolLM2's matrices repacked: 93.7 MiB, of which what the kernel put in 2 MiB pages.
        self.assertAlmostEqual(data["weights_mib"], 93.7, delta=0.1)
        self.assertGreaterEqual(data["weights_in_huge_pages_mib"], 0)
        self.assertLessEqual(data["weights_in_huge_pages_mib"], data["weights_mib"])
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"weights  93\.7 MiB packed, \d+\.\d MiB of them in 2 MiB pages")
        self.assertIn("per repeat: cross-core round trip before it, then the k=2 ratio:", p.stdout)
        self.assertEqual(p.stdout.rstrip().splitlines()[-1].count("x"), 3, p.stdout)

    def test_more_threads_than_cores_is_refused(self):
        # 64 threads on 2 cores took 8.6 s for 4 tokens (0.5 s with 2): each layer's barrier
        # waits for threads that have no core. 1024 looked like a hang.
        cores = os.cpu_count() or 1
        for cmd in (["generate", "--prompt", "hi"], ["bench", "--workload", "rag", "--batch", "2",
                                                     "--csv", "", "--json", ""]):
            rc, _, err = speclab(*cmd, "--model", "smollm2", "--threads", str(cores + 1),
                                 "--max-new-tokens", "4", timeout=60)
            self.assertEqual(rc, 2, err)
            self.assertIn(f"--threads {cores + 1} is more than the {cores} cores of this machine",
                          err)
        rc, _, err = speclab("generate", "--prompt", "hi", "--model", "smollm2", "--threads",
                             str(cores), "--max-new-tokens", "2", timeout=60)
        self.assertEqual(rc, 0, err)

    def test_the_context_error_suggests_raising_context_only_below_the_models_limit(self):
        args = ["generate", "--model", "smollm2", "--threads", "1", "--prompt", "hi"]
        for extra in ([], ["--context", "8192"]):  # at the model's own limit already
            rc, _, err = speclab(*args, "--max-new-tokens", "9000", *extra)
            self.assertEqual(rc, 2, err)
            self.assertIn("does not fit the context", err)
            self.assertIn("holds at most 8192 tokens, the model's own limit", err)
            self.assertNotIn("raise --context", err)
        rc, _, err = speclab(*args, "--max-new-tokens", "100", "--context", "64")
        self.assertEqual(rc, 2, err)
        self.assertIn("holds at most 64 tokens", err)
        self.assertIn("or raise --context, up to the model's own limit of 8192)", err)

    def test_bench_refuses_before_any_run_a_conversation_whose_later_turns_outgrow_the_context(self):
        # Only the first turn was checked, so a two-turn conversation ran its first turn and then
        # failed with exit 1 and "the prompt has 69 tokens but ... holds at most 50", which named
        # neither the workload nor a way out.
        rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                               "two_turn", "--prompts", "1", "--drafter", "sa", "--repeats", "1",
                               "--max-new-tokens", "8", "--context", "50", "--csv", "",
                               "--json", "")
        self.assertEqual(rc, 2, err)
        self.assertIn("workload two_turn, '", err)
        self.assertRegex(err, r"its 2 turns \(\d+ tokens of prompts and templates\) \+ "
                              r"--max-new-tokens 8 for each reply do not fit the context")
        # Its prompts alone (about 60 tokens) outgrow 50: fewer new tokens would not help.
        self.assertRegex(err, r"its prompts alone hold \d+ tokens: raise --context, up to the "
                              r"model's own limit of 8192\)")
        self.assertEqual(out, "", "the bench ran before checking the conversations")

    def test_bench_batch_mode_checks_only_the_first_turns_it_decodes(self):
        # Batched mode decodes each conversation's first turn only, so a context that holds the
        # first turn but not both is enough for it (the check counted every turn).
        rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                               "two_turn", "--prompts", "1", "--drafter", "sa", "--repeats", "1",
                               "--max-new-tokens", "8", "--context", "50", "--csv", "",
                               "--json", "", "--batch", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("two_turn", out)

    def test_a_context_above_the_models_limit_is_refused_naming_it(self):
        # It used to be capped to the model's limit without a word.
        bench = ["bench", "--workload", "code_edit", "--prompts", "1", "--repeats", "1",
                 "--max-new-tokens", "4", "--drafter", "prompt-lookup", "--csv", "", "--json", ""]
        for cmd in (["generate", "--prompt", "hi"],
                    ["generate", "--prompt", "hi", "--max-new-tokens", "9000"], ["chat"], bench,
                    [*bench, "--batch", "1"]):
            rc, out, err = speclab(cmd[0], "--model", "smollm2", "--threads", "1", "--context",
                                   "16777216", *cmd[1:], stdin=b"hi\n")
            self.assertEqual(rc, 2, f"{cmd}: {err}")
            self.assertIn("--context 16777216 is more than the model holds: ", err)
            self.assertIn("at most 8192 tokens (its llama.context_length); give --context 8192 "
                          "or less, or 0 for the model's own limit", err)
            self.assertEqual(out, "")
        rc, _, err = speclab("generate", "--model", "smollm2", "--threads", "1", "--prompt", "hi",
                             "--max-new-tokens", "2", "--context", "8192")
        self.assertEqual(rc, 0, err)

    def test_toy_only_flags_with_a_real_model_are_named_in_a_warning(self):
        args = ["--model", "smollm2", "--threads", "1", "--prompt", "Say hello to everyone.",
                "--max-new-tokens", "2"]
        rc, _, err = speclab("generate", *args, "--regime", "markov", "--noise", "0.1")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--regime", "--noise"])
        self.assertIn("--regime has no effect: it applies to the toy target only (--model toy)",
                      err)
        rc, _, err = speclab("trace", *args, "--prompt-len", "8", "--out", "-")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--prompt-len"])
        # A system message goes into the chat template, which --raw leaves out.
        rc, _, err = speclab("generate", *args, "--system", "Be brief.")
        self.assertEqual(warnings_in(err), [])
        rc, _, err = speclab("generate", *args, "--system", "Be brief.", "--raw")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--system"])
        self.assertIn("--raw", warnings_in(err)[0])
        # A seed seeds sampling (and the toy target's text): greedy SmolLM2 draws nothing.
        rc, _, err = speclab("generate", *args, "--seed", "7")
        self.assertEqual(rc, 0, err)
        self.assertEqual(warned_flags(err), ["--seed"])
        self.assertIn("decode greedily", err)
        rc, _, err = speclab("generate", *args, "--seed", "7", "--temperature", "0.8")
        self.assertEqual(warnings_in(err), [])

    def test_bench_batch_mode_fails_loudly_when_an_output_differs(self):
        # Batched mode checks every request's output against plain decoding, as the main mode
        # does (Bench.test_a_speculative_output_that_differs_fails_loudly): a broken verify rule
        # fails the run, names the request and where its output departs, and marks the case in
        # the table, the CSV and the JSON.
        with tempfile.TemporaryDirectory() as tmp:
            csv_path, json_path = Path(tmp) / "b.csv", Path(tmp) / "b.json"
            rc, out, err = speclab("bench", "--model", "smollm2", "--threads", "1", "--workload",
                                   "code_edit", "--batch", "1,2", "--repeats", "1",
                                   "--max-new-tokens", "16", "--drafter", "prompt-lookup",
                                   "--k", "4", "--csv", str(csv_path), "--json", str(json_path),
                                   "--corrupt-verify-for-testing")
            self.assertEqual(rc, 1, err)
            self.assertRegex(err, r"bench: MISMATCH: code_edit batch 1 request 0 with "
                                  r"prompt-lookup\(n=3\) \(k=4\): speculative output differs "
                                  r"from plain decoding at output token \d+: plain \d+, "
                                  r"speculative \d+\n")
            self.assertIn("bench: FAILED:", err)
            self.assertEqual(out.count("OUTPUT DIFFERS FROM PLAIN DECODING"), 2, out)
            import csv
            rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
            self.assertEqual([int(r["mismatches"]) > 0 for r in rows], [True, True])
            self.assertEqual([r["identical"] for r in rows], ["false", "false"])
            for case in json.loads(json_path.read_text())["cases"]:
                self.assertFalse(case["identical"])
                self.assertRegex(case["first_mismatch"],
                                 r"^request 0 \([^)]+\): output token \d+: plain \d+, "
                                 r"speculative \d+$")

    def test_bench_batch_mode_needs_a_real_model(self):
        rc, _, err = speclab("bench", "--model", "toy", "--batch", "2", "--csv", "", "--json", "")
        self.assertNotEqual(rc, 0)
        self.assertIn("--batch needs a real model", err)

    def test_trace_records_carry_the_text(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "t.jsonl"
            rc, _, err = speclab("trace", "--model", "smollm2", "--threads", "2", "--prompt",
                                 self.PROMPT, "--max-new-tokens", "16", "--n", "3",
                                 "--out", str(out))
            self.assertEqual(rc, 0, err)
            rounds = [json.loads(line) for line in out.read_text().splitlines()]
            self.assertTrue(rounds)
            self.assertTrue(all("text" in r for r in rounds))
            for i, r in enumerate(rounds):  # trace_record.h: a stop round has no target token
                if r["last"] == "stop":
                    self.assertEqual(len(r["emitted"]), r["accepted"])
                    self.assertEqual(i, len(rounds) - 1, "the run ends at a stop round")
                else:
                    self.assertEqual(len(r["emitted"]), r["accepted"] + 1)
            self.assertLessEqual(sum(len(r["emitted"]) for r in rounds), 16)

    def test_demo_uses_smollm2(self):
        rc, out, err = speclab("demo", "--max-new-tokens", "24", "--threads", "2")
        self.assertEqual(rc, 0, err)
        self.assertIn("identical to plain decoding", out)
        self.assertNotIn("Showing the toy target", out)
        # --max-new-tokens applies to the toy table that follows too: it printed 256 tokens
        # whatever was asked.
        self.assertIn("greedy decoding of 24 tokens on the toy target", out)
        # One timing each would be at the mercy of a busy machine: the speedup is the median of
        # three side-by-side pairs, shown with its range.
        m = re.search(r"Decode speedup ([0-9.]+)x \(median of 3 runs each, ([0-9.]+) to "
                      r"([0-9.]+); prefill excluded\)", out)
        self.assertIsNotNone(m, out)
        low, median, high = float(m.group(2)), float(m.group(1)), float(m.group(3))
        self.assertTrue(0 < low <= median <= high, m.group(0))


class StarterImpl(unittest.TestCase):
    def test_lab_impl_starter_runs_the_students_code(self):
        rc, out, _ = speclab("--help", env={"LAB_IMPL": "starter"}, timeout=900)
        self.assertEqual(rc, 0)
        self.assertIn("LAB_IMPL=starter", out)
        rc, _, err = speclab("generate", "--model", "toy", "--max-new-tokens", "20",
                             env={"LAB_IMPL": "starter"}, timeout=900)
        self.assertEqual(rc, 1)
        self.assertIn("your starter is not finished: TODO(lab01)", err)
        # Plain decoding needs no lab code, so it runs even on an untouched starter.
        rc, _, err = speclab("generate", "--model", "toy", "--max-new-tokens", "20", "--drafter",
                             "none", env={"LAB_IMPL": "starter"}, timeout=900)
        self.assertEqual(rc, 0, err)

    def test_a_trace_that_fails_leaves_its_out_file_as_it_was(self):
        # The file was truncated before the run and written as it went: a run that failed (here
        # the starter's TODO) destroyed an earlier trace and left an empty or half-written one.
        with tempfile.TemporaryDirectory() as tmp:
            earlier = Path(tmp) / "trace.jsonl"
            earlier.write_text("an earlier trace\n")
            # A file of the user's beside it is not the run's scratch file: it stays as it is.
            bystander = Path(tmp) / "trace.jsonl.partial"
            bystander.write_text("mine\n")
            fresh = Path(tmp) / "new.jsonl"
            for out in (earlier, fresh):
                rc, _, err = speclab("trace", "--model", "toy", "--max-new-tokens", "20", "--out",
                                     str(out), env={"LAB_IMPL": "starter"}, timeout=900)
                self.assertEqual(rc, 1, err)
                self.assertIn("your starter is not finished", err)
            self.assertEqual(earlier.read_text(), "an earlier trace\n")
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()),
                             ["trace.jsonl", "trace.jsonl.partial"])
            # A run that succeeds replaces it.
            rc, _, err = speclab("trace", "--model", "toy", "--max-new-tokens", "20", "--out",
                                 str(earlier))
            self.assertEqual(rc, 0, err)
            lines = earlier.read_text().splitlines()
            self.assertEqual(sum(len(json.loads(line)["emitted"]) for line in lines), 20)
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()),
                             ["trace.jsonl", "trace.jsonl.partial"])
            self.assertEqual(bystander.read_text(), "mine\n")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import ctest_unittest
    ctest_unittest.main()
