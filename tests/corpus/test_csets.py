"""The C-sets job on the real WDC sample, against an independent reference implementation,
plus malformed lines, cleaning, input forms and the paper's n_properties rule."""

from __future__ import annotations

import dataclasses
import functools
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from jobs.csets import CsetsJob
from udfs.corpus import csets as C
from udfs.corpus import nquads as N
from udfs.runtime import lines as L
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
    res = subprocess.run(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            "local[1]",
            str(ROOT / "jobs" / "csets.py"),
            "--input",
            str(WDC_SAMPLE),
            "--output",
            str(out),
            "--top",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
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
    5: ("<http://a.example/x> <http://schema.org/name>   .", N.REASON_TERM_COUNT),
    8: ("<http://a.example/x> <http://schema.org/name> <http://a.example/y <http://a.example/>   .", N.REASON_BRACKETS),
    9: ('<http://a.example/x> <http://schema.org/name> "cut off', N.REASON_TRUNCATED),
    11: ('<http://a.example/x> <http://schema.org/name> "bad \\q escape" <http://a.example/>   .', N.REASON_MALFORMED),
    12: ('<http://a.example/x> <http://schema.org/name> "x"@ <http://a.example/>   .', N.REASON_MALFORMED),
}


# The grammar as one regex (the engine's previous SQL implementation), kept as an oracle for the
# hand-written JVM scanner: W3C N-Quads (three or four terms, white space between them optional)
# plus WDC's fifth term; a comment may follow the final '.'. Groups: s, p, o, g, x (None: absent).
# Possessive quantifiers: Python 3.11+, same semantics as Java's.
_IRI = (
    r"""<[A-Za-z][A-Za-z0-9+.-]*+:[^\x00-\x20<>"\\]*+(?:\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})[^\x00-\x20<>"\\]*+)*+>"""
)
_BN = r"""_:(?!-)[-\w\u0080-\U0010ffff]++(?:\.++[-\w\u0080-\U0010ffff]++)*+"""
_LIT = (
    '"'
    + r"""[^"\\\n\r]*+(?:\\(?:[tbnrf"'\\]|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})[^"\\\n\r]*+)*+"""
    + '"'
    + rf"""(?:@[A-Za-z]++(?:-[A-Za-z0-9]++)*+|\^\^{_IRI})?+"""
)
QUAD_RE = re.compile(
    rf"^[ \t]*+({_IRI}|{_BN})[ \t]*+({_IRI})[ \t]*+({_IRI}|{_BN}|{_LIT})"
    rf"(?:[ \t]*+({_IRI}|{_BN})(?:[ \t]*+({_IRI}|{_BN}))?+)?+"
    rf"[ \t]*+\.[ \t\r]*+(?:#[^\n]*+)?$"
)


def _groups(m):
    """The regex's terms as EntityPageScan.terms gives them: an absent term is empty; None where
    the regex fails or a term holds an escape that is no Unicode scalar value (a lone surrogate,
    above U+10FFFF: udfs.runtime.lines, whose rules the scanner keeps)."""
    if not m:
        return None
    try:
        for t in m.groups():
            L.unescape_uchars(t or "")
    except L.LineError:
        return None
    return [t or "" for t in m.groups()]


