#!/usr/bin/env python3
"""CpuLlama's speed, and llama.cpp's on the same GGUF with the same threads, side by side.

  tools/bench_model.py [--threads 2] [--repeats 5] [--prompt 128] [--decode 32] [--kmax 8]

Runs build/bin/speclab_bench_model (prefill and decode tokens/s, and the cost of a verify pass
of k+1 tokens relative to one decode step, k = 1..kmax, all medians). When llama-cpp-python is
importable (tools/oracle/setup_venv, then run this with .venv/bin/python), it also times
llama.cpp: prefill of the same prompt length, single-token decode steps and verify passes of
k+1 tokens (timed the same way as ours), medians, and prints the ratios. Benchmarks, not tests: run them on a quiet machine and repeat.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model_path():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "fetch_model")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("bench_model: no model file:\n" + out.stderr)
    return out.stdout.strip()


def ours(args, model):
    exe = os.path.join(ROOT, "build", "bin", "speclab_bench_model")
    if not os.path.exists(exe):
        sys.exit(f"bench_model: {exe} is missing: build first (cmake --build build)")
    cmd = [exe, "--model", model, "--threads", str(args.threads), "--repeats", str(args.repeats),
           "--prompt", str(args.prompt), "--decode", str(args.decode), "--kmax", str(args.kmax),
           "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:  # its own message names the problem (a flag out of its range, ...)
        sys.exit(f"bench_model: {os.path.basename(exe)} failed (exit {p.returncode}):\n"
                 f"{p.stderr.strip()}")
    return json.loads(p.stdout)


def llama_cpp_figures(args, model, prompt):
    try:
        import llama_cpp
    except ImportError:
        return None
    # Prefill as our loops do it: logits for the last prompt row only.
    llm = llama_cpp.Llama(model_path=model, n_ctx=2048, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, logits_all=False, verbose=False)
    llm.eval(prompt)  # warm-up
    prefill = []
    for _ in range(args.repeats):
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        prefill.append(time.perf_counter() - t0)
    del llm
    # Decode steps and verify passes as speclab_bench_model times them: a verify pass needs the
    # logits of all its k+1 rows (logits_all), passes are interleaved with the decode steps at
    # the same context lengths and rolled back, and the ratio is formed within each repeat.
    llm = llama_cpp.Llama(model_path=model, n_ctx=2048, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, logits_all=True, verbose=False)
    llm.eval(prompt)  # warm-up
    step, ratio = [], {k: [] for k in range(1, args.kmax + 1)}
    for _ in range(args.repeats):
        llm.reset()
        llm.eval(prompt)
        nxt = prompt[-1]
        step_r, verify_r = [], {k: [] for k in ratio}
        for s in range(args.decode):
            t0 = time.perf_counter()
            llm.eval([nxt])
            step_r.append(time.perf_counter() - t0)
            nxt = int(llm.scores[llm.n_tokens - 1].argmax())  # greedy, like ours
            if s % max(1, args.decode // 4) == 0:
                length = llm.n_tokens
                for k in ratio:
                    t1 = time.perf_counter()
                    llm.eval([nxt] * (k + 1))
                    verify_r[k].append(time.perf_counter() - t1)
                    llm.n_tokens = length  # the next eval drops the pass from the KV cache
        step += step_r
        for k in ratio:
            ratio[k].append(statistics.median(verify_r[k]) / statistics.median(step_r))
    return {"version": llama_cpp.__version__,
            "prefill_tokens_per_s": len(prompt) / statistics.median(prefill),
            "decode_tokens_per_s": 1.0 / statistics.median(step),
            "verify": [{"k": k, "relative_to_decode": statistics.median(r)}
                       for k, r in ratio.items()]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of both engines (default 2)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="timed repeats; every figure is a median over them (default 5)")
    ap.add_argument("--prompt", type=int, default=128,
                    help="prompt length in tokens: the prefill, and the context the decode "
                         "steps start from (default 128)")
    ap.add_argument("--decode", type=int, default=32,
                    help="decode steps timed per repeat (default 32)")
    ap.add_argument("--kmax", type=int, default=8,
                    help="verify passes of k+1 tokens are timed for k = 1..KMAX (default 8)")
    args = ap.parse_args()
    for name in ("threads", "repeats", "prompt", "decode", "kmax"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    model = model_path()
    o = ours(args, model)
    print(f"CpuLlama ({o['kernel']}, {o['threads']} threads, prompt {o['prompt_tokens']}, "
          f"medians of {args.repeats}):")
    print(f"  prefill {o['prefill_tokens_per_s']:8.1f} tokens/s   (Target::append: no logits rows, "
          "as the decoding loops prefill)")
    print(f"  decode  {o['decode_tokens_per_s']:8.1f} tokens/s   ({o['decode_step_ms']:.2f} ms/step)")
    print("  verify pass of k+1 tokens / one decode step:")
    print("    " + "  ".join(f"k={v['k']}: {v['relative_to_decode']:.2f}x" for v in o["verify"]))
    # Where the host had the two CPUs in each repeat (one die or two: book/engine_forward.md).
    trips = ", ".join("n/a" if t is None else f"{t:.0f} ns" for t in o["core_round_trip_ns"])
    print(f"  cross-core round trip before each repeat: {trips}")
    # The same pseudo-random prompt ids as the C++ bench would be ideal; speed does not depend
    # on the ids, so any in-vocabulary ids of the same length do.
    prompt = [(i * 7919 + 13) % 40000 for i in range(args.prompt)]
    l = llama_cpp_figures(args, model, prompt)
    if l is None:
        print("llama.cpp: llama-cpp-python is not installed (tools/oracle/setup_venv, then run "
              "this script with .venv/bin/python)")
        return 0
    print(f"llama.cpp (llama-cpp-python {l['version']}, {args.threads} threads, last-row logits "
          "only in prefill):")
    print(f"  prefill {l['prefill_tokens_per_s']:8.1f} tokens/s")
    print(f"  decode  {l['decode_tokens_per_s']:8.1f} tokens/s")
    print("  verify pass of k+1 tokens (logits for every row) / one decode step:")
    print("    " + "  ".join(f"k={v['k']}: {v['relative_to_decode']:.2f}x" for v in l["verify"]))
    print("ratio CpuLlama / llama.cpp:  prefill "
          f"{o['prefill_tokens_per_s'] / l['prefill_tokens_per_s']:.2f}x, decode "
          f"{o['decode_tokens_per_s'] / l['decode_tokens_per_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
