"""The C-sets job on the real WDC sample, against an independent reference implementation,
plus malformed lines, cleaning, input forms and the paper's n_properties rule."""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest
import rdflib

from conftest import ROOT, SCHEMAORG, WDC_SAMPLE
from jobs.csets import CsetsJob
from udfs.corpus import csets as C
from udfs.corpus import nquads as N
from udfs.runtime.config import load_config

RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
CFG = C.CsetConfig.of(load_config().csets)  # conf/pipeline.toml's [csets]
SCHEMA = re.compile(r"^<https?://(?:www\.)?schema\.org/([^>]+)>$")


# ---- an independent reference: plain Python, rdflib for the vocabulary ------------------------
def reference_vocabulary():
    g = rdflib.Graph().parse(SCHEMAORG / "schemaorg-current-https.ttl")
    local = lambda t: str(t).rsplit("/", 1)[-1]  # noqa: E731
    classes = {local(s) for s in g.subjects(rdflib.RDF.type, rdflib.RDFS.Class)}
    classes |= {local(s) for s in g.subjects(rdflib.RDF.type, rdflib.URIRef("https://schema.org/DataType"))}
    props = {local(s) for s in g.subjects(rdflib.RDF.type, rdflib.RDF.Property)}
    return classes, props


def reference_csets(lines, *, clean=True, scope="iri"):
    """C-sets the slow, obvious way: split each line, build a dict of sets per entity."""
    classes, props = reference_vocabulary() if clean else (None, None)
    tokens = defaultdict(set)
    pages = defaultdict(set)
    for line in lines:
        parts = line.split()
        s, p, g = parts[0], parts[1], parts[-2]
        o = line.split(None, 2)[2].rsplit(None, 2)[0]
        page = g[1:-1]
        ent = (page, s) if scope == "page" or s.startswith("_:") else (None, s)
        pages[ent].add(page)
        if p == RDF_TYPE:
            m = SCHEMA.match(o)
            if clean and (not m or m.group(1) not in classes):
                tokens[ent]  # the entity exists even if all its tokens are dropped
                continue
            tok = "isa:" + (m.group(1) if m else o)
        else:
            m = SCHEMA.match(p)
            if clean and (not m or m.group(1) not in props):
                tokens[ent]
                continue
            tok = m.group(1) if m else p
        tokens[ent].add(tok)
    csets = {}
    for ent, toks in tokens.items():
        if not toks:
            continue
        key = " ".join(sorted(toks))
        c = csets.setdefault(key, {"n_instances": 0, "pages": set()})
        c["n_instances"] += 1
        c["pages"] |= pages[ent]
    out = {}
    for key, c in csets.items():
        toks = key.split(" ")
        cid = hashlib.sha256(key.encode()).hexdigest()
        hosts = {re.sub(r"^www\.", "", (urlsplit(u).hostname or "").lower()) for u in c["pages"]}
        out[cid] = {
            "types": sorted(t[4:] for t in toks if t.startswith("isa:")),
            "properties": sorted(t for t in toks if not t.startswith("isa:")),
            "n_properties": len(toks),
            "n_instances": c["n_instances"],
            "n_pages": len(c["pages"]),
            "n_domains": len(hosts),
            "pages": c["pages"],
        }
    return out