TRICKY = [
    '_:b0.x.y <http://schema.org/name> "a \\"q\\" \\u00e9"@en-US <http://p/>   .',
    '_:b0. <http://schema.org/name> "x" <http://p/>   .',
    '_:b0 <http://schema.org/name> "x"^^<http://www.w3.org/2001/XMLSchema#string> _:g <http://extra/> .',
    "<http://a/{search_term_string}> <http://schema.org/target> <http://a/\\u0041> <http://p/>.",
    '<http://a/> <http://schema.org/name> "x"@en- <http://p/>   .',
    '<http://a/> <http://schema.org/name> "x"@ <http://p/>   .',
    '<http://a/> <http://schema.org/name> "x"^^<bad iri> <http://p/>   .',
    '<http://a/> <http://schema.org/name> "x" <http://p/> <http://q/> <http://r/> .',
    '<http://a/> <http://schema.org/name> "x"<http://p/>   .',
    '<http://a/><http://schema.org/name>"x"@en<http://p/><ex:html-rdfa>.',
    "_:s<http://schema.org/name>_:o_:g.",
    "_:s<http://schema.org/name>_:o _:g.",
    '<http://a/> <http://schema.org/name> "x" .',
    '<http://a/> <http://schema.org/name> "x" . # a triple of the default graph',
    "<http://a/> <http://schema.org/name> _:o.",
    "<http://a/> <http://schema.org/name> .",
    '<http://a/> <http://schema.org/name> "x" <http://p/>   . extra',
    '\t<http://a/>\t<http://schema.org/name>\t"tab\\tbed"\t<http://p/>\t.\r',
    '<http://a/> <http://schema.org/name> "bad \\uZZZZ" <http://p/>   .',
    "<http://a/> <http://schema.org/name> _: <http://p/>   .",
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
        assert (got.split("\x01") if got else None) == _groups(m), line
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
    # Line 41: invalid UTF-8 bytes inside a literal; line 42 blank, line 43 a comment; line 44 a
    # triple of the default graph (valid N-Quads, no page: counted, neither a quad nor a reject).
    raw += b'<http://a.example/x> <http://schema.org/name> "caf\xe9" <http://a.example/>   .\n\n# comment\n'
    raw += b'<http://a.example/x> <http://schema.org/name> "three terms"   .\n'
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
    assert rejects[1]["reason"] == N.REASON_TERM_COUNT + " (2)"
    c = json.loads((out / "csets" / "_run.json").read_text())["counters"]
    assert c["lines_read"] == 44
    assert c["lines_rejected"] == len(expected)
    assert c["lines_skipped_blank_or_comment"] == 2
    assert c["lines_default_graph"] == 1 and c["lines_default_graph_why"] == C.DEFAULT_GRAPH_WHY
    assert c["quads_parsed"] == len(good)
    assert c["reconciles"] is True and c["fifth_term"] == {}
    # Nothing of the good lines is lost: their C-sets equal the reference on the good lines alone.
    table = read_table(out)
    ref = reference_csets(good)
    assert {k: (v["n_instances"], v["n_pages"]) for k, v in table.items()} == {
        k: (v["n_instances"], v["n_pages"]) for k, v in ref.items()
    }


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
    assert (
        recipe["cset_id"]
        == hashlib.sha256(b"isa:Recipe name recipeCategory recipeCuisine recipeIngredient").hexdigest()
    )
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
def test_manifest_glob_directory_and_one_task_per_file(spark, tmp_path, capsys):
    from udfs.runtime.inputs import InputError, resolve_inputs
    from udfs.schemaorg.vocab import load_vocabulary

    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    # Cut where a page ends, as WDC cuts its files: a blank node is its file's, so a page cut in
    # two would be two sets of entities (test_a_blank_label_in_two_files_is_two_nodes).
    graph = [ln.rsplit(" ", 4)[-4] if ln.count(" ") >= 4 else ln for ln in lines]
    a = next(i for i in range(3000, len(lines)) if graph[i] != graph[i - 1])
    b = next(i for i in range(7000, len(lines)) if graph[i] != graph[i - 1])
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "part-0.nq.gz").write_bytes(gzip.compress("".join(lines[:a]).encode()))
    (d / "part-1.nq").write_text("".join(lines[a:b]))
    (d / "sub").mkdir()
    (d / "sub" / "part-2.nq.gz").write_bytes(gzip.compress("".join(lines[b:]).encode()))
    manifest = tmp_path / "inputs.paths"
    manifest.write_text(
        "# three files\npart-0.nq.gz\n\ncorpus/part-1.nq\n".replace("part-0", "corpus/part-0")
        + str(d / "sub" / "part-2.nq.gz")
        + "\n"
    )
    by_dir = resolve_inputs([str(d)])
    assert len(by_dir) == 3
    assert resolve_inputs([str(manifest)]) == by_dir
    assert resolve_inputs([str(d / "**" / "*.nq*")]) == by_dir
    with pytest.raises(InputError):
        resolve_inputs([str(d / "nothing-*.nq")])
    with pytest.raises(InputError, match="outside the allowed root"):
        resolve_inputs([str(manifest)], root=d / "sub")
    # The job's --input-root: one error line on stderr naming the rule, exit status 2, no traceback.
    with pytest.raises(SystemExit) as exit_:
        CsetsJob(
            ["--output", str(tmp_path / "confined"), "--input", str(manifest), "--input-root", str(d / "sub")]
        ).main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("csets.py: error: ") and "outside the allowed root" in err[0]
    # One file is one task, and the scan counts (and numbers) lines per file.
    ep = C.entity_pages(spark, by_dir, load_vocabulary(), CFG)
    assert ep.rdd.getNumPartitions() == 3
    t = C.tallies(ep, CFG)
    per_file = {f.rsplit("/", 1)[-1]: n for f, n in C.lines_per_file(t).items()}
    assert per_file == {"part-0.nq.gz": a, "part-1.nq": b - a, "part-2.nq.gz": len(lines) - b}
    out = run_job(spark, tmp_path, "--input", str(manifest), "--sample-urls", "3")
    expected = reference_csets([ln.rstrip("\n") for ln in lines])
    got = read_table(out)
    assert {k: v["n_instances"] for k, v in got.items()} == {k: v["n_instances"] for k, v in expected.items()}


