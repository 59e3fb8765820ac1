#!/usr/bin/env python3
"""How fast could speculative decoding be on this machine? Oracle drafters on recorded replies.

  build/bin/speclab bench --model smollm2 --threads 2 --workload code_edit,rag \\
      --drafter prompt-lookup --repeats 1 --csv '' --json '' --tokens out/tokens.jsonl
  build/bin/speclab_bench_model --model <gguf> --threads 2 --prompt 205 --kmax 16 --json \\
      > out/cost.json
  tools/ceiling.py --tokens out/tokens.jsonl --cost out/cost.json [--k 5,8,16] [--min-match 2]
  tools/ceiling.py --tokens out/tokens.jsonl --by-match

(--prompt: about the replies' mean context, prompt plus reply so far, since a pass costs more as
the context grows. `tools/study_results run --set ceiling` records both files that way, into
data/study/ceiling/, for the Results page's table.)

Greedy decoding emits the same reply whatever the drafter, so the replies that `bench --tokens`
recorded (at its default --temperature 0: sampled replies do not replay) can be replayed through
the decoding loop's rounds with a drafter that knows them. This tool does that for two oracles
and prices every round with the machine's measured costs:

  sa     the suffix automaton's draft (lab 05): what followed the first earlier occurrence of
         the longest suffix of the context that occurred before, when that suffix has at least
         --min-match tokens; each round drafts at most what will be accepted, and at most k.
         No real length policy does better with this drafter.
  copy   the longest run of the coming reply, at most k tokens, found anywhere in the context:
         no drafter whose draft is one contiguous piece of the context does better. (It does not
         bound drafters that draft tokens from elsewhere, such as NASD's filler_top_k tokens,
         which come from the target's own logits.) A loose bound: it always picks the right one
         of the many places where a common token occurs, so even text with little to copy
         reaches a speedup under it.

Each round drafts d tokens, all accepted, and costs c(d) decode steps: c(0) = 1 (a plain step)
and c(d) the measured verify pass over d + 1 tokens. The reply's last token always comes from
a verify pass (no round drafts past the reply). Of the rounds' lengths the oracle may choose,
it takes the cheapest schedule for the whole reply (a shortest path over its positions), not
simply the longest draft each round: on a measured cost curve a shorter draft sometimes costs
less per token, and so a larger k never reads below a smaller one. A turn's prefill costs the
tokens it adds to what the target already holds (the earlier turns of its conversation), at the
measured prefill rate.
Plain decoding is priced the same way: one step per reply token. The figures are a model: the
drafters' own time, the loop's bookkeeping and the machine's noise are left out, so compare a
bench's measured speedups with them, not the other way round.

--by-match prices nothing (no --cost): it counts, at every reply position whose context has an
earlier match, how often the token after the match's first occurrence is the reply's next
token, by match length (1 to 11, then 12 or more). That is how much a match of each length is
worth as evidence, the figures lab 05's chapter quotes for code_edit.

Standard library only. Exit status 2 with a message naming the file and line on bad input.
"""
import argparse
import json
import math
import sys

# Token ids become code points from here on, so that str.find does the substring searches.
_BASE = 0xE000


class InputError(Exception):
    pass


def _encode(tokens):
    return "".join(chr(_BASE + t) for t in tokens)


