"""Differential fuzzing of ``jobs/warc_index.py`` (and the pages job's record reader) against warcio.

Every round mutates the real WARC files (``../shared/data/warc``, else the project's ``data/warc``)
by class, writes the batch into one folder and runs the real job once over it. Per file, three
checks; a failing one is a discrepancy unless the job wrote a reject row naming the file, with
an offset and a reason:

- the run record's ``inputs.read`` ``warc_records`` (every record the job read whole) equals
  warcio's ``ArchiveIterator`` count of the same file (gz or plain; warcio stops at its first
  error, so the records it counts are those before it);
- every response or revisit record the mutation left untouched is indexed (its URL, as many
  times as the original holds it): a record is never hidden behind a damaged one;
- every index row reads back through ``udfs.corpus.warc.read_record`` (the pages job's reader) as
  the record of the row's URL, and (all classes but ``bytes``, whose flips may land in a payload)
  a response's ``content_digest`` is the record's declared ``WARC-Payload-Digest``: a row the
  pages job cannot read, or one whose payload a wrong Content-Length cut or grew, is a
  discrepancy, whatever else.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from testkit.fuzz import Tally
from udfs.runtime.paths import PROJECT_ROOT

CLASSES = {
    "bytes": "bytes of a real .warc.gz or .warc flipped (1 to 8), or the file truncated at a random offset",
    "framing": "a Content-Length off by -400 to +400, a gzip member cut or two joined, gz to plain, "
    "the CRLFs between two records removed",
    "names": "a real WARC under a file name holding ':', spaces, '%', '#' or non-ASCII characters",
    "numbers": "a Content-Length negative, huge, empty, signed, hexadecimal, a float or not a number",
}
REFERENCE = "warcio 1.8 ArchiveIterator"
# inputs of each class per round: one job run reads them all
PER_ROUND = 6
_NAMES = ("a:b", "with space", "per%25cent", "hash#tag", "naïve-ü", "日本", "a:b #%20 ü")
_NUMBERS = (b"-5", b"-0", b"99999999999999999999", b"abc", b"", b"+12", b"0x10", b"1e3", b"12.0", b"1 2")
_CL = re.compile(rb"(?im)^content-length:[ \t]*([^\r\n]*)\r?$")


def _source_dir() -> Path:
    shared = PROJECT_ROOT.parent / "shared" / "data" / "warc"
    return shared if any(shared.glob("*.warc.gz")) else PROJECT_ROOT / "data" / "warc"


@dataclass
class _Record:
    data: bytes  # the record, uncompressed, with the separator after it
    rtype: str
    url: str | None


def _records(path: Path) -> list[_Record]:
    """The records of a gzip-per-record WARC, one per member (the files this module mutates)."""
    raw = path.read_bytes()
    out = []
    while raw:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = d.decompress(raw)
        raw = d.unused_data
        head = data[: data.find(b"\r\n\r\n")].decode("utf-8", "replace")
        fields = dict(line.split(": ", 1) for line in head.split("\r\n")[1:] if ": " in line)
        out.append(_Record(data, fields["WARC-Type"], fields.get("WARC-Target-URI")))
    return out


def _indexed(records: list[_Record]) -> Counter:
    return Counter(r.url for r in records if r.rtype in ("response", "revisit"))


def _write(records: list[bytes], gz: bool) -> bytes:
    return b"".join(gzip.compress(r, compresslevel=6) for r in records) if gz else b"".join(records)


def _with_cl(data: bytes, value: bytes) -> bytes:
    """``data`` (one record) with its WARC Content-Length's value replaced by ``value``."""
    head_end = data.find(b"\r\n\r\n")
    m = _CL.search(data, 0, head_end)
    return data[: m.start(1)] + value + data[m.end(1) :]


def _declared(data: bytes) -> int:
    return int(_CL.search(data, 0, data.find(b"\r\n\r\n")).group(1))