def test_help_explains_every_flag():
    res = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "csets.py"), "--help"], capture_output=True, text=True, check=True
    )
    for flag in (
        "--input",
        "--output",
        "--subject-scope",
        "--sample-urls",
        "--vocab",
        "--no-clean",
        "--master",
        "--ignore-corrupt-files",
    ):
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


# ---- robustness (issue 22): gzip members, the grammar exactly, long lines, the term table -------
def test_damage_after_the_first_gzip_member_is_a_reject_not_the_end_of_the_file(spark, tmp_path):
    """The JDK's GZIPInputStream took a second member it could not parse (or bytes after the last
    member) for the end of the file: 400 lines lost, exit 0, counters reconciled, no reject. Every
    member is now checked as it is read (GzipMembers.java)."""
    from udfs.schemaorg.vocab import load_vocabulary

    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    first, second = gzip.compress("".join(lines[:600]).encode()), gzip.compress("".join(lines[600:1000]).encode())
    d = tmp_path / "in"
    d.mkdir()
    (d / "member2.nq.gz").write_bytes(first + b"\x1f\x00" + second[2:])  # the second member's magic broken
    (d / "junk.nq.gz").write_bytes(first + second + b"junk")  # not zero padding after the last
    (d / "good.nq.gz").write_bytes(gzip.compress("".join(lines[1000:1100]).encode()))
    out = run_job(spark, tmp_path, "--input", str(d), "--ignore-corrupt-files")
    c = json.loads((out / "csets" / "_run.json").read_text())["counters"]
    assert c["files_damaged"] == 2 and c["reconciles"] is True
    assert c["lines_read"] == 600 + 1000 + 100
    rejects = {Path(r["source"]).name: r for r in pq.read_table(out / "rejects" / "csets").to_pylist()}
    assert rejects["member2.nq.gz"]["reason"] == (
        f"corrupt gzip (ZipException: bytes after gzip member 1 (at byte {len(first)}) are not a gzip member "
        "header) after 600 lines"
    )
    assert rejects["junk.nq.gz"]["reason"].startswith("corrupt gzip (ZipException: bytes after gzip member 2")
    assert rejects["junk.nq.gz"]["reason"].endswith("after 1,000 lines")
    assert "good.nq.gz" not in rejects
    # The run record lists every input with the lines it gave and its damage; they add up.
    read = {Path(r["source"]).name: r for r in json.loads((out / "csets" / "_run.json").read_text())["inputs"]["read"]}
    assert {n: r["lines"] for n, r in read.items()} == {"member2.nq.gz": 600, "junk.nq.gz": 1000, "good.nq.gz": 100}
    assert (
        read["member2.nq.gz"]["damaged"] == rejects["member2.nq.gz"]["reason"] and "damaged" not in read["good.nq.gz"]
    )
    # Without the flag: the task fails, naming the file and the lines read before the damage.
    with pytest.raises(Exception, match=r"(?s)cannot read \S*member2\.nq\.gz: corrupt gzip .*after 600 lines"):
        C.lines_per_file(C.tallies(C.entity_pages(spark, [str(d / "member2.nq.gz")], load_vocabulary(), CFG), CFG))