def run_job(spark, tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "out"
    assert CsetsJob(["--output", str(out), *args]).main() == 0
    return out


def read_table(out: Path) -> dict:
    rows = pq.read_table(out / "csets").to_pylist()
    return {r["cset_id"]: r for r in rows}


# ---- the real sample ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_run(spark, tmp_path_factory):
    out = run_job(spark, tmp_path_factory.mktemp("real"), "--input", str(WDC_SAMPLE), "--sample-urls", "3")
    return out, read_table(out), json.loads((out / "csets" / "_run.json").read_text())


def test_real_sample_equals_reference(real_run):
    _, table, _ = real_run
    expected = reference_csets(WDC_SAMPLE.read_text(encoding="utf-8").splitlines())
    assert set(table) == set(expected)
    for cid, exp in expected.items():
        got = table[cid]
        for col in ("types", "properties", "n_properties", "n_instances", "n_pages", "n_domains"):
            assert got[col] == exp[col], (cid, col)
        # K = 3 URLs drawn from the C-set's own pages, no repeats.
        assert len(got["sample_urls"]) == min(3, exp["n_pages"])
        assert set(got["sample_urls"]) <= exp["pages"]
        assert len(set(got["sample_urls"])) == len(got["sample_urls"])


def test_real_sample_counters_reconcile(real_run):
    _, table, record = real_run
    c = record["counters"]
    assert c["lines_read"] == 10_000 == c["quads_parsed"] + c["lines_rejected"] + c["lines_skipped_blank_or_comment"]
    assert c["reconciles"] is True
    assert c["pages"] == 248
    assert c["sets_after_cleaning"] == len(table)
    assert c["sets_before_cleaning"] >= c["sets_after_cleaning"]
    # The sample really holds vocabulary errors: WDC's `query-input` and lower-cased types.
    dropped = c["tokens_dropped_by_reason"]
    assert "query-input" in [t for t, _ in dropped[C.PROPERTY_UNKNOWN]["top"]]
    assert dropped[C.TYPE_UNKNOWN]["entity_tokens"] >= 1
    assert sum(r["n_instances"] for r in table.values()) == c["entities_after_cleaning"]


def test_hash_collisions_change_nothing(spark, real_run, tmp_path):
    """The merge and the C-set pass sort by 64-bit hashes (of page or IRI; of C-set, domain and
    page) and tell colliding names apart within a run. Forced collisions, two bits of each hash
    kept (the whole sample in four merge runs, its C-sets in two), give the same table and counters."""
    from udfs.corpus import scanner as jvm

    scan = jvm.attach(spark)
    before = scan.collideGroups(-(2**63) + 1)  # bits 63 and 0
    try:
        out = run_job(spark, tmp_path, "--input", str(WDC_SAMPLE), "--sample-urls", "3")
    finally:
        scan.collideGroups(before)
    _, table, record = real_run
    assert read_table(out) == table
    assert json.loads((out / "csets" / "_run.json").read_text())["counters"] == record["counters"]


def test_spark_submit_builds_the_scanner_on_a_fresh_machine(tmp_path):
    """The README's first command runs spark-submit before anything has compiled the JVM code:
    pyspark is then imported from a zip, and the build must still find Spark's jars."""
    jars = tmp_path / "jvm"
    out = tmp_path / "out"
    env = {**os.environ, "LLM4SCHEMA_JVM_DIR": str(jars)}
    res = subprocess.run([str(Path(sys.executable).parent / "spark-submit"), "--master", "local[1]",
                          str(ROOT / "jobs" / "csets.py"), "--input", str(WDC_SAMPLE), "--output", str(out),
                          "--top", "1"], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert len(list(jars.glob("llm4schema-jvm-*.jar"))) == 1
    assert json.loads((out / "csets" / "_run.json").read_text())["counters"]["quads_parsed"] > 9_000


def test_schema_is_explicit(real_run):
    out, _, _ = real_run
    schema = pq.read_schema(next((out / "csets").glob("*.parquet")))
    assert [f.name for f in schema] == [f.name for f in C.CSETS_SCHEMA.fields]
    assert str(schema.field("n_instances").type) == "int64"
    assert str(schema.field("sample_urls").type).startswith("list<")


def test_rerun_replaces_output(spark, real_run, tmp_path):
    out, table, _ = real_run
    # Rerun into the same root: same rows, no duplicates, and a sibling table is left alone.
    sibling = out / "samples"
    sibling.mkdir(exist_ok=True)
    (sibling / "keep.txt").write_text("x")
    assert CsetsJob(["--input", str(WDC_SAMPLE), "--output", str(out), "--sample-urls", "3"]).main() == 0
    again = read_table(out)
    assert again == table
    assert (sibling / "keep.txt").exists()


# ---- malformed lines mixed with good ones ------------------------------------------------------
BAD_LINES = {
    # position in the crafted file -> expected reason prefix
    3: ('<http://a.example/x> <http://schema.org/name> "unterminated <http://a.example/>   .', N.REASON_QUOTES),
    5: ('<http://a.example/x> <http://schema.org/name> "three terms"   .', N.REASON_TERM_COUNT),
    8: ('<http://a.example/x> <http://schema.org/name> <http://a.example/y <http://a.example/>   .', N.REASON_BRACKETS),
    9: ('<http://a.example/x> <http://schema.org/name> "cut off', N.REASON_TRUNCATED),
    11: ('<http://a.example/x> <http://schema.org/name> "bad \\q escape" <http://a.example/>   .', N.REASON_MALFORMED),
    12: ('<http://a.example/x> <http://schema.org/name> "x"@ <http://a.example/>   .', N.REASON_MALFORMED),
}


# The grammar as one regex (the engine's previous SQL implementation), kept as an oracle for the
# hand-written JVM scanner. Possessive quantifiers: Python 3.11+, same semantics as Java's.
_IRI = r"""<[^\x00-\x20<>"\\]*+(?:\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})[^\x00-\x20<>"\\]*+)*+>"""
_BN = r"""_:[^\x00-\x20<>".]++(?:\.++[^\x00-\x20<>".]++)*+"""
_LIT = ('"' + r"""[^"\\\n\r]*+(?:\\(?:[tbnrf"'\\]|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})[^"\\\n\r]*+)*+""" + '"'
        + rf"""(?:@[A-Za-z]++(?:-[A-Za-z0-9]++)*+|\^\^{_IRI})?+""")
QUAD_RE = re.compile(rf"^[ \t]*+({_IRI}|{_BN})[ \t]++({_IRI})[ \t]++({_IRI}|{_BN}|{_LIT})[ \t]++({_IRI}|{_BN})"
                     rf"(?:[ \t]++(?:{_IRI}|{_BN}))?+[ \t]*+\.[ \t\r]*+$")
TRICKY = [
    '_:b0.x.y <http://schema.org/name> "a \\"q\\" \\u00e9"@en-US <http://p/>   .',
    '_:b0. <http://schema.org/name> "x" <http://p/>   .',
    '_:b0 <http://schema.org/name> "x"^^<http://www.w3.org/2001/XMLSchema#string> _:g <http://extra/> .',
    '<http://a/{search_term_string}> <http://schema.org/target> <http://a/\\u0041> <http://p/>.',
    '<http://a/> <http://schema.org/name> "x"@en- <http://p/>   .',
    '<http://a/> <http://schema.org/name> "x"@ <http://p/>   .',
    '<http://a/> <http://schema.org/name> "x"^^<bad iri> <http://p/>   .',
    '<http://a/> <http://schema.org/name> "x" <http://p/> <http://q/> <http://r/> .',
    '<http://a/> <http://schema.org/name> "x"<http://p/>   .',
    '<http://a/> <http://schema.org/name> "x" <http://p/>   . extra',
    '\t<http://a/>\t<http://schema.org/name>\t"tab\\tbed"\t<http://p/>\t.\r',
    '<http://a/> <http://schema.org/name> "bad \\uZZZZ" <http://p/>   .',
    '<http://a/> <http://schema.org/name> _: <http://p/>   .',
    '<http://a/> "p" "x" <http://p/>   .',
]


def test_scanner_agrees_with_the_grammar_regex(spark):
    from udfs.corpus import scanner as jvm

    scan = jvm.attach(spark)
    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines() + [v for v, _ in BAD_LINES.values()] + TRICKY
    terms = scan.terms("\n".join(lines)).split("\n")[:-1]
    assert len(terms) == len(lines)
    accepted = 0
    for line, got in zip(lines, terms):
        m = QUAD_RE.match(line)
        assert (got.split("\x01") if got else None) == (list(m.groups()) if m else None), line
        accepted += m is not None
    assert accepted > 9_000 and accepted < len(lines)


def _crafted_lines():
    good = WDC_SAMPLE.read_text(encoding="utf-8").splitlines()[:40]
    lines, expected_good = [], []
    gi = 0
    for pos in range(1, 41):
        if pos in BAD_LINES:
            lines.append(BAD_LINES[pos][0])
        else:
            lines.append(good[gi])
            expected_good.append(good[gi])
            gi += 1
    return lines, expected_good


def test_malformed_lines_rejected_with_position_and_reason(spark, tmp_path):
    lines, good = _crafted_lines()
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    # Line 41: invalid UTF-8 bytes inside a literal; line 42 blank, line 43 a comment.
    raw += b'<http://a.example/x> <http://schema.org/name> "caf\xe9" <http://a.example/>   .\n\n# comment\n'
    f = tmp_path / "in" / "mixed.nq.gz"
    f.parent.mkdir()
    f.write_bytes(gzip.compress(raw))
    out = run_job(spark, tmp_path, "--input", str(f))
    rejects = sorted(pq.read_table(out / "rejects" / "csets").to_pylist(), key=lambda r: r["position"])
    expected = {**{p: r for p, (_, r) in BAD_LINES.items()}, 41: N.REASON_UNDECODABLE}
    assert [r["position"] for r in rejects] == sorted(expected)
    for r in rejects:
        assert r["reason"].startswith(expected[r["position"]]), r
        assert r["source"] == str(f)
        assert r["raw"]
    assert rejects[1]["reason"] == N.REASON_TERM_COUNT + " (3)"
    c = json.loads((out / "csets" / "_run.json").read_text())["counters"]
    assert c["lines_read"] == 43
    assert c["lines_rejected"] == len(expected)
    assert c["lines_skipped_blank_or_comment"] == 2
    assert c["quads_parsed"] == len(good)
    # Nothing of the good lines is lost: their C-sets equal the reference on the good lines alone.
    table = read_table(out)
    ref = reference_csets(good)
    assert {k: (v["n_instances"], v["n_pages"]) for k, v in table.items()} == {
        k: (v["n_instances"], v["n_pages"]) for k, v in ref.items()}


# ---- cleaning, namespaces, scope ---------------------------------------------------------------
CRAFTED = """\
<http://ex.org/p1#r> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/Recipe> <http://ex.org/p1>   .
<http://ex.org/p1#r> <http://schema.org/name> "Pie"@en <http://ex.org/p1>   .
<http://ex.org/p1#r> <https://schema.org/recipeCategory> "Dessert" <http://ex.org/p1>   .
<http://ex.org/p1#r> <https://www.schema.org/recipeCuisine> "French" <http://ex.org/p1>   .
<http://ex.org/p1#r> <http://www.schema.org/recipeIngredient> "flour" <http://ex.org/p1>   .
<http://ex.org/p1#r> <http://schema.org/cookoo> "x" <http://ex.org/p1>   .
<http://ex.org/p1#r> <http://ogp.me/ns#title> "Pie" <http://ex.org/p1>   .
_:b0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/Recipe> <http://ex.org/p2>   .
_:b0 <http://schema.org/name> "Tart" <http://ex.org/p2>   .
_:b0 <http://schema.org/recipeCategory> "Dessert" <http://ex.org/p2>   .
_:b0 <http://schema.org/recipeCuisine> "French" <http://ex.org/p2>   .
_:b0 <http://schema.org/recipeIngredient> "butter"^^<http://www.w3.org/2001/XMLSchema#string> <http://ex.org/p2>   .
_:b0 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/Recipe> <http://www.ex.org/p3>   .
_:b0 <http://schema.org/name> "Cake \\"deluxe\\"" <http://www.ex.org/p3>   .
<http://ex.org/org> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/organization> <http://ex.org/p1>   .
<http://ex.org/org> <http://schema.org/name> "Org" <http://ex.org/p1>   .
<http://ex.org/org> <http://schema.org/name> "Org" <http://ex.org/p2>   .
"""


@pytest.fixture(scope="module")
def crafted_file(tmp_path_factory):
    f = tmp_path_factory.mktemp("crafted") / "crafted.nq"
    f.write_text(CRAFTED)
    return f


def _csets_of(spark, files, vocab, **cfg):
    conf = dataclasses.replace(CFG, **cfg)
    t = C.tallies(C.entity_pages(spark, [str(f) for f in files], vocab, conf), conf)
    table = C.csets(t)
    return {tuple(r["types"]) + tuple(r["properties"]): r.asDict() for r in table.collect()}, t


def test_cleaning_unifies_namespaces_and_drops_unknown(spark, crafted_file):
    from udfs.schemaorg.vocab import load_vocabulary

    table, t = _csets_of(spark, [crafted_file], load_vocabulary())
    # p1's recipe uses four namespace spellings: one C-set with p2's, cookoo and og:title dropped.
    recipe = table[("Recipe", "name", "recipeCategory", "recipeCuisine", "recipeIngredient")]
    assert recipe["n_instances"] == 2 and recipe["n_pages"] == 2
    # The paper's example: {isa:Recipe, name, recipeCategory, recipeCuisine, recipeIngredient} has 5.
    assert recipe["n_properties"] == 5
    assert recipe["cset_id"] == hashlib.sha256(
        b"isa:Recipe name recipeCategory recipeCuisine recipeIngredient").hexdigest()
    # _:b0 on p3 is another entity than _:b0 on p2 (blank nodes are scoped to their page).
    assert table[("Recipe", "name")]["n_instances"] == 1
    # The IRI entity spans two pages: one instance, two pages; its unknown type is dropped.
    org = table[("name",)]
    assert org["n_instances"] == 1 and org["n_pages"] == 2 and org["n_domains"] == 1
    counters = C.counters(t, len(table), True)
    assert set(counters["tokens_dropped_by_reason"]) == {C.PROPERTY_UNKNOWN, C.PROPERTY_NOT_SCHEMA, C.TYPE_UNKNOWN}


def test_no_clean_keeps_raw_sets_and_page_scope(spark, crafted_file):
    from udfs.schemaorg.vocab import load_vocabulary

    raw, _ = _csets_of(spark, [crafted_file], load_vocabulary(), clean=False)
    keys = {k for k in raw}
    assert ("organization", "name") in keys
    assert any("<http://ogp.me/ns#title>" in k and "cookoo" in k for k in keys)
    paged, _ = _csets_of(spark, [crafted_file], load_vocabulary(), subject_scope="page")
    # With page scope the organisation IRI is one entity per page.
    assert paged[("name",)]["n_instances"] == 2


# ---- inputs ------------------------------------------------------------------------------------
def test_manifest_glob_directory_and_one_task_per_file(spark, tmp_path):
    from udfs.runtime.inputs import InputError, resolve_inputs
    from udfs.schemaorg.vocab import load_vocabulary

    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "part-0.nq.gz").write_bytes(gzip.compress("".join(lines[:3000]).encode()))
    (d / "part-1.nq").write_text("".join(lines[3000:7000]))
    (d / "sub").mkdir()
    (d / "sub" / "part-2.nq.gz").write_bytes(gzip.compress("".join(lines[7000:]).encode()))
    manifest = tmp_path / "inputs.paths"
    manifest.write_text("# three files\npart-0.nq.gz\n\ncorpus/part-1.nq\n".replace("part-0", "corpus/part-0")
                        + str(d / "sub" / "part-2.nq.gz") + "\n")
    by_dir = resolve_inputs([str(d)])
    assert len(by_dir) == 3
    assert resolve_inputs([str(manifest)]) == by_dir
    assert resolve_inputs([str(d / "**" / "*.nq*")]) == by_dir
    with pytest.raises(InputError):
        resolve_inputs([str(d / "nothing-*.nq")])
    with pytest.raises(InputError, match="outside the allowed root"):
        resolve_inputs([str(manifest)], root=d / "sub")
    with pytest.raises(InputError, match="outside the allowed root"):  # the job's --input-root
        CsetsJob(["--output", str(tmp_path / "confined"), "--input", str(manifest), "--input-root", str(d / "sub")]).main()
    # One file is one task, and the scan counts (and numbers) lines per file.
    ep = C.entity_pages(spark, by_dir, load_vocabulary(), CFG)
    assert ep.rdd.getNumPartitions() == 3
    t = C.tallies(ep, CFG)
    per_file = {f.rsplit("/", 1)[-1]: n for f, n in C.lines_per_file(t).items()}
    assert per_file == {"part-0.nq.gz": 3000, "part-1.nq": 4000, "part-2.nq.gz": len(lines) - 7000}
    out = run_job(spark, tmp_path, "--input", str(manifest), "--sample-urls", "3")
    expected = reference_csets([ln.rstrip("\n") for ln in lines])
    got = read_table(out)
    assert {k: v["n_instances"] for k, v in got.items()} == {k: v["n_instances"] for k, v in expected.items()}


def test_help_explains_every_flag():
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "csets.py"), "--help"],
                         capture_output=True, text=True, check=True)
    for flag in ("--input", "--output", "--subject-scope", "--sample-urls", "--vocab", "--no-clean",
                 "--master", "--ignore-corrupt-files"):
        assert flag in res.stdout


