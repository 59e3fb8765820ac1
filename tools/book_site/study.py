"""What the book's studies share (tools/study_lab07, tools/study_results): `speclab bench` runs
saved as CSV files under data/study/NAME/, a note of when and on what machine they ran, and the
three commands `run`, `render` and `check`. The chapter's tables live between
`<!-- PREFIX:NAME -->` markers (generated.py) and are rendered from the saved files only."""
import argparse
import csv
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import generated

ROOT = Path(__file__).resolve().parent.parent.parent


def read_csv(data, name, columns=()):
    """The rows of data/NAME.csv as dicts. Exits with a message when the file is missing, is not
    UTF-8 CSV, or lacks one of `columns`."""
    path = data / f"{name}.csv"
    if not path.is_file():
        sys.exit(f"{path} is missing: run the study's `run` command first")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = reader.fieldnames or []
    except (UnicodeDecodeError, csv.Error) as e:
        sys.exit(f"{path} is not UTF-8 CSV ({e}): run the study's `run` command again")
    for column in columns:
        if column not in header:
            sys.exit(f"{path} has no column '{column}': run the study's `run` command again")
    return rows


def read_meta(data, keys=()):
    """data/meta.json, which `run` writes. Exits with a message when it is missing, is not a JSON
    object, or lacks one of `keys`."""
    path = data / "meta.json"
    if not path.is_file():
        sys.exit(f"{path} is missing: run the study's `run` command first")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        sys.exit(f"{path} is not valid JSON ({e}): run the study's `run` command again")
    if not isinstance(meta, dict):
        sys.exit(f"{path} is not a JSON object: run the study's `run` command again")
    for key in keys:
        if key not in meta:
            sys.exit(f"{path} has no '{key}': run the study's `run` command again")
    return meta


def number(value, where, what):
    """float(value), or an exit naming `where` (the file) and `what` (the field) when it is not a
    finite number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = float("nan")
    if not math.isfinite(x):
        sys.exit(f"{where}: '{what}' is not a number ({value!r}): run the study's `run` command "
                 "again")
    return x


def plural(n, noun):
    """'1 thread', '2 threads': a count with its noun, singular only for one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def cpu_description():
    """The CPU as /proc/cpuinfo names it, with its family and model and the widest integer dot
    product it offers (what the CPU kernels use), e.g. 'AMD EPYC (family 26, model 2, AVX-512
    VNNI), 2 cores'. Just the core count where /proc/cpuinfo is missing."""
    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        return f"{os.cpu_count()} CPU cores"
    flags = set(info.get("flags", "").split())
    isa = ("AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-VNNI" if "avx_vnni" in flags
           else "AVX2" if "avx2" in flags else "no AVX2")
    name = info.get("model name", "unknown CPU")
    return (f"{name} (family {info.get('cpu family', '?')}, model {info.get('model', '?')}, "
            f"{isa}), {os.cpu_count()} cores")


def gpu_description():
    """The GPU as nvidia-smi names it, with its driver, and the host's CPU, e.g. 'NVIDIA H100
    80GB HBM3 (driver 580.159.04); host Intel(R) Xeon(R) Processor (...), 16 cores'."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             check=True).stdout.splitlines()[0]
        name, driver = (x.strip() for x in out.split(","))
        gpu = f"{name} (driver {driver})"
    except (OSError, subprocess.CalledProcessError, IndexError, ValueError):
        gpu = "an NVIDIA GPU"
    return f"{gpu}; host {cpu_description()}"


def round_trips(csv_paths):
    """The lowest and highest cross-core round trips (ns) around every case of the benches, from
    their CSVs' core_round_trip_ns_min / _max columns (empty where not measured)."""
    found = []
    for path in csv_paths:
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                for key in ("core_round_trip_ns_min", "core_round_trip_ns_max"):
                    if row.get(key):
                        found.append(float(row[key]))
    return found


def round_trip_text(meta):
    """', cross-core round trip 79 to 372 ns' from meta.json, or '' for data measured before the
    bench recorded it."""
    trips = meta.get("core_round_trip_ns")
    if not trips:
        return ""
    lo, hi = (round(t) for t in trips)
    return f", cross-core round trip {lo} ns" if lo == hi else \
        f", cross-core round trip {lo} to {hi} ns"