# The scanner against the grammar regex, on generated lines (hypothesis): valid lines built from
# the grammar's parts, then mutated (a character deleted, inserted or replaced, the line cut, bytes
# that are not UTF-8), with comments, blank lines and both line endings, all through the file reader.
_NON_ASCII = "é日😀\ufffd\u00a0\u2028\u0085"
_UCHAR = st.one_of(
    st.from_regex(r"\\u[0-9A-Fa-f]{4}", fullmatch=True), st.from_regex(r"\\U[0-9A-Fa-f]{8}", fullmatch=True)
)
_ECHAR = st.sampled_from(["\\t", "\\b", "\\n", "\\r", "\\f", '\\"', "\\'", "\\\\"])
_PLAIN = st.characters(codec="utf-8", min_codepoint=0x21, exclude_characters='<>"\\')


def _cat(parts):
    return "".join(parts)


_G_IRI = st.builds(
    lambda scheme, p: "<" + scheme + p + ">",
    st.sampled_from(["http:", "http:", "a+b-c.d:", "", "1x:"]),  # an IRI without a scheme is relative: rejected
    st.lists(st.one_of(_PLAIN, _UCHAR, st.sampled_from(list("{}|^`/:#") + list(_NON_ASCII))), max_size=8).map(_cat),
)
_G_BNODE = st.builds(
    lambda first, rest: "_:" + first + "".join("." * k + s for k, s in rest),
    st.text(alphabet=st.sampled_from(list("ab9_-é日%:")), min_size=1, max_size=5),  # "%" ":": not in a label
    st.lists(st.tuples(st.integers(1, 2), st.text(alphabet="ab9é-_", min_size=1, max_size=3)), max_size=2),
)
_G_LITERAL = st.builds(
    lambda body, suffix: '"' + body + '"' + suffix,
    # \x01: what EntityPageScan.terms joins the terms with
    st.lists(
        st.one_of(
            st.characters(codec="utf-8", exclude_characters='"\\\n\r\x01'),
            _ECHAR,
            _UCHAR,
            st.sampled_from(list(_NON_ASCII)),
        ),
        max_size=10,
    ).map(_cat),
    st.one_of(
        st.just(""),
        st.from_regex(r"@[A-Za-z]{1,3}(-[A-Za-z0-9]{1,3}){0,2}", fullmatch=True),
        _G_IRI.map(lambda i: "^^" + i),
    ),
)
# W3C's grammar needs no white space between terms (where a term ends plainly): sometimes none.
_G_WS = st.one_of(st.just(""), st.text(alphabet=" \t", min_size=1, max_size=3))
_G_COMMENT = st.one_of(
    st.just(""),
    st.builds(
        lambda ws, t: ws + "#" + t,
        st.text(alphabet=" \t", max_size=2),
        st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=8),
    ),
)