def load_cost(path):
    """{'step_ms', 'prefill_ms_per_token', 'c': [1.0, c(1), ..., c(kmax)], 'about'}."""
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except OSError as e:
        raise InputError(f"--cost '{path}': {e.strerror}")
    except UnicodeDecodeError:
        raise InputError(f"--cost '{path}': not UTF-8 text; give the output of "
                         "speclab_bench_model --json")
    except json.JSONDecodeError as e:
        raise InputError(f"--cost '{path}': not JSON ({e.msg}, line {e.lineno}); give the output "
                         "of speclab_bench_model --json")
    bad = f"--cost '{path}': not speclab_bench_model --json output"
    if not isinstance(j, dict):
        raise InputError(f"{bad} (not an object)")
    for key in ("decode_step_ms", "prefill_tokens_per_s", "verify"):
        if key not in j:
            raise InputError(f"{bad} (no '{key}')")
    if not isinstance(j["verify"], list) or not all(
            isinstance(v, dict) and "k" in v and "relative_to_decode" in v for v in j["verify"]):
        raise InputError(f"{bad} ('verify' must be a list of objects with k and "
                         "relative_to_decode)")
    if not j["verify"]:
        raise InputError(f"--cost '{path}': no verify passes in it")
    try:
        step = float(j["decode_step_ms"])
        prefill = float(j["prefill_tokens_per_s"])
        verify = [(v["k"], float(v["relative_to_decode"])) for v in j["verify"]]
    except (TypeError, ValueError) as e:
        raise InputError(f"{bad} ({e})")
    for k, _ in verify:
        if not isinstance(k, int) or isinstance(k, bool):
            raise InputError(f"--cost '{path}': a verify pass's k must be a whole number, "
                             f"got {k!r}")
    verify.sort()
    ks = [k for k, _ in verify]
    if ks != list(range(1, len(ks) + 1)):
        raise InputError(f"--cost '{path}': the verify passes must be k = 1, 2, ... in order, "
                         f"got k = {ks}")
    for name, value in [("decode_step_ms", step), ("prefill_tokens_per_s", prefill)] + [
            (f"verify k={k}", c) for k, c in verify]:
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"--cost '{path}': {name} must be a positive number, got {value}")
    about = f"{j.get('kernel', '?')}, {j.get('threads', '?')} threads"
    return {"step_ms": step, "prefill_ms_per_token": 1000.0 / prefill,
            "c": [1.0] + [c for _, c in verify], "about": about}


def load_turns(path):
    """The --tokens file's turns, in order: dicts with workload, id, turn, prompt, reply."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"--tokens '{path}': {e.strerror}")
    except UnicodeDecodeError:
        raise InputError(f"--tokens '{path}': not UTF-8 text")
    turns = []
    last_turn = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            t = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not JSON ({e.msg})")
        if not isinstance(t, dict):
            raise InputError(f"{where}: expected an object with workload, id, turn, prompt, reply")
        for key in ("workload", "id", "turn", "prompt", "reply"):
            if key not in t:
                raise InputError(f"{where}: no '{key}'")
        for key in ("workload", "id"):
            if not isinstance(t[key], str):
                raise InputError(f"{where}: '{key}' must be a string")
        if not isinstance(t["turn"], int) or isinstance(t["turn"], bool):
            raise InputError(f"{where}: 'turn' must be a whole number")
        for key in ("prompt", "reply"):
            ids = t[key]
            if (not isinstance(ids, list) or not ids or
                    not all(isinstance(x, int) and not isinstance(x, bool) and
                            0 <= x < 0x10FFFF - _BASE for x in ids)):
                raise InputError(f"{where}: '{key}' must be a non-empty list of token ids")
        # A later turn's prefill is priced from the turns before it (prefill_tokens), so a
        # conversation's turns must come in order.
        last = last_turn.get((t["workload"], t["id"]))
        if last is not None and t["turn"] <= last:
            raise InputError(f"{where}: turn {t['turn']} of conversation '{t['id']}' comes after "
                             f"its turn {last}")
        last_turn[(t["workload"], t["id"])] = t["turn"]
        turns.append(t)
    if not turns:
        raise InputError(f"--tokens '{path}': no turns in it; write it with speclab bench --tokens")
    return turns


def longest_earlier_suffix(ctx):
    """(length, start of what followed its first occurrence) of the longest suffix of ctx that
    also occurs ending before ctx's last position; (0, None) when even the last token is new."""
    n = len(ctx)
    best, follow = 0, None
    for length in range(1, n):
        at = ctx.find(ctx[n - length:], 0, n - 1)
        if at < 0:
            break
        best, follow = length, at + length
    return best, follow


