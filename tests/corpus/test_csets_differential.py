"""The C-sets job against an independent reader (issue 43): one round of the differential fuzz
(testkit.fuzz.csets, rdflib's N-Quads parser per file), blank-node labels scoped to their file,
and input names with any characters, on a local root and under an s3 URL root."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, WDC_SAMPLE

SHARED_WDC = ROOT.parent / "shared" / "data" / "wdc" / WDC_SAMPLE.name
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def run(out: Path, *args: str) -> tuple[dict, dict[tuple, dict], list[dict]]:
    """The job in process: (run record, C-sets by (types, properties), reject rows)."""
    from jobs.csets import CsetsJob

    assert CsetsJob([*args, "--output", str(out)]).main() == 0
    record = json.loads((out / "csets" / "_run.json").read_text())
    csets = {(tuple(r["types"]), tuple(r["properties"])): r for r in pq.read_table(out / "csets").to_pylist()}
    return record, csets, pq.read_table(out / "rejects" / "csets").to_pylist()


@pytest.mark.skipif(not SHARED_WDC.is_file(), reason="../shared/data/wdc is absent (a user's clone)")
def test_one_round_of_the_differential_fuzz_has_no_discrepancy(spark, tmp_path):
    from testkit.fuzz import csets as F

    tallies = F.fuzz(tmp_path, seed=7, rounds=1)
    assert F.source_file() == SHARED_WDC
    assert {t.cls for t in tallies} == set(F.CLASSES)
    assert all(t.inputs >= F.FILES_PER_CLASS for t in tallies), [(t.cls, t.inputs) for t in tallies]
    assert [(t.cls, t.examples) for t in tallies if t.discrepancies] == []
    # the mutations reach the job: some differences are rejects naming file and cause
    assert sum(t.explained for t in tallies) > 0


def test_the_reference_reader_sees_what_the_job_must(tmp_path):
    """The reference itself, on constructed bytes: a damaged gzip member, a lone CR, bad UTF-8."""
    from testkit.fuzz import csets as F

    q = '<http://a.example/x> <http://schema.org/name> "n" <http://a.example/> .\n'
    r = F.read_reference((q + "\n# c\n" + q.replace(" .", "")).encode(), gz=False)
    assert r.verdicts == ["quad", "skip", "skip", "reject"]
    assert F.read_reference((q.rstrip("\n") + "\r" + q).encode(), gz=False).verdicts == ["reject"]  # two quads
    assert F.read_reference(q.encode()[:-10] + b"\xff" + q.encode()[-10:], gz=False).verdicts == ["reject"]
    body = "".join(WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:200]).encode()
    member = gzip.compress(body)
    r = F.read_reference(gzip.compress(q.encode()) + member[: len(member) // 2], gz=True)
    assert r.damaged == "member cut before its end" and 20 < len(r.verdicts) < 200 and set(r.verdicts) == {"quad"}
    damaged = bytearray(member)
    damaged[len(member) // 3] ^= 0x10
    r = F.read_reference(bytes(damaged), gz=True)
    assert r.damaged and len(r.verdicts) < 200


def test_a_blank_label_in_two_files_is_two_nodes(spark, tmp_path):
    """Two files share the graph label _:g1 and the subject label _:b0 (on a blank page and on an
    IRI page): run together, every C-set's instances and pages are the sums of the files run alone."""
    a = [
        f"_:b0 {RDF_TYPE} <http://schema.org/Person> _:g1 .",
        '_:b0 <http://schema.org/name> "Ada" _:g1 .',
        f"_:b0 {RDF_TYPE} <http://schema.org/Place> <http://p.example/> .",
        '_:b0 <http://schema.org/name> "Here" <http://p.example/> .',
    ]
    b = [
        f"_:b0 {RDF_TYPE} <http://schema.org/Person> _:g1 .",
        '_:b0 <http://schema.org/email> "b@example.org" _:g1 .',
        f"_:b0 {RDF_TYPE} <http://schema.org/Place> <http://p.example/> .",
        '_:b0 <http://schema.org/address> "There" <http://p.example/> .',
    ]
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.nq").write_text("\n".join(a) + "\n")
    (d / "b.nq.gz").write_bytes(gzip.compress(("\n".join(b) + "\n").encode()))
    rec_a, alone_a, _ = run(tmp_path / "a", "--input", str(d / "a.nq"))
    rec_b, alone_b, _ = run(tmp_path / "b", "--input", str(d / "b.nq.gz"))
    rec, both, _ = run(tmp_path / "both", "--input", str(d))
    for name in ("n_instances", "n_pages"):
        summed: dict[tuple, int] = {}
        for alone in (alone_a, alone_b):
            for k, r in alone.items():
                summed[k] = summed.get(k, 0) + r[name]
        assert {k: r[name] for k, r in both.items()} == summed, name
    assert both[(("Person",), ("name",))]["n_instances"] == 1  # not merged with b's into {email, name}
    c, ca, cb = rec["counters"], rec_a["counters"], rec_b["counters"]
    assert c["entities_before_cleaning"] == ca["entities_before_cleaning"] + cb["entities_before_cleaning"] == 4
    # _:g1 is a page of each file; <http://p.example/> one page of both
    assert (ca["pages"], cb["pages"], c["pages"]) == (2, 2, 3)
    assert {Path(r["source"]).name: r["graphs"] for r in rec["inputs"]["read"]} == {"a.nq": 2, "b.nq.gz": 2}