@st.composite
def _valid_line(draw):
    node = st.one_of(_G_IRI, _G_BNODE)
    terms = [draw(node), draw(_G_IRI), draw(st.one_of(_G_IRI, _G_BNODE, _G_LITERAL))]
    graph = draw(st.sampled_from(["none", "graph", "graph", "fifth"]))
    if graph != "none":  # none: a triple of the default graph
        terms.append(draw(node))
    if graph == "fifth":
        terms.append(draw(node))  # WDC's fifth term (the extractor)
    line = draw(st.text(alphabet=" \t", max_size=2)) + terms[0]
    for t in terms[1:]:
        line += draw(_G_WS) + t
    return (
        line
        + draw(st.text(alphabet=" \t", max_size=2))
        + "."
        + draw(st.text(alphabet=" \t", max_size=2))
        + draw(_G_COMMENT)
    )


@st.composite
def _line_case(draw):
    """(bytes of one line without its terminator, the terminator)."""
    kind = draw(st.sampled_from(["valid", "valid", "mutated", "mutated", "blank", "bytes"]))
    if kind == "blank":
        text = draw(st.text(alphabet=" \t", max_size=3)) + draw(_G_COMMENT)
    else:
        text = draw(_valid_line())
    if kind == "mutated":
        i = draw(st.integers(0, len(text)))
        c = draw(st.sampled_from(list('<>"\\ .#@^_:\tx') + ["\ufffd", "é"]))
        op = draw(st.sampled_from(["delete", "insert", "replace", "cut"]))
        text = {
            "delete": text[:i] + text[i + 1 :],
            "insert": text[:i] + c + text[i:],
            "replace": text[:i] + c + text[i + 1 :],
            "cut": text[:i],
        }[op]
    raw = text.encode("utf-8")
    if kind == "bytes":  # not UTF-8: a lone lead byte, an overlong form, a surrogate, above U+10FFFF
        i = draw(st.integers(0, len(raw)))
        raw = (
            raw[:i]
            + draw(st.sampled_from([b"\xff", b"\xe9", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]))
            + raw[i:]
        )
    return raw, draw(st.sampled_from([b"\n", b"\r\n"]))


def _oracle(raw: bytes) -> str:
    """skip (blank or comment), quad, quad+fifth (WDC's fifth term), triple (the default graph)
    or reject, from the grammar regex alone."""
    if re.fullmatch(rb"[ \t\r]*(?:#.*)?", raw, re.S):
        return "skip"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "reject"
    m = QUAD_RE.match(text)
    if _groups(m) is None:
        return "reject"
    return "triple" if m.group(4) is None else "quad+fifth" if m.group(5) else "quad"


@functools.cache
def _vocabulary():
    """Not a fixture: hypothesis would print the whole vocabulary with a failing example."""
    from udfs.schemaorg.vocab import load_vocabulary

    return load_vocabulary()


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_line_case(), min_size=1, max_size=25))
def test_generated_lines_parse_as_the_grammar_says(spark, cases):
    """The parser's terms (EntityPageScan.terms, one py4j call per batch) equal the regex's groups
    on every decodable generated line, and it rejects exactly the lines the regex rejects."""
    from udfs.corpus import scanner as jvm

    decodable = [raw.decode("utf-8") for raw, _ in cases if _valid_utf8(raw)]
    terms = jvm.attach(spark).terms("\n".join(decodable)).split("\n")[:-1] if decodable else []
    for line, got in zip(decodable, terms, strict=True):
        m = QUAD_RE.match(line)
        assert (got.split("\x01") if got else None) == _groups(m), line