def run_benches(speclab, runs, data, threads, lab_impl, device="cpu", tools=None):
    """Runs `speclab bench --model smollm2 --device DEVICE --threads THREADS ARGS` for each
    NAME: ARGS of `runs` and saves its CSV as data/NAME.csv, with data/meta.json. An argument
    `@FILE` in ARGS names a further file the bench writes (`--tokens @tokens.jsonl`), saved as
    data/FILE. `tools` maps a FILE to a function (folder, threads, speclab) -> argv of a program run after
    the benches, whose standard output is saved as data/FILE; `folder` holds the benches' files.
    The files are replaced only when every program has succeeded; otherwise this exits and the
    saved data stays as it was."""
    if not Path(speclab).is_file():
        sys.exit(f"{speclab} is missing: build first (cmake --build build)")
    tools = tools or {}
    data.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.pop("LAB_IMPL", None)
    if lab_impl:
        env["LAB_IMPL"] = lab_impl
    load = os.getloadavg()[0]
    start = datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(dir=data.parent, prefix=f".{data.name}-") as tmp:
        side_files = [a[1:] for args in runs.values() for a in args if a.startswith("@")]
        for name, args in runs.items():
            cmd = [str(speclab), "bench", "--model", "smollm2", "--device", device,
                   "--threads", str(threads),
                   "--no-progress", "--csv", str(Path(tmp) / f"{name}.csv"), "--json", "",
                   *(str(Path(tmp) / a[1:]) if a.startswith("@") else a for a in args)]
            print("+", " ".join(cmd), flush=True)
            if subprocess.run(cmd, env=env).returncode != 0:
                sys.exit(f"the bench for '{name}' failed (see above); {data} is unchanged")
        for name, argv_of in tools.items():
            cmd = [str(a) for a in argv_of(Path(tmp), threads, Path(speclab))]
            print("+", " ".join(cmd), ">", name, flush=True)
            with open(Path(tmp) / name, "w", encoding="utf-8") as out:
                if subprocess.run(cmd, env=env, stdout=out).returncode != 0:
                    sys.exit(f"'{cmd[0]}' for {name} failed (see above); {data} is unchanged")
        minutes = (datetime.datetime.now(datetime.timezone.utc) - start).total_seconds() / 60
        meta = {
            "date": start.strftime("%Y-%m-%d"),
            "machine": gpu_description() if device == "cuda" else cpu_description(),
            "device": device,
            "lab_impl": lab_impl or "solution",
            "threads": threads,
            "load_before": f"{load:.1f}",
            "minutes": minutes,
        }
        trips = round_trips([Path(tmp) / f"{name}.csv" for name in runs])
        if trips:  # where the host had put the two CPUs (speclab bench's cross-core round trip)
            meta["core_round_trip_ns"] = [min(trips), max(trips)]
        for name in [f"{n}.csv" for n in runs] + side_files + list(tools):
            shutil.move(str(Path(tmp) / name), str(data / name))
        (data / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def main(doc, *, chapter, data, prefix, renderers, runs, threads, threads_help, devices=None,
         sets=None):
    """The study's command line: `run` (bench, save, render), `render` and `check`. `devices`
    maps another --device of `run` (e.g. "cuda") to its own (data folder, runs); the default
    device, cpu, uses `data` and `runs`. `sets` maps a name for `run --set` to another (data
    folder, runs) measured on the CPU, e.g. the same bench on a second kind of CPU, or to (data
    folder, runs, tools) with further programs to run (run_benches)."""
    devices = {"cpu": (data, runs), **(devices or {})}
    sets = sets or {}
    tool = f"tools/{Path(sys.argv[0]).name}"

    def rendered():
        return generated.filled(chapter, prefix, renderers)

    def render(_a):
        chapter.write_text(rendered(), encoding="utf-8")
        print(f"wrote the study tables into {chapter.relative_to(ROOT)}")
        return 0

    def check(_a):
        folders = sorted({str(d.relative_to(ROOT)) + "/" for d, *_ in
                          [(data,), *devices.values(), *sets.values()]})
        return generated.check(chapter, rendered(), ", ".join(folders),
                               f"`{tool} render` (or `run` to measure again)")

    def run(a):
        if not a.bin:
            p.error("--bin '': give the speclab binary (default build/bin/speclab)")
        if a.set and a.device != "cpu":
            p.error("--set measures on the CPU: give it without --device")
        set_data, set_runs, *set_tools = sets[a.set] if a.set else devices[a.device]
        run_benches(a.bin, set_runs, set_data, a.threads, a.lab_impl, a.device,
                    set_tools[0] if set_tools else None)
        return render(a)

    p = argparse.ArgumentParser(prog=tool, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the benches, save the CSVs, rewrite the tables")
    r.add_argument("--bin", default=str(ROOT / "build" / "bin" / "speclab"))
    r.add_argument("--threads", type=int, default=threads, help=threads_help)
    r.add_argument("--lab-impl", default="", help="solution (default) or starter")
    r.add_argument("--device", default="cpu", choices=sorted(devices),
                   help="where the model runs (default cpu); each device has its own data")
    if sets:
        r.add_argument("--set", default="", choices=sorted(sets),
                       help="measure this set instead of the main tables (on the CPU; each set "
                            "has its own data)")
    else:
        r.set_defaults(set="")
    r.set_defaults(fn=run)
    sub.add_parser("render", help="rewrite the tables from the saved CSVs").set_defaults(fn=render)
    sub.add_parser("check", help="exit 1 if the tables differ from the saved CSVs").set_defaults(
        fn=check)
    a = p.parse_args()
    return a.fn(a)