def test_damaged_gzip_keeps_the_lines_before_the_damage_and_says_why(spark, tmp_path):
    from udfs.schemaorg.vocab import load_vocabulary

    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    # Two members, as cat'ed files are; then the same cut short, and one with a broken header.
    whole = gzip.compress("".join(lines[:600]).encode()) + gzip.compress("".join(lines[600:1000]).encode())
    d = tmp_path / "in"
    d.mkdir()
    (d / "whole.nq.gz").write_bytes(whole)
    (d / "padded.nq.gz").write_bytes(whole + b"\0" * 8)  # zero padding after the last member
    (d / "cut.nq.gz").write_bytes(whole[: len(whole) - 2000])
    (d / "bad.nq.gz").write_bytes(b"xx" + whole[2:])
    files = sorted(str(f) for f in d.iterdir())
    t = C.tallies(C.entity_pages(spark, files, load_vocabulary(), CFG, ignore_corrupt=True), CFG)
    per_file = {f.rsplit("/", 1)[-1]: n for f, n in C.lines_per_file(t).items()}
    damaged = {f.rsplit("/", 1)[-1]: why for f, why in C.damaged_files(t).items()}
    assert per_file["whole.nq.gz"] == per_file["padded.nq.gz"] == 1000
    assert 600 < per_file["cut.nq.gz"] < 1000 and per_file["bad.nq.gz"] == 0
    assert set(damaged) == {"cut.nq.gz", "bad.nq.gz"}
    assert damaged["cut.nq.gz"].startswith("truncated gzip (EOFException")
    assert damaged["cut.nq.gz"].endswith(f"after {per_file['cut.nq.gz']:,} lines")
    assert damaged["bad.nq.gz"].startswith("corrupt gzip (ZipException: Not in GZIP format) after 0 lines")
    # Without the flag the task fails, naming the file and the damage.
    with pytest.raises(Exception, match=r"(?s)cannot read \S*cut\.nq\.gz: truncated gzip"):
        C.lines_per_file(C.tallies(C.entity_pages(spark, [str(d / "cut.nq.gz")], load_vocabulary(), CFG), CFG))