@settings(max_examples=10, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_line_case(), min_size=5, max_size=30), last_terminated=st.booleans())
def test_generated_files_scan_as_the_grammar_says(spark, tmp_path_factory, cases, last_terminated):
    """Each generated batch is one input file, read by the scan (the line reader with both line
    endings, the UTF-8 check, blank and comment lines, the parser): the rejected line numbers, the
    skipped count, the default-graph triples and the lines with a fifth term equal the regex's."""
    f = tmp_path_factory.mktemp("generated") / "lines.nq"
    body = b"".join(raw + end for raw, end in cases)
    # Without its terminator an empty last line is no line at all.
    f.write_bytes(body if last_terminated or not cases[-1][0] else body[: -len(cases[-1][1])])
    want = [_oracle(raw) for raw, _ in cases]
    rows = (
        C.entity_pages(spark, [str(f)], _vocabulary(), CFG)
        .filter(~F.col("kind").isin("quad", "page"))
        .select("kind", "n_lines", "line_no")
        .collect()
    )
    rejected = sorted(r["line_no"] for r in rows if r["kind"].startswith("reject"))
    assert rejected == [i + 1 for i, w in enumerate(want) if w == "reject"], [
        (i + 1, raw, w) for i, ((raw, _), w) in enumerate(zip(cases, want)) if (w == "reject") != (i + 1 in rejected)
    ]
    assert sum(r["n_lines"] for r in rows if r["kind"] == "skip") == want.count("skip")
    assert sum(r["n_lines"] for r in rows if r["kind"] == "default_graph") == want.count("triple")
    assert sum(r["n_lines"] for r in rows if r["kind"] == "fifth_term") == want.count("quad+fifth")
    assert [r["n_lines"] for r in rows if r["kind"] == "file"] == [len(cases)]


def _valid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_valid_lines_once_rejected_are_quads(spark, tmp_path):
    """A literal holding U+FFFD written as such, and a comment after the final '.', are valid N-Quads."""
    lines = [
        '<http://a.example/x> <http://schema.org/name> "r\ufffdsum\ufffd" <http://a.example/>   .',
        '<http://a.example/x> <http://schema.org/description> "d" <http://a.example/> . # a comment',
        '<http://a.example/x> <http://schema.org/alternateName> "n" <http://a.example/> .#tight',
        "\t# a comment after a tab",
        "\t \t",
    ]
    f = tmp_path / "valid.nq"
    f.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    out = run_job(spark, tmp_path, "--input", str(f))
    c = json.loads((out / "csets" / "_run.json").read_text())["counters"]
    assert (c["quads_parsed"], c["lines_rejected"], c["lines_skipped_blank_or_comment"]) == (3, 0, 2)
    assert [r["properties"] for r in read_table(out).values()] == [["alternateName", "description", "name"]]


# ---- WebDataCommons' fifth term (issue 2, restored by issue 59) --------------------------------
# Lines as WDC's extraction framework writes them: the page, then the extractor that read the quad
# (microdata, RDFa, embedded JSON-LD), two spaces and the final dot; blank nodes named per document,
# literals with escapes, language tags and datatypes. Four pages on two hosts.
XSD = "http://www.w3.org/2001/XMLSchema#"
EXTRACTOR_LINES = f"""\
_:node1a {RDF_TYPE} <http://schema.org/Product> <http://shop.example/p/1> <ex:html-microdata>  .
_:node1a <http://schema.org/name> "Blue \\"mug\\""@en <http://shop.example/p/1> <ex:html-microdata>  .
_:node1a <http://schema.org/offers> _:node1b <http://shop.example/p/1> <ex:html-microdata>  .
_:node1b {RDF_TYPE} <http://schema.org/Offer> <http://shop.example/p/1> <ex:html-microdata>  .
_:node1b <http://schema.org/price> "12.50" <http://shop.example/p/1> <ex:html-microdata>  .
_:node1b <http://schema.org/priceCurrency> "EUR" <http://shop.example/p/1> <ex:html-microdata>  .
<http://blog.example/post#it> {RDF_TYPE} <http://schema.org/BlogPosting> <http://blog.example/post> <ex:html-rdfa>  .
<http://blog.example/post#it> <http://schema.org/headline> "Caf\\u00E9\\tnotes"@fr-FR <http://blog.example/post> <ex:html-rdfa>  .
<http://blog.example/post#it> <http://schema.org/datePublished> "2022-12-01"^^<{XSD}date> <http://blog.example/post> <ex:html-rdfa>  .
<http://blog.example/post#it> <http://ogp.me/ns#title> "Notes" <http://blog.example/post> <ex:html-rdfa>  .
_:node6013 {RDF_TYPE} <http://schema.org/Article> <http://example.org/blog-entry-21250.html> <ex:html-embedded-jsonld>  .
_:node6013 <http://schema.org/author> _:node6014 <http://example.org/blog-entry-21250.html> <ex:html-embedded-jsonld>  .
_:node6014 {RDF_TYPE} <http://schema.org/Person> <http://example.org/blog-entry-21250.html> <ex:html-embedded-jsonld>  .
_:node6014 <http://schema.org/name> "Ann O\\u2019Neil" <http://example.org/blog-entry-21250.html> <ex:html-embedded-jsonld>  .
_:node1a {RDF_TYPE} <https://schema.org/Product> <http://shop.example/p/2> <ex:html-embedded-jsonld>  .
_:node1a <https://schema.org/name> "Red mug" <http://shop.example/p/2> <ex:html-embedded-jsonld>  .
_:node1a <https://schema.org/offers> _:node1b <http://shop.example/p/2> <ex:html-embedded-jsonld>  .
_:node1b {RDF_TYPE} <https://schema.org/Offer> <http://shop.example/p/2> <ex:html-embedded-jsonld>  .
_:node1b <https://schema.org/price> "9"^^<{XSD}decimal> <http://shop.example/p/2> <ex:html-embedded-jsonld>  .
"""


