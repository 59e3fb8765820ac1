#!/usr/bin/env python3
"""The figures book/lab07_real_model.md quotes from saved data: "What the tables say" from the
study in data/study/lab07/ (the tables themselves are generated: tools/study_lab07 check), and
what a draft position costs from lab 06's curves in data/cost_curves/ (computed as tools/cost_tables
computes them for lab 06's chapter). Prints CHAPTER<TAB>WHAT<TAB>PHRASE lines for
tests/book/check_quoted.py (ctest label `book`); a claim that does not hold prints what holds
instead. (The chapter's acceptance lengths on SmolLM2 need the model and depend on the CPU's
kernels: no check here.)"""
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "book_site"))
import study  # noqa: E402

DATA = ROOT / "data" / "study" / "lab07"


def load_cost_tables():
    """tools/cost_tables (a script without .py) as a module."""
    path = str(ROOT / "tools" / "cost_tables")
    loader = importlib.machinery.SourceFileLoader("cost_tables", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module
CHAPTER = "book/lab07_real_model.md"


def quote(what, phrase):
    print(f"{CHAPTER}\t{what}\t{phrase}")


def spread(values):
    return f"{min(values):.1f} to {max(values):.1f}"


def kv():
    al = {(int(r["n"]), int(r["k"])): float(r["tokens_per_run"])
          for r in study.read_csv(DATA, "kv")}
    keys = sorted({n for n, _ in al})
    vs = sorted({v for _, v in al})
    row = {n: [round(al[(n, v)], 2) for v in vs] for n in keys}
    upto6 = vs[:vs.index(6) + 1]
    rises = all(row[n][i] < row[n][i + 1] for n in keys for i in range(len(upto6) - 1))
    keeps = next((n for n in keys if all(row[m][-2] < row[m][-1] for m in keys if m >= n)), None)
    quote("AL against v at every key length",
          f"at every key length the AL {'rises' if rises else 'does not always rise'} from "
          f"$v = {vs[0]}$ to $v = 6$, and from $k = {keeps}$ on it keeps rising to $v = {vs[-1]}$")
    same = next(n for n in keys if all(row[m] == row[keys[-1]] for m in keys if m >= n))
    quote("the key length from which the table does not change",
          f"from $k = {same}$ on the table does not change at all")


def turns():
    def als(name):
        r = study.read_csv(DATA, name)[0]
        runs, emitted = int(r["target_runs"]), int(r["emitted"])
        runs2, emitted2 = int(r["target_runs_turn2plus"]), int(r["emitted_turn2plus"])
        return (emitted - emitted2) / (runs - runs2), emitted2 / runs2, emitted / runs

    public, private = als("turns_public"), als("turns_private")
    t1, t2, _ = public
    how = "well over twice" if t2 / t1 > 2.5 else f"{t2 / t1:.1f} times"
    quote("turn 2 against turn 1", f"The second turn's AL is {how} the first's ({t1:.2f} against "
          f"{t2:.2f})")
    same = [f"{x:.2f}" for x in public] == [f"{x:.2f}" for x in private]
    quote("public against private pool",
          f"Public and private pools give **{'identical' if same else 'different'}** numbers here")


def batch():
    rows = study.read_csv(DATA, "batch")
    by = {}
    for r in rows:
        by.setdefault(int(r["batch"]), {})[r["drafter"]] = r
    end_to_end = {b: [float(r["speedup_median"]) for r in d.values()] for b, d in by.items()}
    quote("end-to-end speed-ups by batch size",
          f"from about {spread(end_to_end[1])} end to end at batch 1 to about "
          f"{spread(end_to_end[4])} at batch 4 and {spread(end_to_end[32])} at batch 32")
    same_al = all(len({r["tokens_per_run"] for r in rows if r["drafter"] == d}) == 1
                  for d in {r["drafter"] for r in rows})
    quote("AL across batch sizes",
          f"at batch 32, with {'the same AL in every row' if same_al else 'ALs that differ'}")
    cost1 = [float(r["run_cost"]) for r in by[1].values()]
    cost_more = [float(r["run_cost"]) for b in by if b > 1 for r in by[b].values()]
    quote("run cost at batch 1 and from batch 4 on",
          f"costs about {spread(cost1)} plain steps at batch 1, but {spread(cost_more)} from "
          "batch 4 on")
    better = all(float(d["mine"]["speedup_median"]) > float(d["pool"]["speedup_median"])
                 for d in by.values())
    where = "at every batch size" if better else "not at every batch size"
    quote("mine against the pool", f"`mine` holds up better than the pool {where}")
    acc = {d: float(r["accepted"]) / float(r["drafted"]) for d, r in by[1].items()}
    quote("drafts accepted, mine against the pool",
          f"({acc['mine']:.0%} of its drafts accepted against {acc['pool']:.0%} for the pool at "
          f"$v = {by[1]['pool']['k']}$)")


def draft_costs():
    ct = load_cost_tables()
    one, two = ct.read_curve(ct.TABLES[0]), ct.read_curve(ct.TABLES[1])
    big, k7, k8 = [4, 8, 32], range(1, 8), range(1, 9)

    def span(curve, batches, ks):
        lo, hi = ct.per_draft(curve, batches, ks)
        return f"{lo:.2f} to {hi:.2f}"

    quote("one draft position on the 1-thread curve",
          f"({span(one, [1], k7)} for $k \\le 7$) and {span(one, big, k8)} from batch 4 on")
    quote("one draft position on the 2-thread curve",
          f"it adds {span(two, [1], k8)} of a step at batch 1 and {span(two, big, k8)} from batch "
          "4 on")


def main():
    draft_costs()
    kv()
    turns()
    batch()


if __name__ == "__main__":
    main()