def _mutate(cls: str, rng: random.Random, sources: dict[str, list[_Record]]) -> tuple[str, bytes, Counter, str]:
    """(file name, bytes, URLs that must be indexed, what was done) of one input of ``cls``."""
    src = rng.choice(sorted(sources))
    recs = sources[src]
    stem = src.removesuffix(".warc.gz")
    gz = rng.random() < 0.5
    k = rng.randrange(len(recs))
    untouched = _indexed(recs[:k] + recs[k + 1 :])
    if cls == "bytes":
        blob = bytearray(_write([r.data for r in recs], gz))
        if rng.random() < 0.5:
            flips = rng.randint(1, 8)
            for _ in range(flips):
                blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
            what = f"{flips} bits flipped"
        else:
            cut = rng.randrange(1, len(blob))
            del blob[cut:]
            what = f"truncated at {cut}"
        return f"{stem}.warc{'.gz' if gz else ''}", bytes(blob), Counter(), what
    if cls == "names":
        name = rng.choice(_NAMES)
        return f"{name}.warc{'.gz' if gz else ''}", _write([r.data for r in recs], gz), _indexed(recs), "renamed"
    if cls == "numbers":
        value = rng.choice(_NUMBERS)
        parts = [r.data for r in recs]
        parts[k] = _with_cl(parts[k], value)
        return f"{stem}.warc{'.gz' if gz else ''}", _write(parts, gz), untouched, f"record {k} Content-Length {value!r}"
    kind = rng.choice(("length", "length", "cut", "join", "plain", "crlf"))
    parts = [r.data for r in recs]
    if kind == "length":
        delta = rng.choice((-400, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 400, rng.randint(-2000, 2000)))
        parts[k] = _with_cl(parts[k], str(max(0, _declared(parts[k]) + delta)).encode())
        return (
            f"{stem}.warc{'.gz' if gz else ''}",
            _write(parts, gz),
            untouched,
            f"record {k} Content-Length {delta:+d}",
        )
    if kind == "plain":
        return f"{stem}.warc", _write(parts, False), _indexed(recs), "written uncompressed"
    if kind == "crlf":
        if k == len(parts) - 1:
            k -= 1
        if k < 0:
            return f"{stem}.warc", _write(parts, False), _indexed(recs), "one record, nothing to join"
        parts[k] = parts[k].removesuffix(b"\r\n\r\n")
        what = f"no CRLFs after record {k}" + (" in its member" if gz else "")
        return f"{stem}.warc{'.gz' if gz else ''}", _write(parts, gz), _indexed(recs[:k] + recs[k + 1 :]), what
    members = [gzip.compress(p, compresslevel=6) for p in parts]
    if kind == "join" and len(parts) > 1:
        k = min(k, len(parts) - 2)
        members[k : k + 2] = [gzip.compress(parts[k] + parts[k + 1], compresslevel=6)]
        must = _indexed(recs[:k] + recs[k + 2 :])
        return f"{stem}.warc.gz", b"".join(members), must, f"records {k} and {k + 1} in one member"
    # a member cut short, the file going on with the next member
    cut = rng.randrange(1, len(members[k]))
    members[k] = members[k][:cut]
    return f"{stem}.warc.gz", b"".join(members), untouched, f"member {k} cut at {cut}"


def warcio_count(path: Path) -> tuple[int, str | None]:
    """Records warcio's ArchiveIterator reads from ``path`` before its first error (and the error)."""
    from warcio.archiveiterator import ArchiveIterator

    n = 0
    with open(path, "rb") as fh, contextlib.redirect_stderr(io.StringIO()):
        try:
            it = ArchiveIterator(fh)
            for rec in it:
                it.read_to_end(rec)
                n += 1
        except Exception as exc:  # noqa: BLE001 - the reference's own failure: its count stops there
            return n, f"{type(exc).__name__}: {str(exc)[:120]}"
    return n, None


def _run_job(folder: Path, out: Path) -> tuple[dict, list[dict], list[dict]]:
    """The real job over ``folder`` (``jobs/warc_index.py`` in its own process, as a user runs it):
    (run record, index rows, reject rows)."""
    import pyarrow.parquet as pq

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
    argv = [sys.executable, str(PROJECT_ROOT / "jobs" / "warc_index.py"), "--input", str(folder)]
    argv += ["--warc-base", str(folder), "--output", str(out), "--master", "local[2]"]
    done = subprocess.run(argv, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"warc_index exited {done.returncode} on {folder}: {done.stderr[-2000:]}")
    run = json.loads((out / "warc_index" / "_run.json").read_text())
    return run, pq.read_table(out / "warc_index").to_pylist(), pq.read_table(out / "rejects" / "warc_index").to_pylist()