def test_wdc_extractor_lines_are_read_and_the_fifth_term_counted(spark, tmp_path):
    """Issue 2 asked for WDC's N-Quads variant with 4 or 5 terms; a fifth term became a reject
    (eae15b3) and every line of extractor output was lost. By default it is read again: the
    C-sets are those of the same lines without the fifth term, and the run record counts the
    extractors. Under --strict-nquads (W3C N-Quads) each line is a reject that says why."""
    lines = EXTRACTOR_LINES.splitlines()
    f = tmp_path / "in" / "extractors.nq.gz"
    f.parent.mkdir()
    f.write_bytes(gzip.compress(EXTRACTOR_LINES.encode()))
    out = run_job(spark, tmp_path, "--input", str(f), "--sample-urls", "3")
    record = json.loads((out / "csets" / "_run.json").read_text())
    c = record["counters"]
    assert (c["lines_read"], c["quads_parsed"], c["lines_rejected"], c["reconciles"]) == (19, 19, 0, True)
    assert c["fifth_term"] == {"<ex:html-microdata>": 6, "<ex:html-embedded-jsonld>": 9, "<ex:html-rdfa>": 4}
    assert c["pages"] == 4 and [r["graphs"] for r in record["inputs"]["read"]] == [4]
    table = {(tuple(r["types"]), tuple(r["properties"])): r for r in read_table(out).values()}
    assert {k: (r["n_instances"], r["n_pages"], r["n_domains"]) for k, r in table.items()} == {
        (("Product",), ("name", "offers")): (2, 2, 1),  # microdata on one page, JSON-LD on the other
        (("Offer",), ("price", "priceCurrency")): (1, 1, 1),
        (("Offer",), ("price",)): (1, 1, 1),
        (("BlogPosting",), ("datePublished", "headline")): (1, 1, 1),  # og:title dropped
        (("Article",), ("author",)): (1, 1, 1),
        (("Person",), ("name",)): (1, 1, 1),
    }
    assert set(table[(("Product",), ("name", "offers"))]["sample_urls"]) == {
        "http://shop.example/p/1",
        "http://shop.example/p/2",
    }
    # The same lines without the fifth term: the same table, and the independent reference's.
    four = [ln.rsplit(" ", 3)[0] + " ." for ln in lines]
    assert all(QUAD_RE.match(ln).group(5) is None for ln in four)
    (tmp_path / "four").mkdir()
    (tmp_path / "four" / "four.nq").write_text("\n".join(four) + "\n")
    out4 = run_job(spark, tmp_path / "four", "--input", str(tmp_path / "four" / "four.nq"), "--sample-urls", "3")
    assert read_table(out4) == read_table(out)
    ref = reference_csets(four)
    assert {k: (v["n_instances"], v["n_pages"]) for k, v in read_table(out).items()} == {
        k: (v["n_instances"], v["n_pages"]) for k, v in ref.items()
    }
    assert json.loads((out4 / "csets" / "_run.json").read_text())["counters"]["fifth_term"] == {}
    # W3C N-Quads exactly: every line a reject naming the fifth term, nothing lost.
    (tmp_path / "strict").mkdir()
    # every line rejected: a run in which nothing succeeded exits 2 (issue 64), its record says why
    with pytest.raises(SystemExit) as stop:
        run_job(spark, tmp_path / "strict", "--input", str(f), "--strict-nquads")
    assert stop.value.code == 2
    strict = tmp_path / "strict" / "out"
    c = json.loads((strict / "csets" / "_run.json").read_text())["counters"]
    assert (c["lines_read"], c["quads_parsed"], c["lines_rejected"], c["reconciles"]) == (19, 0, 19, True)
    assert c["rejected_by_reason"] == {N.REASON_FIFTH_TERM_STRICT: 19} and c["fifth_term"] == {}
    assert read_table(strict) == {}


