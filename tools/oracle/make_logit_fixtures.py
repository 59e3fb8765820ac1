#!/usr/bin/env python3
"""Records llama.cpp's logits on SmolLM2 as a test fixture for CpuLlama.

An independent implementation to check our forward pass against: llama.cpp, through the
llama-cpp-python bindings, on the very same GGUF file. For several sequences it runs teacher
forcing (one pass over the whole sequence with logits for every position) and keeps the top-k
token ids and logits at each position. It runs the same sequences again one token at a time
(the decode path: other kernels, other summation orders) and keeps those top-k too: where the
two passes of llama.cpp disagree on top-1, the context is a near-tie that no reimplementation
can be expected to call like either pass (the test measures that floor). It also stores a few copy-heavy prompts (as token ids)
for the speculative-decoding identity tests.

  .venv/bin/python tools/oracle/make_logit_fixtures.py [--model PATH] [--out FILE]

Needs the optional dev dependencies (tools/oracle/setup_venv installs them into .venv/).
The normal test run only reads the committed JSON file; it never imports llama_cpp.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys

import numpy as np
import llama_cpp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(ROOT, "tests", "fixtures", "smollm2_llamacpp_logits.json")
TOP_K = 20
N_THREADS = 2
N_CTX = 2048

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def chat(user):
    """SmolLM2's chat template (tokenizer.chat_template in the GGUF), one user turn."""
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n")


# Teacher-forced sequences: a prompt, then llama.cpp's own greedy continuation (so most positions
# are the model's natural text), up to `new` tokens.
SEQUENCES = [
    ("chat-capital", chat("What is the capital of France? Answer in two sentences."), 90),
    ("chat-python", chat("Write a Python function that returns the n-th Fibonacci number."), 110),
    ("chat-explain", chat("Explain in simple words why the sky is blue."), 110),
    ("prose", "The history of the printing press begins in the fifteenth century, when", 90),
    ("code", "#include <stdio.h>\n\nint main(void) {\n    int total = 0;\n    for (int i = 0;", 90),
    ("list", "Here are five tips for staying productive while working from home:\n1.", 90),
]

# Copy-heavy prompts for lossless speculative decoding: the answer repeats text from the prompt,
# so prompt lookup drafts get accepted.
SPEC_PROMPTS = [
    chat("Repeat this sentence exactly, three times: The quick brown fox jumps over the lazy "
         "dog near the quiet river bank."),
    chat("Rename the variable `count` to `total` in this code and print the whole code:\n"
         "def f(items):\n    count = 0\n    for x in items:\n        count += x\n"
         "    return count\n"),
    chat("Copy the following list and add a sixth item: apples, bananas, cherries, dates, "
         "elderberries."),
    chat("Fix the spelling in this text and write it out again: Teh cat sat on teh mat and "
         "looked at teh door becuase it was hungry."),
    chat("Convert to uppercase: the meeting is on monday at ten in the small room on the "
         "second floor."),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_model():
    env = dict(os.environ)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fetch_model")],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit("make_logit_fixtures: tools/fetch_model failed:\n" + out.stderr)
    return out.stdout.strip()


def all_logits(llm, tokens):
    """Logits for every position of `tokens` from one fresh pass (teacher forcing)."""
    llm.reset()
    llm.eval(tokens)
    return np.array(llm.scores[: len(tokens)], dtype=np.float32)


def stepwise_logits(llm, tokens):
    """Logits for every position of `tokens`, fed one token per eval call (decode batches)."""
    llm.reset()
    rows = []
    for t in tokens:
        llm.eval([t])
        rows.append(np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32))
    return np.stack(rows)


def top_k(logits):
    top = np.argsort(-logits, axis=1, kind="stable")[:, :TOP_K]
    vals = [[round(float(logits[p, i]), 4) for i in top[p]] for p in range(len(logits))]
    return top.tolist(), vals


def greedy_continue(llm, prompt, n_new, stop=(0, 2)):
    llm.reset()
    llm.eval(prompt)
    out = list(prompt)
    for _ in range(n_new):
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        out.append(nxt)
        if nxt in stop:
            break
        llm.eval([nxt])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="GGUF file (default: tools/fetch_model's path)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    model = args.model or find_model()

    llm = llama_cpp.Llama(model_path=model, n_ctx=N_CTX, n_batch=512, n_threads=N_THREADS,
                          logits_all=True, verbose=False, seed=0)
    sequences = []
    for name, text, n_new in SEQUENCES:
        prompt = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        tokens = greedy_continue(llm, prompt, n_new)
        top_ids, top_logits = top_k(all_logits(llm, tokens))
        step_ids, step_logits = top_k(stepwise_logits(llm, tokens))
        sequences.append({
            "name": name,
            "text": text,
            "n_prompt": len(prompt),
            "tokens": [int(t) for t in tokens],
            "top_ids": top_ids,
            "top_logits": top_logits,
            "stepwise_top_ids": step_ids,
            "stepwise_top_logits": step_logits,
        })
        print(f"{name}: {len(prompt)} prompt + {len(tokens) - len(prompt)} generated tokens",
              file=sys.stderr)
    spec = [{"text": t, "tokens": [int(x) for x in
                                   llm.tokenize(t.encode("utf-8"), add_bos=False, special=True)]}
            for t in SPEC_PROMPTS]

    out = {
        "generator": {
            "script": "tools/oracle/make_logit_fixtures.py",
            "date": datetime.date.today().isoformat(),
            "llama_cpp_python": llama_cpp.__version__,
            "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace"),
            "numpy": np.__version__,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "model_file": os.path.basename(model),
            "model_sha256": sha256(model),
            "settings": {"n_threads": N_THREADS, "n_ctx": N_CTX, "n_batch": 512,
                         "logits_all": True, "top_k": TOP_K,
                         "top_ids": "one pass over the whole sequence (prefill batch)",
                         "stepwise_top_ids": "one token per eval (decode batches)",
                         "continuation": "llama.cpp greedy (argmax), stop at ids 0 or 2"},
            "positions": sum(len(s["tokens"]) for s in sequences),
        },
        "sequences": sequences,
        "spec_prompts": spec,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out}: {out['generator']['positions']} positions, "
          f"{os.path.getsize(args.out) / 1024:.0f} KiB", file=sys.stderr)


if __name__ == "__main__":
    main()