def check_file(
    path: Path, base: Path, entry: dict | None, rows: list[dict], rejects: list[dict], must: Counter, digests: bool
) -> str | None:
    """None when ``path`` passes the checks (or differs with a reject row naming it, an offset and
    a reason, returned as ``"explained"``), else what differs. ``digests``: the mutation left every
    payload's bytes as they were, so an indexed response's payload digest must be the one its
    record declares (``WARC-Payload-Digest``): a record indexed with its payload cut short or
    grown by a wrong Content-Length is a discrepancy, never explained."""
    from udfs.corpus import warc as W

    if entry is None:
        return "discrepancy: not in the run record's inputs.read"
    for row in rows:  # a row the pages job cannot read is never explained
        try:
            rec = W.read_record(
                W.join_location(str(base), row["warc_filename"]),
                row["warc_record_offset"],
                row["warc_record_length"],
                max_record_bytes=10_000_000,
            )
        except W.WarcError as exc:
            return f"discrepancy: indexed record at {row['warc_record_offset']} unreadable: {exc.reason[:200]}"
        if rec.target_uri != row["url"]:
            return f"discrepancy: indexed record at {row['warc_record_offset']} reads back as {rec.target_uri!r}"
        declared = rec.headers.get("WARC-Payload-Digest")
        if digests and rec.rec_type == "response" and declared and declared != "sha1:" + row["content_digest"]:
            return (
                f"discrepancy: indexed record at {row['warc_record_offset']} has payload digest "
                f"sha1:{row['content_digest']}, the record declares {declared}: its payload was cut or grown"
            )
    named = [r for r in rejects if r["reason"] and (r["position"] is not None or entry["damaged"])]
    ref, ref_error = warcio_count(path)
    problems = []
    if entry["warc_records"] != ref:
        problems.append(f"{entry['warc_records']} records read, warcio {ref} ({ref_error})")
    missing = must - Counter(r["url"] for r in rows)
    if missing:
        problems.append(f"{sum(missing.values())} untouched records not indexed ({next(iter(missing))})")
    if not problems:
        return None
    # a record the mutation left whole is never explained away, unless the file could not be read on
    if named and (not missing or entry["damaged"]):
        return "explained"
    return "discrepancy: " + "; ".join(problems) + f"; rejects: {[r['reason'][:120] for r in rejects]}"


def fuzz(work: Path, *, seed: int, rounds: int | None = None, budget_s: float | None = None) -> list[Tally]:
    src_dir = _source_dir()
    sources = {p.name: _records(p) for p in sorted(src_dir.glob("*.warc.gz"))}
    tallies = {c: Tally("warc_index", c, REFERENCE) for c in CLASSES}
    rng = random.Random(seed)
    start = time.monotonic()
    n = 0
    while (rounds is None or n < rounds) and (budget_s is None or time.monotonic() - start < budget_s):
        folder = work / f"round-{n}" / "in"
        plan = {}
        for cls in CLASSES:
            for i in range(PER_ROUND):
                name, blob, must, what = _mutate(cls, rng, sources)
                d = folder / cls / str(i)
                d.mkdir(parents=True)
                (d / name).write_bytes(blob)
                plan[str(d / name)] = (cls, must, what)
        run, rows, rejects = _run_job(folder, work / f"round-{n}" / "out")
        reads = {e["source"]: e for e in run["inputs"]["read"]}
        for f, (cls, must, what) in plan.items():
            rel = os.path.relpath(f, folder)
            verdict = check_file(
                Path(f),
                folder,
                reads.get(f),
                [r for r in rows if r["warc_filename"] == rel],
                [r for r in rejects if r["source"] == f],
                must,
                digests=cls != "bytes",
            )
            if verdict is None:
                tallies[cls].add()
            elif verdict == "explained":
                tallies[cls].add(explained=True)
            else:
                tallies[cls].add(discrepancy=f"{rel} ({what}): {verdict}")
        shutil.rmtree(work / f"round-{n}")
        n += 1
    return list(tallies.values())