def agree(a, b):
    """How many leading characters a and b share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def accepted(prompt, reply, k, oracle, min_match):
    """Per position p of the reply: how many of the coming tokens (at most k, and never the
    reply's last token, which comes from the target) the oracle's draft from prompt + reply[:p]
    gets accepted."""
    out = []
    for p in range(len(reply)):
        budget = min(k, len(reply) - p - 1)
        ctx = prompt + reply[:p]
        coming = reply[p:p + budget]
        d = 0
        if budget > 0 and oracle == "sa":
            length, follow = longest_earlier_suffix(ctx)
            if length >= min_match:
                d = agree(ctx[follow:follow + budget], coming)
        elif budget > 0:
            while d < budget and ctx.find(coming[:d + 1]) >= 0:
                d += 1
        out.append(d)
    return out


def cheapest_rounds(accepts, c, k):
    """The cheapest rounds over a reply whose position p accepts up to accepts[p] drafted tokens:
    a list of drafted-and-accepted counts, one per verify pass, each at most k. A round at p may
    draft any d <= min(accepts[p], k) (the oracle's first d tokens, all accepted) for c[d], so
    with a measured cost curve a shorter draft sometimes makes the reply cheaper; of equally
    cheap schedules, the one with the fewest rounds."""
    n = len(accepts)
    best = [(0.0, 0, 0)] * (n + 1)  # (cost, rounds, d of the first round) from position p on
    for p in range(n - 1, -1, -1):
        best[p] = min((c[d] + best[p + d + 1][0], 1 + best[p + d + 1][1], d)
                      for d in range(min(accepts[p], k) + 1))
    rounds, p = [], 0
    while p < n:
        rounds.append(best[p][2])
        p += best[p][2] + 1
    return rounds


def prefill_tokens(turns_of_conversation):
    """Per turn: the prompt tokens its prefill adds. The loops feed a prompt's last token in the
    first decode step, and a target keeps the longest common prefix of what it holds (after a
    reply: the prompt and the reply but its last token, which was never fed)."""
    held = ""
    out = []
    for t in turns_of_conversation:
        want = t["prompt"][:-1]
        out.append(len(want) - agree(held, want))
        held = (t["prompt"] + t["reply"])[:-1]
    return out


def analyse(turns, cost, ks, min_match):
    kmax = len(cost["c"]) - 1
    for k in ks:
        if k > kmax:
            raise InputError(f"--k {k}: the cost curve stops at k = {kmax}; measure it further "
                             f"(speclab_bench_model --kmax {k})")
    turns = [dict(t, prompt=_encode(t["prompt"]), reply=_encode(t["reply"])) for t in turns]
    workloads = {}
    conversations = {}
    for t in turns:
        workloads.setdefault(t["workload"], []).append(t)
        conversations.setdefault((t["workload"], t["id"]), []).append(t)
    prefill = {}
    for conv in conversations.values():
        for t, n in zip(conv, prefill_tokens(conv)):
            prefill[id(t)] = n
    step, per_prefill, c = cost["step_ms"], cost["prefill_ms_per_token"], cost["c"]
    result = []
    for name, ts in workloads.items():
        prefill_ms = sum(prefill[id(t)] for t in ts) * per_prefill
        reply_tokens = sum(len(t["reply"]) for t in ts)
        plain_decode = reply_tokens * step
        row = {"workload": name, "turns": len(ts), "reply_tokens": reply_tokens,
               "prefill_ms": prefill_ms, "plain_ms": prefill_ms + plain_decode, "oracles": []}
        # What each oracle's draft gets accepted at each position, at the largest k: a smaller k
        # cuts it.
        accepts = {oracle: {id(t): accepted(t["prompt"], t["reply"], max(ks), oracle, min_match)
                            for t in ts} for oracle in ("sa", "copy")}
        for oracle in ("sa", "copy"):
            for k in ks:
                rounds = [d for t in ts for d in cheapest_rounds(accepts[oracle][id(t)], c, k)]
                decode = sum(c[d] for d in rounds) * step
                row["oracles"].append({
                    "oracle": oracle, "k": k, "rounds": len(rounds),
                    "tokens_per_run": reply_tokens / len(rounds),
                    "spec_ms": prefill_ms + decode,
                    "speedup": (prefill_ms + plain_decode) / (prefill_ms + decode),
                    "decode_speedup": plain_decode / decode})
        result.append(row)
    return result


BY_MATCH_TOP = 12  # --by-match: matches this long or longer share one row


def by_match(turns):
    """Per workload: {match length (BY_MATCH_TOP stands for that or more): [positions, right]}
    over every reply position whose context (prompt + reply so far) has an earlier match; right
    when the token after the match's first occurrence is the reply's next token."""
    result = {}
    for t in turns:
        prompt, reply = _encode(t["prompt"]), _encode(t["reply"])
        rows = result.setdefault(t["workload"], {})
        for p in range(len(reply)):
            ctx = prompt + reply[:p]
            length, follow = longest_earlier_suffix(ctx)
            if length == 0:
                continue
            row = rows.setdefault(min(length, BY_MATCH_TOP), [0, 0])
            row[0] += 1
            row[1] += ctx[follow] == reply[p]
    return result


def print_by_match(result, out):
    print("the token after the first occurrence of the longest earlier match, against the "
          "reply's next token, at every reply position with a match", file=out)
    for workload, rows in result.items():
        print(f"workload {workload}", file=out)
        print(f"{'match':>6}{'positions':>11}{'right':>7}{'share':>7}", file=out)
        for length in sorted(rows):
            n, right = rows[length]
            name = f"{length}+" if length == BY_MATCH_TOP else str(length)
            print(f"{name:>6}{n:>11}{right:>7}{right / n:>7.0%}", file=out)


def print_table(result, cost, min_match, out):
    print(f"cost curve: decode step {cost['step_ms']:.2f} ms, prefill "
          f"{cost['prefill_ms_per_token']:.3f} ms/token, verify passes up to k = "
          f"{len(cost['c']) - 1} ({cost['about']})", file=out)
    print(f"oracles: sa (first occurrence, min match {min_match}) and copy (anywhere in the "
          "context), never past what is accepted, in the cheapest rounds", file=out)
    print(f"{'workload':<14}{'turns':>6}{'reply':>7}{'prefill':>9}  {'oracle':<7}{'k':>3}"
          f"{'AL':>7}{'speedup':>9}{'decode only':>13}", file=out)
    for row in result:
        share = row["prefill_ms"] / row["plain_ms"]
        for i, o in enumerate(row["oracles"]):
            head = (f"{row['workload']:<14}{row['turns']:>6}{row['reply_tokens']:>7}"
                    f"{share:>8.0%} " if i == 0 else " " * 36)
            print(f"{head} {o['oracle']:<7}{o['k']:>3}{o['tokens_per_run']:>7.2f}"
                  f"{o['speedup']:>8.2f}x{o['decode_speedup']:>12.2f}x", file=out)
    print("prefill: its share of the plain run. speedup: plain time / the oracle's, prefill "
          "included; decode only: without it. AL: reply tokens per verify pass.", file=out)


def parse_ks(text):
    try:
        ks = [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"--k '{text}': give comma-separated whole numbers, e.g. 5,8,16")
    if not ks or any(k < 1 for k in ks) or len(set(ks)) != len(ks):
        raise InputError(f"--k '{text}': each k must be at least 1, and given once")
    return ks


def write_json(path, value):
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)
    except OSError as e:
        raise InputError(f"--json '{path}': {e.strerror}")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="See the top of this file for how to record the two inputs.")
    ap.add_argument("--tokens", required=True, help="speclab bench --tokens output (JSON Lines)")
    ap.add_argument("--cost", help="speclab_bench_model --json output (not with --by-match)")
    ap.add_argument("--k", default="5,8,16", help="draft budgets, comma-separated (default 5,8,16)")
    ap.add_argument("--min-match", type=int, default=2,
                    help="the sa oracle drafts only after a match this long (default 2, as sa)")
    ap.add_argument("--json", help="also write the figures here as JSON")
    ap.add_argument("--by-match", action="store_true",
                    help="instead: how often the token after a match of each length was the "
                         "reply's next token (needs no --cost)")
    args = ap.parse_args(argv)
    try:
        if args.by_match:
            counts = by_match(load_turns(args.tokens))
            if args.json:
                write_json(args.json, {"by_match": {w: {str(n): {"positions": c[0], "right": c[1]}
                                                        for n, c in rows.items()}
                                                    for w, rows in counts.items()}})
            print_by_match(counts, sys.stdout)
            return 0
        if not args.cost:
            raise InputError("--cost is required (speclab_bench_model --json output; see the "
                             "top of this file), unless --by-match")
        if args.min_match < 1:
            raise InputError(f"--min-match must be at least 1, got {args.min_match}")
        ks = parse_ks(args.k)
        cost = load_cost(args.cost)
        turns = load_turns(args.tokens)
        result = analyse(turns, cost, ks, args.min_match)
        if args.json:
            write_json(args.json, {"cost": cost, "min_match": args.min_match,
                                   "workloads": result})
    except InputError as e:
        print(f"ceiling: {e}", file=sys.stderr)
        return 2
    print_table(result, cost, args.min_match, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
