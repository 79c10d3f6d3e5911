"""Throughput of the C-sets job against its floor and a naive baseline, side by side.

    python benchmarks/csets_throughput.py [--quads 2000000] [--files 8] [--scales 1,2,4]

1. Generates a synthetic WDC corpus shaped on the bundled real sample: whole real pages are
   replayed under new page URLs (domains drawn from a Zipf law), with page-scoped IRIs and blank
   nodes renamed, so quads per page, subjects per page, blank-node share, types, properties and
   literals (escapes, language tags, datatypes) follow the real distributions; about one line in
   10^4 is malformed. Several gzip files per corpus.
2. For each scale (1x, 2x, 4x the corpus) it measures, on the same files:
   - the floor: `zcat` of all files in parallel (one process per core) to /dev/null;
   - the job: `spark-submit jobs/csets.py` (local[*]) wall time, JVM and Python driver peak RSS;
   - the naive baseline: one Python process, a per-line regex into a dict of sets (1x only by
     default, it is slow), with its peak RSS.
3. Prints one table: quads/s per core, job / zcat ratio, job / naive per-core ratio, memory, and
   how time and memory grow with the input. Also writes the figures as JSON (--json).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

from udfs.runtime.cli import ArgumentParser

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "data" / "wdc" / "wdc-2022-12-jsonld-part00044-first10k.nq"
LINE = re.compile(r"^(\S+)\s+(\S+)\s+(.+)\s+(<[^>]*>)\s+\.\s*$")


# ---- corpus ------------------------------------------------------------------------------------
def real_pages() -> list[list[tuple[str, str, str]]]:
    pages: dict[str, list] = defaultdict(list)
    for line in REAL.read_text(encoding="utf-8").splitlines():
        m = LINE.match(line)
        if m:
            s, p, o, g = m.groups()
            pages[g[1:-1]].append((s, p, o))
    return [[(s, p, o) for s, p, o in quads] + [("__page__", url, "")] for url, quads in pages.items()]


def render_page(template, page_id: str, rng: random.Random, n_domains: int) -> list[str]:
    old_url = template[-1][1]
    dom = min(int(rng.paretovariate(1.2)), n_domains)
    new_url = f"http://site{dom}.example.org/p/{page_id}.html"
    g = f"<{new_url}>"
    out = []
    for s, p, o in template[:-1]:
        if s.startswith("_:"):
            s = f"{s}p{page_id}"
        else:
            s = s.replace(old_url, new_url)
        if o.startswith("_:"):
            o = f"{o}p{page_id}"
        elif o.startswith("<"):
            o = o.replace(old_url, new_url)
        line = f"{s} {p} {o} {g}   ."
        r = rng.random()
        if r < 0.00005:
            line = line[: len(line) // 2]  # truncated
        elif r < 0.0001:
            line = line.replace('"', "", 1) if '"' in line else line + " <x"  # unbalanced
        out.append(line)
    return out


def _write_file(job: tuple) -> int:
    """One gzip file of about ``quads`` quads: whole pages, ids ``<file>_<page>`` (unique)."""
    path, file_no, quads, n_domains, seed = job
    rng = random.Random(seed * 1_000_003 + file_no)
    templates = real_pages()
    n = page = 0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
        while n < quads:
            lines = render_page(rng.choice(templates), f"{file_no}_{page}", rng, n_domains)
            page += 1
            fh.write("\n".join(lines) + "\n")
            n += len(lines)
    return n


def make_corpus(folder: Path, quads: int, files: int, seed: int = 7) -> tuple[list[Path], int]:
    """``files`` gzip files, written in parallel (one process per core), each from its own seed."""
    folder.mkdir(parents=True, exist_ok=True)
    n_domains = max(10, quads // 400)
    paths = [folder / f"part-{i:05d}.nq.gz" for i in range(files)]
    jobs = [(path, i, quads // files, n_domains, seed) for i, path in enumerate(paths)]
    with multiprocessing.Pool(os.cpu_count() or 1) as pool:
        written = sum(pool.map(_write_file, jobs, chunksize=1))
    return paths, written


# ---- measuring ---------------------------------------------------------------------------------
def _tree_rss_peaks(root_pid: int, stop: threading.Event, peaks: dict) -> None:
    """Poll the process tree: peak RSS per command kind (java, python)."""
    while not stop.is_set():
        pids = [root_pid]
        try:
            children = subprocess.run(
                ["ps", "-o", "pid=,rss=,comm=", "--ppid", str(root_pid)], capture_output=True, text=True
            ).stdout
        except OSError:
            children = ""
        rows = [ln.split(None, 2) for ln in children.splitlines() if ln.strip()]
        try:
            own = subprocess.run(
                ["ps", "-o", "pid=,rss=,comm=", "-p", str(root_pid)], capture_output=True, text=True
            ).stdout
            rows += [ln.split(None, 2) for ln in own.splitlines() if ln.strip()]
        except OSError:
            pass
        for pid, rss, comm in rows:
            kind = "java" if "java" in comm else "python" if "python" in comm else comm
            peaks[kind] = max(peaks.get(kind, 0), int(rss) * 1024)
            pids.append(int(pid))
        stop.wait(0.2)


def children_cpu() -> float:
    """CPU seconds (user + system) of every waited-for child process so far: a per-core rate from
    CPU time stays meaningful on a machine shared with other work, where wall time does not."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_measured(cmd: list[str], **kw) -> tuple[float, dict, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    peaks: dict = {}
    stop = threading.Event()
    th = threading.Thread(target=_tree_rss_peaks, args=(proc.pid, stop, peaks), daemon=True)
    th.start()
    out, err = proc.communicate()
    wall = time.monotonic() - t0
    stop.set()
    th.join()
    res = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} failed ({proc.returncode}):\n{err[-3000:]}")
    return wall, peaks, res