def test_a_line_over_max_line_bytes_is_a_reject_with_a_sample(spark, tmp_path):
    """An 8 MiB line under a 1 MiB bound: a reject row with the line's first characters, the lines
    around it kept; the reader never holds more than about the bound (it skips to the next LF)."""
    from udfs.corpus import scanner as jvm

    lines = WDC_SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:100]
    long_line = '<http://a.example/x> <http://schema.org/description> "' + "é" * (4 << 20) + '" <http://a.example/> .'
    assert len(long_line.encode()) > 8 << 20
    f = tmp_path / "in" / "long.nq.gz"
    f.parent.mkdir()
    f.write_bytes(gzip.compress(("".join(lines[:50]) + long_line + "\r\n" + "".join(lines[50:]) + long_line).encode()))
    out = run_job(spark, tmp_path, "--input", str(f), "--max-line-bytes", str(1 << 20), "--reject-raw-chars", "200")
    rejects = sorted(pq.read_table(out / "rejects" / "csets").to_pylist(), key=lambda r: r["position"])
    assert [r["position"] for r in rejects] == [51, 102]  # the second one: the last line, without LF
    for r in rejects:
        assert r["reason"] == f"{N.REASON_TOO_LONG} (1,048,576 bytes)"
        assert r["raw"] == long_line[:200]
    c = json.loads((out / "csets" / "_run.json").read_text())["counters"]
    assert (c["lines_read"], c["quads_parsed"], c["lines_rejected"], c["reconciles"]) == (102, 100, 2, True)
    ref = reference_csets([ln.rstrip("\n") for ln in lines])
    assert {k: v["n_instances"] for k, v in read_table(out).items()} == {k: v["n_instances"] for k, v in ref.items()}
    # The reader's buffer stays near the bound, not the line: 2 MiB for a 1 MiB bound.
    assert jvm.attach(spark).readerBufferBytes(str(f), 1 << 20) <= 2 << 20


def test_predicate_table_probes_grow_linearly(spark):
    """Distinct predicates of one length and one ending (the table hashed the length and the last
    16 bytes: 30k such predicates took 42.6 s in the table alone): probes at n and 4n."""
    from udfs.corpus import scanner as jvm

    scan = jvm.attach(spark)

    def probes(n):
        return scan.termTableProbes("\n".join(f"<http://x.example/{i:08d}/a-shared-ending-of-16>" for i in range(n)))

    small, large = probes(5_000), probes(20_000)
    assert small >= 2 * 5_000  # every term put and got once
    assert large <= 5 * small, (small, large)