NAMES = ["a:b.nq", "sp ace.nq", "50%.nq", "%41%2e.nq", "x#y.nq", "q?.nq", "é日本.nq.gz", "tab\there.nq", "-lead.nq"]


def test_an_input_name_is_a_name_whatever_its_characters(spark, tmp_path):
    """Files whose names hold ':', spaces, '%', '#', '?', non-ASCII, a tab, a leading '-', among a
    plain one: each is read whole, with and without --ignore-corrupt-files, and a manifest names
    them as a folder does."""
    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    d = tmp_path / "in"
    d.mkdir()
    want = {}
    for i, name in enumerate(["plain.nq", *NAMES]):
        body = "".join(lines[i * 50 : i * 50 + 40 + i]).encode()
        (d / name).write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
        want[name] = 40 + i
    manifest = tmp_path / "inputs.txt"
    manifest.write_text("".join(f"in/{n}\n" for n in want if "\t" not in n))  # a manifest line is stripped
    for flags in ([], ["--ignore-corrupt-files"]):
        record, _, rejects = run(tmp_path / f"out{len(flags)}", "--input", str(d), *flags)
        got = {Path(r["source"]).name: r["lines"] for r in record["inputs"]["read"]}
        assert got == want and record["counters"]["reconciles"] is True
        assert rejects == []
    record, _, _ = run(tmp_path / "manifest", "--input", str(manifest))
    assert {Path(r["source"]).name: r["lines"] for r in record["inputs"]["read"]} == {
        n: k for n, k in want.items() if "\t" not in n
    }


def test_names_under_an_s3_root_are_admitted_and_one_unreadable_loses_nothing(spark, s3_server, s3_keys, tmp_path):
    """A manifest lists objects of the local S3 server whose keys hold ':', '#', '?', '%', a space
    and non-ASCII, confined by --input-root to the bucket's prefix: every name is admitted (none
    refused as outside the root), and the job, which cannot open s3a:// here (pyspark ships no
    hadoop-aws), names each in a reject row and keeps the local file's lines."""
    import boto3

    body = "".join(WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:30]).encode()
    s3 = boto3.client("s3")
    keys = [f"in/{n}" for n in ["a:b.nq", "x#y.nq", "q?.nq", "50%.nq", "sp ace é.nq"]]
    for k in keys:
        s3.put_object(Bucket=s3_server, Key=k, Body=body)
    assert s3_keys("in") == sorted(keys)  # the names are the keys
    local = tmp_path / "local"
    local.mkdir()
    (local / "plain.nq").write_bytes(body)
    manifest = tmp_path / "inputs.txt"
    urls = [f"s3a://{s3_server}/{k}" for k in keys]
    manifest.write_text("".join(u + "\n" for u in urls) + str(local / "plain.nq") + "\n")
    record, _, rejects = run(
        tmp_path / "out",
        "--input",
        str(manifest),
        "--input-root",
        f"s3a://{s3_server}/in/",
        str(local),
        "--ignore-corrupt-files",
    )
    read = {r["source"]: r for r in record["inputs"]["read"]}
    assert read[str(local / "plain.nq")]["lines"] == 30
    assert {u: read[u]["lines"] for u in urls} == dict.fromkeys(urls, 0)
    assert {r["source"] for r in rejects} == set(urls)
    from udfs.runtime.inputs import InputError, resolve_inputs

    for outside in (f"s3a://{s3_server}/in/../x.nq", f"s3a://{s3_server}/in/%2e%2e/x.nq"):
        manifest.write_text(outside + "\n")
        with pytest.raises(InputError, match="outside the allowed root"):
            resolve_inputs([str(manifest)], root=[f"s3a://{s3_server}/in/"])


def test_an_iri_written_with_escapes_is_the_same_entity(spark, tmp_path):
    """rdflib decodes an IRI's backslash-u escapes: ``<http://a.example/\\u00e9>`` and the IRI written
    out are one subject, and one page. So are they for the job (before: two entities, two sets)."""
    f = tmp_path / "escapes.nq"
    f.write_text(
        f"<http://a.example/\\u00e9> {RDF_TYPE} <http://schema.org/Person> <http://p.example/\\u00e9> .\n"
        '<http://a.example/\u00e9> <http://schema.org/name> "x" <http://p.example/\u00e9> .\n'
        '<http://a.example/\\U000000e9> <http://schema.org/email> "e" <http://p.example/\u00e9> .\n',
        encoding="utf-8",
    )
    record, csets, _ = run(tmp_path / "out", "--input", str(f))
    assert list(csets) == [(("Person",), ("email", "name"))]
    assert (record["counters"]["entities_before_cleaning"], record["counters"]["pages"]) == (1, 1)
    assert [r["graphs"] for r in record["inputs"]["read"]] == [1]