def zcat_floor(files: list[Path], cores: int) -> float:
    t0 = time.monotonic()
    subprocess.run(
        f"printf '%s\\n' {' '.join(map(str, files))} | xargs -P {cores} -n 1 sh -c 'zcat \"$0\" > /dev/null'",
        shell=True,
        check=True,
    )
    return time.monotonic() - t0


NAIVE = r"""
import gzip, re, sys, resource
line_re = re.compile(r'^(<[^>]*>|_:\S+)\s+(<[^>]*>)\s+(.+)\s+(<[^>]*>)\s+\.\s*$')
sets = {}
n = 0
for f in sys.argv[1:]:
    with gzip.open(f, "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = line_re.match(line)
            if not m:
                continue
            s, p, o, g = m.groups()
            key = (g, s) if s.startswith("_:") else s
            tok = "isa:" + o if p.endswith("#type>") else p
            sets.setdefault(key, set()).add(tok)
            n += 1
csets = {}
for toks in sets.values():
    k = " ".join(sorted(toks))
    csets[k] = csets.get(k, 0) + 1
print(n, len(sets), len(csets), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def linear_fit(x: list[float], y: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x: (a, b)."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    b = sum((xi - mx) * (yi - my) for xi, yi in zip(x, y)) / sum((xi - mx) ** 2 for xi in x)
    return my - b * mx, b


FULL_RELEASE_QUADS = 61.1e9  # WDC 2023-12 JSON-LD, 8,897 files


def arguments() -> argparse.Namespace:
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quads", type=int, default=2_000_000, help="quads in the 1x corpus")
    ap.add_argument("--files", type=int, default=8, help="gzip files in the 1x corpus")
    ap.add_argument("--scales", default="1,2,4", help="corpus multiples to run")
    ap.add_argument("--naive-scales", default="1", help="multiples on which to run the naive baseline")
    ap.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="job runs per scale; the fastest counts (the least disturbed by other work)",
    )
    ap.add_argument("--workdir", default=None, help="where corpora and outputs go (default: a temp dir, removed)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    return ap.parse_args()


def measure_scale(scale: int, args: argparse.Namespace, job: list[str], env: dict, work: Path, cores: int) -> dict:
    """One row of the table: the ``scale``x corpus generated, the zcat floor, the job's fastest
    of ``--repeats`` runs (wall, CPU, peak RSS) and, at a ``--naive-scales`` scale, the naive
    baseline on the same files."""
    corpus = work / f"corpus-{scale}x"
    t0 = time.monotonic()
    files, quads = make_corpus(corpus, args.quads * scale, args.files * scale)
    gen_s = time.monotonic() - t0
    size = sum(f.stat().st_size for f in files)
    c0 = children_cpu()
    floor = zcat_floor(files, cores)
    zcat_cpu = children_cpu() - c0
    out = work / f"out-{scale}x"
    runs = []
    for _ in range(max(args.repeats, 1)):
        c0 = children_cpu()
        wall, peaks, res = run_measured([*job, "--input", str(corpus), "--output", str(out), "--top", "3"], env=env)
        runs.append((wall, children_cpu() - c0, peaks))
    wall = min(r[0] for r in runs)
    job_cpu = min(r[1] for r in runs)
    peaks = {k: max(r[2].get(k, 0) for r in runs) for k in ("java", "python")}
    record = json.loads((out / "csets" / "_run.json").read_text())
    c = record["counters"]
    assert c["reconciles"], c
    row = {
        "scale": scale,
        "files": len(files),
        "quads": quads,
        "gzip_mb": round(size / 2**20, 1),
        "gen_s": round(gen_s, 1),
        "zcat_s": round(floor, 2),
        "job_s": round(wall, 2),
        "job_over_zcat": round(wall / floor, 2),
        "job_quads_per_s_per_core": round(quads / wall / cores),
        "zcat_cpu_s": round(zcat_cpu, 2),
        "job_cpu_s": round(job_cpu, 2),
        "job_quads_per_cpu_s": round(quads / job_cpu),
        "job_cpu_over_zcat_cpu": round(job_cpu / zcat_cpu, 2),
        "jvm_peak_mb": round(peaks.get("java", 0) / 2**20),
        "driver_py_peak_mb": round(peaks.get("python", 0) / 2**20),
        "rejected": c["lines_rejected"],
        "csets": c["sets_after_cleaning"],
        "job_s_runs": [round(r[0], 2) for r in runs],
        "job_cpu_s_runs": [round(r[1], 2) for r in runs],
    }
    if str(scale) in args.naive_scales.split(","):
        row.update(measure_naive(files, quads, wall, job_cpu, cores))
    shutil.rmtree(corpus, ignore_errors=True)
    return row


def measure_naive(files: list[Path], quads: int, wall: float, job_cpu: float, cores: int) -> dict:
    """The naive baseline on ``files``: its rates and peak RSS, and the job's (``wall``,
    ``job_cpu`` over ``quads``) against it."""
    t0, c0 = time.monotonic(), children_cpu()
    res = subprocess.run([sys.executable, "-c", NAIVE, *map(str, files)], capture_output=True, text=True, check=True)
    naive_s, naive_cpu = time.monotonic() - t0, children_cpu() - c0
    n, ents, ncsets, rss = map(int, res.stdout.split())
    return {
        "naive_s": round(naive_s, 2),
        "naive_quads_per_s": round(n / naive_s),
        "naive_peak_mb": round(rss / 2**20),
        "naive_entities": ents,
        "job_over_naive_per_core": round((quads / wall / cores) / (n / naive_s), 2),
        "naive_quads_per_cpu_s": round(n / naive_cpu),
        "job_over_naive_per_cpu_s": round((quads / job_cpu) / (n / naive_cpu), 2),
    }


def print_tables(rows: list[dict], cores: int) -> None:
    """The rows on the wall clock, then on CPU time."""
    base = rows[0]
    print(f"\nC-sets job throughput on {cores} cores (same files for every column of a row)")
    hdr = f"{'scale':>5} {'quads':>11} {'gz MB':>7} {'zcat s':>7} {'job s':>7} {'job/zcat':>8} {'q/s/core':>9} {'naive q/s':>9} {'job/naive':>9} {'JVM MB':>7} {'drv MB':>7} {'naive MB':>8} {'time x':>6}"
    print(hdr)
    for r in rows:
        print(
            f"{r['scale']:>4}x {r['quads']:>11,} {r['gzip_mb']:>7} {r['zcat_s']:>7} {r['job_s']:>7} {r['job_over_zcat']:>8} "
            f"{r['job_quads_per_s_per_core']:>9,} {r.get('naive_quads_per_s', '-'):>9} {r.get('job_over_naive_per_core', '-'):>9} "
            f"{r['jvm_peak_mb']:>7} {r['driver_py_peak_mb']:>7} {r.get('naive_peak_mb', '-'):>8} {r['job_s'] / base['job_s']:>6.2f}"
        )
    print("\nThe same runs on CPU time (user + system of all processes; robust on a shared machine)")
    print(
        f"{'scale':>5} {'zcat cpu s':>10} {'job cpu s':>9} {'job/zcat':>8} {'q/cpu-s':>9} {'naive q/cpu-s':>13} {'job/naive':>9} {'cpu x':>6}"
    )
    for r in rows:
        print(
            f"{r['scale']:>4}x {r['zcat_cpu_s']:>10} {r['job_cpu_s']:>9} {r['job_cpu_over_zcat_cpu']:>8} {r['job_quads_per_cpu_s']:>9,} "
            f"{r.get('naive_quads_per_cpu_s', '-'):>13} {r.get('job_over_naive_per_cpu_s', '-'):>9} {r['job_cpu_s'] / base['job_cpu_s']:>6.2f}"
        )


def print_fit(rows: list[dict], cores: int) -> tuple[dict, float]:
    """Time = fixed + marginal x quads, fitted over every scale (two at least): the fixed part
    (JVM and Python start, planning and compiling ~20 small stages) is paid once per run, the
    marginal part is what a 10^4-file release run sees per quad. Prints it and where the job
    reaches 3x zcat and the naive baseline's rate; returns the fits and the marginal quads per
    CPU-second."""
    q = [r["quads"] for r in rows]
    fit = {
        name: linear_fit(q, [r[col] for r in rows])
        for name, col in (("wall", "job_s"), ("cpu", "job_cpu_s"), ("zcat", "zcat_s"))
    }
    (fw, mw), (fc, mc), (_, mz) = fit["wall"], fit["cpu"], fit["zcat"]
    naive = [r["naive_quads_per_s"] for r in rows if "naive_quads_per_s" in r]
    naive_cpu = [r["naive_quads_per_cpu_s"] for r in rows if "naive_quads_per_cpu_s" in r]
    print(
        f"\nFit over {len(rows)} scales: job wall = {fw:.1f} s + {mw * 1e6:.2f} s per million quads; "
        f"job CPU = {fc:.1f} CPU-s + {mc * 1e6:.2f} CPU-s per million; zcat = {mz * 1e6:.3f} s per million"
    )
    print(
        f"  marginal: {1 / mc:,.0f} quads per CPU-second"
        + (
            f" (naive baseline {min(naive_cpu):,}-{max(naive_cpu):,}: {1 / mc / max(naive_cpu):.2f}x its best)"
            if naive_cpu
            else ""
        )
        + f"; {1 / mw / cores:,.0f} quads/s/core on the wall clock; job/zcat at the margin {mw / mz:.1f}x"
    )
    if mw < 3 * mz:
        print(f"  job <= 3x zcat from about {fw / (3 * mz - mw) / 1e6:,.0f} million quads on")
    else:
        print("  job <= 3x zcat at no size: the marginal time alone is above 3x zcat")
    if naive and mw * cores * max(naive) < 1:
        print(
            f"  per-core rate >= the naive baseline's best from about "
            f"{fw * cores * max(naive) / (1 - mw * cores * max(naive)) / 1e6:,.0f} million quads on"
        )
    return fit, 1 / mc


def main() -> int:
    args = arguments()
    cores = os.cpu_count() or 1
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="csets-bench-"))
    spark_submit = str(Path(sys.executable).parent / "spark-submit")
    rows = []
    # The job as the Makefile runs it: spark-submit reads conf/spark-defaults.conf (JVM options too).
    env = {
        **os.environ,
        "SPARK_LOG_LEVEL": "ERROR",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_CONF_DIR": str(ROOT / "conf"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    job = [spark_submit, "--master", f"local[{cores}]", "--driver-memory", "2g", str(ROOT / "jobs" / "csets.py")]
    try:
        # Warm-up, not measured: the first run on a machine reads Spark's jars from disk and may
        # build the scanner's jar.
        run_measured([*job, "--input", str(REAL), "--output", str(work / "warm-up"), "--top", "1"], env=env)
        for scale in [int(s) for s in args.scales.split(",")]:
            row = measure_scale(scale, args, job, env, work, cores)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print_tables(rows, cores)
    fit, marginal = print_fit(rows, cores) if len(rows) > 1 else ({}, None)
    rate = max(r["job_quads_per_s_per_core"] for r in rows)
    full = FULL_RELEASE_QUADS
    print(
        f"\nFull WDC 2023-12 JSON-LD release ({full / 1e9:.1f} billion quads, 8,897 files) at {rate:,} quads/s/core "
        f"(best wall-clock run here): {full / rate / 3600:,.0f} core-hours"
    )
    if marginal is not None:
        print(f"  at the marginal {marginal:,.0f} quads per CPU-second: {full / marginal / 3600:,.0f} core-hours")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "cores": cores,
                    "rows": rows,
                    "core_hours_full_release": full / rate / 3600,
                    "marginal_quads_per_cpu_s": marginal,
                    "fit": fit,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
