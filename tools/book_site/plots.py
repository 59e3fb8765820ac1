"""Makes the book's figures and result tables from engine runs. Called by `tools/book build`.

    plots.py --speclab build/bin/speclab --out build/book/generated

Every number comes from `speclab trace` runs made here (one JSON line per verify round; the fields
are documented in tools/speclab/trace_record.h) or from a benchmark's output file. Writes:

    OUT/data/*.jsonl          the traces
    OUT/figures/NAME.svg      a figure
    OUT/figures/NAME.md       the Markdown a chapter includes for it (--8<-- "figures/NAME.md"):
                              the image and its caption, or a note saying why it is missing
    OUT/results_toy.md        the tables of book/results.md
    OUT/speedup_estimate.md   measured tokens per run over the modelled verify cost (economics)

The drafter-cost figure reads a CSV, one row per (drafter, context length):

    drafter,context_len,median_ns
    prompt-lookup(n=2),1024,812.5

`median_ns` is the median time of one propose + observe step at that context length, in
nanoseconds. The file is taken from --drafter-cost CSV if given, else made by running
`bench_drafter_scaling --csv CSV` when that binary sits next to speclab (lab 05's
benchmark). Without either, the figure is left out and its Markdown says so: no data is invented.

What a caption (or the chapter's prose around a figure) says about the data is checked against
the data as the figure is drawn: a claim the data contradict is named, with its numbers, and
plots.py fails after drawing everything, so the book is never built with a false caption.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({
    "svg.hashsalt": "speclab",  # stable element ids: the same data gives the same SVG
    "svg.fonttype": "none",     # text stays text and uses the page's fonts
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
})

MAX_NEW_TOKENS = 512
NGRAM = 2
SEEDS = (0, 1, 2)
KS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16)
# A workload is a toy regime and its noise (the chance a position breaks the regime's rule).
WORKLOADS = {
    "periodic": ("periodic", 0.0),         # a clean repeating pattern: the easy case
    "noisy periodic": ("periodic", 0.05),  # the pattern, broken at 5% of positions
    "markov": ("markov", 0.3),             # a few likely successors per token
    "random": ("random", 0.0),             # never repeats: the control, nothing to copy
}
DETAIL = ("noisy periodic", "markov")  # the two workloads the per-round figures compare
COLORS = {"periodic": "#3f51b5", "noisy periodic": "#00897b", "markov": "#e65100",
          "random": "#757575"}


# The claims the data contradicted (see claim()); main() fails when any is here.
CONTRADICTED: list[str] = []


def claim(holds: bool, figure: str, says: str, data: str) -> None:
    """Records `says`, a claim the book makes about `figure`, as contradicted unless it holds.
    `data`: the numbers it rests on, for the message."""
    if not holds:
        CONTRADICTED.append(f"{figure}: the book says '{says}', but the data: {data}")


class Runner:
    def __init__(self, speclab: Path, out: Path):
        self.speclab = speclab
        self.data = out / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.cache: dict[tuple[str, int, int], list[dict]] = {}

    def trace(self, workload: str, k: int, seed: int) -> list[dict]:
        key = (workload, k, seed)
        if key not in self.cache:
            self.cache[key] = self._run(workload, k, seed)
        return self.cache[key]

    def _run(self, workload: str, k: int, seed: int) -> list[dict]:
        regime, noise = WORKLOADS[workload]
        path = self.data / f"{workload.replace(' ', '_')}_k{k}_s{seed}.jsonl"
        args = [str(self.speclab), "trace", "--model", "toy", "--regime", regime,
                "--noise", str(noise), "--k", str(k), "--n", str(NGRAM),
                "--max-new-tokens", str(MAX_NEW_TOKENS), "--seed", str(seed), "--out", str(path)]
        # The book's figures come from the reference drafters, whatever LAB_IMPL says.
        env = {k: v for k, v in os.environ.items() if k != "LAB_IMPL"}
        subprocess.run(args, check=True, stderr=subprocess.DEVNULL, env=env)
        rounds = [json.loads(line) for line in path.read_text().splitlines()]
        if not rounds:
            raise SystemExit(f"plots: {path} is empty")
        return rounds


def summarize(rounds: list[dict]) -> dict:
    emitted = sum(len(r["emitted"]) for r in rounds)
    drafted = sum(len(r["draft"]) for r in rounds)
    accepted = sum(r["accepted"] for r in rounds)
    # Modelled time in one-token passes: a round that verifies d drafts costs c(d).
    cost = sum(verify_cost(len(r["draft"])) for r in rounds)
    return {"runs": len(rounds), "emitted": emitted, "drafted": drafted, "accepted": accepted,
            "tpr": emitted / len(rounds),
            "acceptance": accepted / drafted if drafted else 0.0,
            "speedup": emitted / cost}


def write_figure(fig, out: Path, name: str, alt: str, caption: str) -> None:
    figures = out / "figures"
    fig.savefig(figures / f"{name}.svg", format="svg", bbox_inches="tight",
                metadata={"Date": None, "Creator": "SpecLab tools/book_site/plots.py"})
    plt.close(fig)
    (figures / f"{name}.md").write_text(
        f'<figure markdown="span">\n  ![{alt}](figures/{name}.svg)\n'
        f'  <figcaption markdown="span">{caption}</figcaption>\n</figure>\n')


def write_missing(out: Path, name: str, title: str, why: str) -> None:
    (out / "figures" / f"{name}.md").write_text(
        f'!!! note "Figure not built: {title}"\n    {why}\n')


def plot_accept_hist(runner: Runner, out: Path, k: int) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    width = 0.4
    seen = {}
    for j, regime in enumerate(DETAIL):
        counts = [0] * (k + 1)
        no_draft = 0
        total = 0
        drafted = accepted = 0
        for seed in SEEDS:
            for r in runner.trace(regime, k, seed):
                total += 1
                if not r["draft"]:
                    no_draft += 1
                else:
                    counts[r["accepted"]] += 1
                    drafted += len(r["draft"])
                    accepted += r["accepted"]
        xs = [a + (j - 0.5) * width for a in range(k + 1)]
        ax.bar(xs, [c / total for c in counts], width, color=COLORS[regime],
               label=f"{regime}: draft proposed")
        ax.bar(xs[0], no_draft / total, width, bottom=counts[0] / total, color=COLORS[regime],
               alpha=0.35, hatch="//", label=f"{regime}: no draft (plain step)")
        seen[regime] = {"rounds": total, "drafting": total - no_draft, "full": counts[k],
                        "drafted": drafted, "accepted": accepted}
    ax.set_xticks(range(k + 1))
    ax.set_xlabel("drafts accepted in a round")
    ax.set_ylabel("fraction of rounds")
    ax.set_title(f"Acceptance length histogram (prompt lookup n={NGRAM}, k={k})")
    ax.legend(fontsize=8, frameon=False)
    noisy, markov = seen["noisy periodic"], seen["markov"]
    claim(2 * noisy["full"] > noisy["drafting"], "accept_hist",
          f"With noisy periodic text, most rounds that do draft keep all {k} drafts",
          f"{noisy['full']} of its {noisy['drafting']} drafting rounds kept all {k}")
    claim(3 * markov["drafting"] < markov["rounds"], "accept_hist",
          "Markov text rarely offers a match",
          f"{markov['drafting']} of its {markov['rounds']} rounds drafted")
    claim(2 * markov["accepted"] < markov["drafted"], "accept_hist",
          "[Markov text's] drafts are mostly rejected",
          f"{markov['accepted']} of its {markov['drafted']} drafts were accepted")
    write_figure(fig, out, "accept_hist",
                 "Bar chart: fraction of rounds by number of accepted drafts",
                 f"How many drafts each verify round kept, on the toy target (k = {k}, "
                 f"{MAX_NEW_TOKENS} tokens, seeds {', '.join(map(str, SEEDS))}). Hatched: rounds "
                 f"where the drafter found no earlier match, so the round was a plain decode "
                 f"step. With noisy periodic text, most rounds that do draft keep all {k} "
                 f"drafts; each noisy token costs a rejected draft and a couple of plain steps "
                 f"until the last {NGRAM} tokens occur earlier again. Markov text rarely offers a "
                 f"match, and its drafts are mostly rejected.")


def plot_acceptance_by_position(runner: Runner, out: Path, k: int) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    positions = list(range(1, k + 1))
    for regime in DETAIL:
        drafted = [0] * k
        kept = [0] * k
        for seed in SEEDS:
            for r in runner.trace(regime, k, seed):
                for i in range(len(r["draft"])):
                    drafted[i] += 1
                    if r["accepted"] > i:
                        kept[i] += 1
        rate = [kept[i] / drafted[i] if drafted[i] else float("nan") for i in range(k)]
        ax.plot(positions, rate, "o-", color=COLORS[regime], label=f"{regime}: measured")
        alpha = rate[0]
        ax.plot(positions, [alpha ** i for i in positions], ":", color=COLORS[regime],
                label=f"{regime}: $\\alpha^i$ with $\\alpha$ = {alpha:.2f}")
        gap = max(abs(rate[i - 1] - alpha ** i) for i in positions)
        claim(gap <= 0.1, "acceptance_by_position",
              "On the toy workloads the geometric model fits closely (book/economics.md)",
              f"{regime}'s measured rate is {gap:.2f} from alpha^i at some position")
    ax.set_xticks(positions)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("draft position i")
    ax.set_ylabel("P(drafts 1..i all accepted)")
    ax.set_title(f"Per-position acceptance (prompt lookup n={NGRAM}, k={k})")
    ax.legend(fontsize=8, frameon=False)
    write_figure(fig, out, "acceptance_by_position",
                 "Line chart: acceptance rate by draft position",
                 f"The share of rounds with a draft at position i whose drafts 1..i were all "
                 f"accepted (solid), against the geometric decay $\\alpha^i$ that independent "
                 f"per-token acceptance would give, with $\\alpha$ the measured rate at "
                 f"position 1 (dotted), k = {k}.")


def plot_tokens_per_run(runner: Runner, out: Path) -> dict:
    table: dict[str, dict[int, dict]] = defaultdict(dict)
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for regime in WORKLOADS:
        for k in KS:
            runs = [summarize(runner.trace(regime, k, seed)) for seed in SEEDS]
            table[regime][k] = {key: statistics.mean(r[key] for r in runs) for key in runs[0]}
        ax.plot(KS, [table[regime][k]["tpr"] for k in KS], "o-", color=COLORS[regime],
                label=regime)
    ax.plot(KS, [k + 1 for k in KS], "--", color="black", linewidth=0.8, label="ceiling k + 1")
    tpr = {regime: [table[regime][k]["tpr"] for k in KS] for regime in WORKLOADS}
    shown = {regime: ", ".join(f"{t:.2f}" for t in tpr[regime]) for regime in WORKLOADS}
    ks = ", ".join(map(str, KS))
    figure = "tokens_per_run_vs_k"
    claim(all(a < b for a, b in zip(tpr["periodic"], tpr["periodic"][1:])), figure,
          "Clean periodic text keeps gaining from longer drafts",
          f"periodic at k = {ks}: {shown['periodic']}")
    claim(all(t < k + 1 for t, k in zip(tpr["periodic"], KS)), figure,
          "[periodic text] stays under the ceiling k+1 (book/economics.md)",
          f"periodic at k = {ks}: {shown['periodic']}")
    claim(all(n < p for n, p in zip(tpr["noisy periodic"][1:], tpr["periodic"][1:])), figure,
          "noise bends the curve",
          f"noisy periodic {shown['noisy periodic']} against periodic {shown['periodic']}")
    claim(tpr["markov"][-1] - tpr["markov"][1] < 0.1, figure,
          "Markov text saturates almost at once", f"markov at k = {ks}: {shown['markov']}")
    claim(all(t == 1.0 for t in tpr["random"]), figure, "random text never gains",
          f"random at k = {ks}: {shown['random']}")
    ax.set_xlabel("k (drafts per round)")
    ax.set_ylabel("tokens per run")
    ax.set_xticks(KS)
    ax.set_title(f"Tokens per target run vs k (prompt lookup n={NGRAM})")
    ax.legend(fontsize=8, frameon=False)
    write_figure(fig, out, "tokens_per_run_vs_k",
                 "Line chart: tokens per target run against k for four workloads",
                 f"Mean tokens per target run (the acceptance length) as k grows, "
                 f"{MAX_NEW_TOKENS} tokens, mean of seeds {', '.join(map(str, SEEDS))}. "
                 f"Clean periodic text keeps gaining from longer drafts; noise bends the curve; "
                 f"Markov text saturates almost at once; random text never gains.")
    return table


# The CPU cost model of book/why_speculation.md: a pass that scores t positions of SmolLM2-135M
# takes max(B / beta, t * F / pi). Round numbers for a two-core laptop, stated in the chapter.
MODEL_BYTES = 97e6        # B: weights read per pass (Q4_1 layers, Q8_0 embedding)
MODEL_FLOP = 0.269e9      # F: FLOP per scored position
CPU_BANDWIDTH = 15e9      # beta: bytes per second
CPU_FLOPS = 100e9         # pi: FLOP per second


def verify_cost(k: int) -> float:
    """c(k): the time of a pass over k + 1 positions, in units of a one-token pass."""
    def t(n: int) -> float:
        return max(MODEL_BYTES / CPU_BANDWIDTH, n * MODEL_FLOP / CPU_FLOPS)
    return t(k + 1) / t(1)


def plot_speedup_estimate(out: Path, table: dict) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for regime in WORKLOADS:
        ax.plot(KS, [table[regime][k]["speedup"] for k in KS], "o-",
                color=COLORS[regime], label=regime)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    claim(all(table["random"][k]["speedup"] == 1.0 for k in KS), "speedup_estimate",
          "random text breaks even instead of losing (book/economics.md)",
          ", ".join(f"{table['random'][k]['speedup']:.2f}x" for k in KS))
    claim(table["markov"][KS[-1]]["speedup"] < 1.0, "speedup_estimate",
          "A fixed large k loses on Markov-like text (book/economics.md)",
          f"markov at k = {KS[-1]}: {table['markov'][KS[-1]]['speedup']:.2f}x")
    ax.set_xlabel("k (drafts per round)")
    ax.set_ylabel("estimated speed-up")
    ax.set_xticks(KS)
    ax.set_title("Measured tokens per run / modelled verify cost (2-core CPU)")
    ax.legend(fontsize=8, frameon=False)
    write_figure(fig, out, "speedup_estimate",
                 "Line chart: estimated speed-up against k for four workloads",
                 "Estimated speed-up over plain decoding: the tokens emitted in the toy-target "
                 "runs divided by the modelled time of their verify passes, each pass costing "
                 "c(d) for the d drafts it actually verified (SmolLM2-135M on a two-core CPU, "
                 "drafting time neglected). Below the dashed line speculation "
                 "loses. A model, not a measurement: the real-model lab replaces c(k) with "
                 "measured times.")
    lines = ["| k | c(k) for a full draft | " + " | ".join(WORKLOADS) + " |",
             "|---:|---:|" + "---:|" * len(WORKLOADS)]
    for k in KS:
        cells = " | ".join(f"{table[r][k]['speedup']:.2f}x" for r in WORKLOADS)
        lines.append(f"| {k} | {verify_cost(k):.2f} | {cells} |")
    (out / "speedup_estimate.md").write_text("\n".join(lines) + "\n")


def drafter_cost_csv(speclab: Path, given: Path | None, out: Path) -> Path | None:
    if given is not None:
        if not given.is_file():
            raise SystemExit(f"plots: --drafter-cost {given} does not exist")
        return given
    # Lab 05's scaling bench sits next to speclab in build/bin (15-30 s).
    bench = speclab.parent / "bench_drafter_scaling"
    if not bench.is_file():
        return None
    path = out / "data" / "drafter_cost.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(bench), "--csv", str(path)], check=True, stdout=subprocess.DEVNULL)
    return path


def plot_drafter_cost(speclab: Path, given: Path | None, out: Path) -> None:
    name, title = "drafter_cost", "drafter cost vs context length"
    path = drafter_cost_csv(speclab, given, out)
    if path is None:
        write_missing(out, name, title,
                      "This figure plots lab 05's benchmark (`build/bin/bench_drafter_scaling "
                      "--csv`), which is not built; the book does not invent the numbers.")
        return
    series: dict[str, list[tuple[int, float]]] = defaultdict(list)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = {"drafter", "context_len", "median_ns"} - set(reader.fieldnames or [])
        if missing:
            raise SystemExit(f"plots: {path} lacks the columns {sorted(missing)}")
        for row in reader:
            series[row["drafter"]].append((int(row["context_len"]), float(row["median_ns"])))
    if not series:
        raise SystemExit(f"plots: {path} has no rows")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    for points in series.values():
        points.sort()
    growth = {d: p[-1][1] / p[0][1] for d, p in series.items() if p[0][1] > 0}
    scans = [d for d in growth if "prompt lookup" in d]
    for scan in scans:
        for other in growth.keys() - set(scans):
            # Measured times: a factor of 2 leaves room for a noisy machine (the scan grew about
            # 100x over 1k..128k tokens on the machines seen, the others 2 to 3x).
            claim(growth[other] * 2 < growth[scan], name,
                  "A scan grows with the context; the pool and the suffix automaton grow far "
                  "more slowly",
                  f"{scan} grew {growth[scan]:.1f}x over its contexts, {other} {growth[other]:.1f}x")
    for drafter, points in sorted(series.items()):
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", label=drafter)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("median ns per propose + observe")
    ax.set_title("Drafter cost vs context length")
    ax.legend(fontsize=8, frameon=False)
    write_figure(fig, out, name, "Log-log chart: drafter cost per step against context length",
                 "Median cost of one drafting step as the context grows (lab 05's benchmark). "
                 "A scan grows with the context; the pool and the suffix automaton grow far more "
                 "slowly, and only through memory latency (see lab 05).")


def write_results(out: Path, table: dict) -> None:
    lines = [
        f"Toy target, prompt lookup with n = {NGRAM}, greedy decoding of {MAX_NEW_TOKENS} "
        f"tokens, mean over seeds {', '.join(map(str, SEEDS))}. Plain decoding needs "
        f"{MAX_NEW_TOKENS} target runs for the same output.",
        "",
        "| workload | k | target runs | tokens per run | drafted | accepted | acceptance rate "
        "| runs saved vs plain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for regime in WORKLOADS:
        for k, s in table[regime].items():
            saved = 1 - s["runs"] / MAX_NEW_TOKENS
            # Nothing drafted has no acceptance rate: 0.0% would read as every draft rejected.
            rate = f"{100 * s['acceptance']:.1f}%" if s["drafted"] else "–"
            lines.append(f"| {regime} | {k} | {s['runs']:.1f} | {s['tpr']:.2f} | "
                         f"{s['drafted']:.1f} | {s['accepted']:.1f} | {rate} | "
                         f"{100 * saved:.1f}% |")
    noises = ", ".join(f"{name} = `--regime {r} --noise {n}`" for name, (r, n) in WORKLOADS.items())
    lines += ["", f"The workloads are {noises}. Each row is made by runs such as:", "", "```sh",
              f"speclab trace --model toy --regime markov --noise 0.3 --k 5 --n {NGRAM} "
              f"--max-new-tokens {MAX_NEW_TOKENS} --seed 0 --out markov_k5_s0.jsonl", "```", ""]
    (out / "results_toy.md").write_text("\n".join(lines))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speclab", type=Path, required=True, help="the speclab binary")
    parser.add_argument("--out", type=Path, required=True, help="folder for data and figures")
    parser.add_argument("--drafter-cost", type=Path, help="CSV from lab 05's benchmark")
    args = parser.parse_args()
    if not args.speclab.is_file():
        print(f"plots: {args.speclab} not found; build it first (cmake --build build)",
              file=sys.stderr)
        return 1
    (args.out / "figures").mkdir(parents=True, exist_ok=True)
    runner = Runner(args.speclab, args.out)
    plot_accept_hist(runner, args.out, k=5)
    plot_acceptance_by_position(runner, args.out, k=8)
    table = plot_tokens_per_run(runner, args.out)
    plot_speedup_estimate(args.out, table)
    plot_drafter_cost(args.speclab, args.drafter_cost, args.out)
    write_results(args.out, table)
    if CONTRADICTED:
        print("plots: the data contradict what the book says about them (if the data are "
              "right, change the caption in tools/book_site/plots.py or the chapter):",
              file=sys.stderr)
        for line in CONTRADICTED:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"plots: figures and tables in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
