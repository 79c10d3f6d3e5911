"""jobs/evaluate.py at scale: streaming input, parts with completion markers, resume keyed by the
settings, an s3:// output root, the Ray executor with several workers.

These tests exercise the harness (planning, concurrency, parts, markers, resume), not a model's
answers: the model is a small OpenAI-compatible stub written here, a real HTTP server on
127.0.0.1 that answers ``/v1/models``, ``/tokenize`` (llama.cpp's shape) and
``/v1/chat/completions`` with "yes" or "no" and first-token logprobs, deterministically from the
request's text. The pages are the bundled demo pages (real HTML through the pages job's
extraction) replicated under new URLs. Answers from a real model are tested in test_evaluate.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import ROOT, demo_pages_table


class _Stub(http.server.BaseHTTPRequestHandler):
    delay_s = 0.0
    seen: list[str] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "stub-model", "object": "model"}]})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.endswith("/tokenize"):
            text = req.get("content", "")
            self._send({"tokens": [{"id": i, "piece": text[i : i + 4]} for i in range(0, len(text), 4)]})
            return
        type(self).seen.append(self.headers.get("Authorization") or "")
        if self.delay_s:
            time.sleep(self.delay_s)
        last = req["messages"][-1]["content"]
        yes = hashlib.sha256(last.encode()).digest()[0] % 3 != 0  # two in three claims pass
        word, other = ("yes", "no") if yes else ("no", "yes")
        prompt = sum(len(m["content"]) for m in req["messages"]) // 4
        type(self).billed.append(prompt)
        self._send(
            {
                "model": req.get("model") or "stub-model",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": word},
                        "logprobs": {
                            "content": [
                                {
                                    "token": word,
                                    "logprob": -0.05,
                                    "top_logprobs": [
                                        {"token": word, "logprob": -0.05},
                                        {"token": other, "logprob": -3.0},
                                    ],
                                }
                            ]
                        },
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": 1,
                    "prompt_tokens_details": {"cached_tokens": 0},
                },
            }
        )


@contextlib.contextmanager
def stub_server(delay_s: float = 0.0):
    handler = type("Stub", (_Stub,), {"delay_s": delay_s, "seen": [], "billed": []})
    # a listen backlog for hundreds of requests in flight (the default 5 drops connections)
    server_class = type("StubServer", (http.server.ThreadingHTTPServer,), {"request_queue_size": 1024})
    server = server_class(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        server.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        server.handler = handler
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def stub():
    with stub_server() as s:
        yield s


def replicated_pages(folder: Path, copies: int) -> dict:
    """Two Parquet files of demo pages replicated under ``copies`` URL prefixes; the first
    prefix's pages are in both files (sampled in two strata: duplicates across files), one copy
    of a page appears twice in one file, one row is a failed fetch. Returns what a run must
    count."""
    base = demo_pages_table().to_pylist()
    rows = []
    for c in range(copies):
        for r in base:
            rows.append(
                {
                    **r,
                    "page_url": r["page_url"].replace("extruct-samples.example", f"copy{c}.example"),
                    "sample_rank": c,
                }
            )
    dup_across = [{**r, "stratum": "other"} for r in rows[: len(base)]]
    dup_within = [{**rows[-1], "stratum": "again"}]
    failed = [{**rows[0], "page_url": "http://failed.example/", "status": "fetch_failed", "text": None}]
    half = len(rows) // 2
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows[:half] + dup_across), folder / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[half:] + dup_within + failed), folder / "part-1.parquet")
    with_text = sum(bool((r["text"] or "").strip()) for r in base)
    return {
        "input_rows": len(rows) + len(dup_across) + len(dup_within) + 1,
        "pages": copies * with_text,
        "no_text": copies * (len(base) - with_text)
        + sum(not (r["text"] or "").strip() for r in dup_across)
        + sum(not (r["text"] or "").strip() for r in dup_within),
    }


def argv(pages: Path, out, url: str, *extra: str) -> list[str]:
    return [
        "--input",
        str(pages),
        "--output",
        str(out),
        "--base-url",
        url,
        "--no-generation",
        "--stages",
        "validity",
        "factuality",
        "compliance",
        "--max-claims",
        "3",
        "--context-window",
        "2048",
        "--executor",
        "local",
        "--limit",
        "0",
        "--timeout-s",
        "30",
        *extra,
    ]


def table(folder: Path) -> list[dict]:
    files = sorted(folder.glob("part-*.parquet"))
    return pq.read_table(files).to_pylist() if files else []


def markers(out: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((out / "scores" / "_committed").glob("*.json"))}


def record(out: Path) -> dict:
    return json.loads((out / "scores" / "_run.json").read_text())


RECONCILE = (
    "not_ok_or_not_selected",
    "no_text",
    "ambiguous_page_id_rows",
    "conflicting_text_rows",
    "duplicate_rows",
    "over_limit",
    "already_scored",
    "evaluated",
    "failed",
)


def reconciles(c: dict) -> bool:
    return c["input_rows"] == sum(c[k] for k in RECONCILE)


def test_counters_reconcile_over_files_with_duplicates_and_a_limit(stub, tmp_path):
    """Two input files, a page in both (two strata), a page twice in one file, a failed fetch,
    pages without text, a --limit: each page once, in parts of --part-pages pages, every row
    carrying the run's settings hash, the counters adding up, rejects in the Parquet layout."""
    from jobs.evaluate import EvaluateJob
    from udfs.runtime.rejects import COLUMNS

    pages = tmp_path / "pages"
    want = replicated_pages(pages, copies=4)
    out = tmp_path / "out"
    limit = want["pages"] - 1
    assert EvaluateJob(argv(pages, out, stub.url, "--limit", str(limit), "--part-pages", "3")).main() == 0
    rec = record(out)
    c = rec["counters"]
    assert reconciles(c), c
    assert c["input_rows"] == want["input_rows"] and c["no_text"] == want["no_text"]
    assert c["not_ok_or_not_selected"] == 1 and c["over_limit"] == 1 and c["failed"] == 0
    assert c["evaluated"] == limit and c["duplicate_rows"] == want["input_rows"] - 1 - want["no_text"] - want["pages"]
    assert sorted(rec["inputs"]["rows_per_file"].values()) == sorted(
        pq.read_metadata(p).num_rows for p in pages.glob("*.parquet")
    )
    scores, triples = table(out / "scores"), table(out / "triples")
    keys = [s["page_key"] for s in scores]
    assert len(keys) == len(set(keys)) == limit
    # one part per table per unit of 3 pages, the same names in the three tables, each with its marker
    names = {t: sorted(p.stem for p in (out / t).glob("part-*.parquet")) for t in ("markups", "triples", "scores")}
    assert names["markups"] == names["triples"] == names["scores"] == sorted(markers(out))
    assert len(names["scores"]) == -(-limit // 3) == c["parts_written"]
    assert sorted(k for m in markers(out).values() for k in m["pages"]) == sorted(keys)
    digest = rec["evaluation"]["settings_hash"]
    assert {r["settings_hash"] for r in scores + triples + table(out / "markups")} == {digest}
    assert all(m["settings_hash"] == digest for m in markers(out).values())
    for s in scores:
        rows = [t for t in triples if t["page_key"] == s["page_key"]]
        assert s["status"] == "ok" and len(rows) == s["n_triples"] > 0
        assert 0 < s["verdict_requests"] and s["n_factual"] <= s["n_valid"]
    rejects = pq.read_table(out / "rejects" / "evaluate").to_pylist()
    assert len(rejects) == want["no_text"] and tuple(rejects[0]) == COLUMNS
    assert {r["reason"] for r in rejects} == {"page has no text"}
    # a request per model call went to the stub, none with a bearer token
    assert stub.handler.seen and set(stub.handler.seen) == {""}

    # The same run again: everything is already scored, nothing is written.
    assert EvaluateJob(argv(pages, out, stub.url, "--limit", str(limit), "--part-pages", "3")).main() == 0
    c2 = record(out)["counters"]
    assert reconciles(c2) and c2["already_scored"] == limit and c2["evaluated"] == 0
    assert sorted(markers(out)) == names["scores"]


def test_plan_holds_no_page_text_and_orders_like_the_sample(tmp_path):
    """The driver's plan is page keys and row positions only; shortest-first and sample order."""
    import pyarrow.dataset as pads

    from udfs.evaluation.plan import plan_pages

    pages = tmp_path / "pages"
    want = replicated_pages(pages, copies=3)
    ds = pads.dataset(str(pages), format="parquet")
    plan = plan_pages(ds, limit=0, order="sample", batch_rows=2)
    assert plan.todo.column_names == ["page_key", "page_url", "file", "row"]
    assert plan.todo.num_rows == want["pages"] and plan.counters["input_rows"] == want["input_rows"]
    ranks = [int(u.split("copy")[1].split(".")[0]) for u in plan.todo["page_url"].to_pylist()]
    assert ranks == sorted(ranks)
    short = plan_pages(ds, limit=2, order="shortest")
    lengths = {r["page_url"]: len(r["text"] or "") for r in ds.to_table().to_pylist()}
    got = [lengths[u] for u in short.todo["page_url"].to_pylist()]
    assert got == sorted(got) and got[-1] <= sorted(v for v in lengths.values() if v)[1]
    done = set(plan.todo["page_key"].to_pylist()[:2])
    rest = plan_pages(ds, limit=0, order="sample", done=done)
    assert rest.counters["already_scored"] == 2
    assert rest.todo["page_key"].to_pylist() == plan.todo["page_key"].to_pylist()[2:]
    units = list(rest.units(4))
    assert [len(u["pages"]) for u in units] == [4] * (len(units) - 1) + [rest.todo.num_rows - 4 * (len(units) - 1)]
    # spread: every k-th page, each page in exactly one unit, sizes within one of each other
    keys = rest.todo["page_key"].to_pylist()
    spread = list(rest.units(-(-len(keys) // 2), spread=True))
    assert len(spread) == 2
    assert [[p[2] for p in u["pages"]] for u in spread] == [keys[0::2], keys[1::2]]


def test_a_killed_run_resumes_at_part_granularity(tmp_path):
    """SIGKILL once some parts are committed: the rerun keeps them untouched, removes what was in
    flight, evaluates the rest; every page is in exactly one committed part."""
    pages = tmp_path / "pages"
    want = replicated_pages(pages, copies=4)
    out = tmp_path / "out"
    with stub_server(delay_s=0.05) as slow:
        cmd = [
            sys.executable,
            str(ROOT / "jobs" / "evaluate.py"),
            *argv(pages, out, slow.url, "--part-pages", "2", "--max-in-flight", "2"),
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and len(markers(out)) < 2:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = markers(out)
        assert 2 <= len(before) < -(-want["pages"] // 2), proc.stderr.read().decode()[-2000:]
        kept = {
            p.name: p.stat().st_mtime_ns
            for t in ("markups", "triples", "scores")
            for p in (out / t).glob("part-*.parquet")
            if p.stem in before
        }
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    c = record(out)["counters"]
    assert reconciles(c) and c["failed"] == 0
    assert c["already_scored"] == sum(len(m["pages"]) for m in before.values())
    assert c["already_scored"] + c["evaluated"] == want["pages"]
    after = {
        p.name: p.stat().st_mtime_ns
        for t in ("markups", "triples", "scores")
        for p in (out / t).glob("part-*.parquet")
        if p.stem in before
    }
    assert after == kept  # committed parts untouched
    names = {t: sorted(p.stem for p in (out / t).glob("part-*.parquet")) for t in ("markups", "triples", "scores")}
    assert names["markups"] == names["triples"] == names["scores"] == sorted(markers(out))  # no leftover
    scores, triples = table(out / "scores"), table(out / "triples")
    assert len(scores) == len({s["page_key"] for s in scores}) == want["pages"]
    tk = [(t["page_key"], t["source"], t["subject"], t["property"], t["value"], t["entity_type"]) for t in triples]
    assert len(tk) == len(set(tk)) == sum(s["n_triples"] for s in scores)


def test_a_rerun_with_other_settings_refuses_and_overwrite_replaces(stub, tmp_path, capsys):
    """A changed threshold never reuses or mixes rows: the rerun stops with a clear error and
    leaves the output as it was; with --overwrite every row is of the new settings."""
    from jobs.evaluate import EvaluateJob

    pages = tmp_path / "pages"
    want = replicated_pages(pages, copies=2)
    out = tmp_path / "out"
    assert EvaluateJob(argv(pages, out, stub.url)).main() == 0
    first = record(out)["evaluation"]["settings_hash"]
    before = sorted(p.name for p in (out / "scores").glob("part-*.parquet"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        EvaluateJob(argv(pages, out, stub.url, "--factuality-threshold", "0.9")).main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("evaluate.py: error: ") and "other settings" in err[-1] and "--overwrite" in err[-1]
    assert sorted(p.name for p in (out / "scores").glob("part-*.parquet")) == before
    assert record(out)["evaluation"]["settings_hash"] == first

    assert EvaluateJob(argv(pages, out, stub.url, "--factuality-threshold", "0.9", "--overwrite")).main() == 0
    second = record(out)["evaluation"]["settings_hash"]
    assert second != first and record(out)["counters"]["evaluated"] == want["pages"]
    rows = table(out / "scores") + table(out / "triples") + table(out / "markups")
    assert {r["settings_hash"] for r in rows} == {second}
    assert all(m["settings_hash"] == second for m in markers(out).values())


def _eval_config(judge):
    from udfs.evaluation.evaluator import EvalConfig
    from udfs.runtime.config import load_config

    return EvalConfig(
        stages=["validity", "factuality"],
        judge=judge,
        context_window=2048,
        max_tokens=64,
        max_claims=0,
        early_exit=True,
        validity_engine="compiled",
        validity_strict=False,
        validity_vocab="30.0",
        validity_mode="schemaorg",
        scores=load_config().scores,
    )


def test_settings_hash_covers_prompt_text_the_judge_as_applied_and_named_files(tmp_path):
    """The hash changes with a prompt file's text, with the judge as applied (a threshold) and with
    the content of a file a setting names (a vocabulary file), not with where that file lives nor
    with where a threshold came from."""
    import dataclasses
    import shutil

    from udfs.agents.judge import build_judge
    from udfs.evaluation.parts import settings_hash
    from udfs.runtime.config import load_config
    from udfs.runtime.paths import PROMPTS_DIR

    conf = load_config()
    settings = dataclasses.replace(conf.judge, verdict_models=(), calibration="", factuality_threshold=0.5)

    def judge(given=(), **kw):
        return build_judge(dataclasses.replace(settings, **kw), config_file=conf.path, given=given)

    cfg = _eval_config(judge())
    prompts = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, prompts)
    h0, _ = settings_hash(cfg, prompts_dir=prompts)
    assert settings_hash(cfg, prompts_dir=PROMPTS_DIR)[0] == h0
    q = prompts / "factuality_question.txt"
    q.write_text(q.read_text() + " ")
    assert settings_hash(cfg, prompts_dir=prompts)[0] != h0
    assert (
        settings_hash(dataclasses.replace(cfg, judge=judge(factuality_threshold=0.6)), prompts_dir=PROMPTS_DIR)[0] != h0
    )
    # where a threshold came from is not a setting: the same value given on the command line, or the
    # fallback of an agent left to a calibration without an entry, is the same run
    given = judge(given={"factuality_threshold"})
    fallback = judge(factuality_threshold="calibrated", fallback_threshold=0.5)
    assert given.record.agents["factuality"].threshold.origin.kind == "command_line"
    assert fallback.record.agents["factuality"].threshold.origin.kind == "fallback"
    for same in (given, fallback):
        assert (
            settings_hash(dataclasses.replace(cfg, judge=same), prompts_dir=prompts)[0]
            == settings_hash(cfg, prompts_dir=prompts)[0]
        )
    a, b = tmp_path / "a.json", tmp_path / "b" / "a.json"
    b.parent.mkdir()
    a.write_text("{}")
    b.write_text("{}")
    with_a, _ = settings_hash(dataclasses.replace(cfg, validity_vocab=str(a)), prompts_dir=PROMPTS_DIR)
    assert settings_hash(dataclasses.replace(cfg, validity_vocab=str(a)), prompts_dir=PROMPTS_DIR)[0] == with_a
    b.write_text('{"x": 1}')
    assert settings_hash(dataclasses.replace(cfg, validity_vocab=str(b)), prompts_dir=PROMPTS_DIR)[0] != with_a


def test_an_unrelated_calibration_entry_keeps_the_settings_hash_and_the_taken_entrys_threshold_does_not(tmp_path):
    """The settings hash covers the judge as applied, not the calibration file: an entry for
    another model added to the file leaves the hash of a run whose judge took an entry there as it
    was (its resume is not refused); the taken entry refitted to another threshold changes it."""
    import dataclasses

    from udfs.agents import calibration as cal
    from udfs.agents.judge import build_judge
    from udfs.evaluation.parts import settings_hash
    from udfs.runtime.config import load_config
    from udfs.runtime.paths import PROMPTS_DIR

    conf = load_config()
    path = str(tmp_path / "calibration.json")
    # the shipped judge's questions and thresholds ("calibrated"), for the stub's model
    settings = dataclasses.replace(conf.judge, verdict_models=("stub-model",), calibration=path)
    assert settings.factuality_threshold == settings.compliance_threshold == "calibrated"
    bare = build_judge(dataclasses.replace(settings, calibration=""), config_file=conf.path)

    def fitted(agent, threshold, model="stub-model"):
        return {
            "model": model,
            "agent": agent,
            "strategy": settings.strategy,
            "layout": cal.layout_key(bare.key(agent)),
            "prompts_sha256": bare.record.agents[agent].prompts_sha256,
            "threshold": threshold,
            "knots": {"x": [0.1, 0.9], "y": [0.0, 1.0]},
            "seed": 1,
            "fit_fraction": 0.5,
            "ground_truth_sha256": "g" * 64,
            "fit": {"n": 10, "groups": 4},
            "created_at": "2026-12-01T00:00:00+00:00",
            "test": {"n": 10, "tp": 4, "fn": 1, "tn": 4, "fp": 1, "precision": 0.8, "recall": 0.8, "f1": 0.8},
        }

    def hashed():
        judge = build_judge(settings, config_file=conf.path)
        return judge, settings_hash(_eval_config(judge), prompts_dir=PROMPTS_DIR)[0]

    cal.write(path, [fitted("factuality", 0.31), fitted("compliance", 0.27)])
    judge, h0 = hashed()
    assert {a: judge.record.agents[a].threshold.origin.kind for a in ("factuality", "compliance")} == {
        "factuality": "calibration",
        "compliance": "calibration",
    }
    assert judge.threshold("factuality") == 0.31
    file_before = cal.sha256(path)
    cal.write(
        path, [fitted("factuality", 0.7, model="another-model"), fitted("compliance", 0.6, model="another-model")]
    )
    assert cal.sha256(path) != file_before and len(cal.read(path)["entries"]) == 4
    judge, h1 = hashed()
    assert judge.threshold("factuality") == 0.31 and h1 == h0
    # the taken entry refitted: another threshold (and entry), another run
    cal.write(path, [fitted("factuality", 0.42)])
    judge, h2 = hashed()
    assert judge.threshold("factuality") == 0.42 and h2 != h0


def test_an_s3_output_root_holds_parts_and_markers_read_back_with_duckdb(
    stub, s3_server, s3_keys, tmp_path, monkeypatch
):
    """pages/ and the output on a local S3-compatible server: the workers read their rows from
    S3, the parts, markers and rejects are objects there, DuckDB reads them back, a rerun resumes
    from the markers it finds on S3, and the API key is sent as a bearer token but never written
    to the run record."""
    import boto3
    import duckdb
    import s3fs

    from jobs.evaluate import EvaluateJob

    local = tmp_path / "pages"
    want = replicated_pages(local, copies=2)
    root = f"s3://{s3_server}/eval-{os.getpid()}"
    for f in sorted(local.glob("*.parquet")):
        boto3.client("s3").put_object(
            Bucket=s3_server, Key=f"{root.split('/', 3)[3]}/pages/{f.name}", Body=f.read_bytes()
        )
    pages = f"{root}/pages"
    monkeypatch.setenv("LLM4SCHEMA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    stub.handler.seen.clear()
    assert EvaluateJob(argv(pages, root, stub.url, "--part-pages", "2")).main() == 0
    assert set(stub.handler.seen) == {"Bearer sk-test-secret"}
    keys = s3_keys(root.split("/", 3)[3])
    parts = {t: [k for k in keys if f"/{t}/part-" in k] for t in ("markups", "triples", "scores")}
    assert len(parts["scores"]) == len(parts["triples"]) == -(-want["pages"] // 2)
    assert len([k for k in keys if "/scores/_committed/" in k]) == len(parts["scores"])
    assert not any(k.endswith(".tmp") or "/cache/" in k for k in keys)
    con = duckdb.connect()
    con.register_filesystem(s3fs.S3FileSystem())
    n, distinct, hashes = con.execute(
        f"SELECT count(*), count(DISTINCT page_key), count(DISTINCT settings_hash) "
        f"FROM read_parquet('{root}/scores/part-*.parquet')"
    ).fetchone()
    assert n == distinct == want["pages"] and hashes == 1
    assert (
        con.execute(f"SELECT count(*) FROM read_parquet('{root}/rejects/evaluate/*.parquet')").fetchone()[0]
        == want["no_text"]
    )
    rec = json.loads(con.execute(f"SELECT content FROM read_text('{root}/scores/_run.json')").fetchone()[0])
    assert "sk-test-secret" not in json.dumps(rec)
    assert EvaluateJob(argv(pages, root, stub.url, "--part-pages", "2")).main() == 0
    rec = json.loads(con.execute(f"SELECT content FROM read_text('{root}/scores/_run.json')").fetchone()[0])
    assert rec["counters"]["already_scored"] == want["pages"] and rec["counters"]["evaluated"] == 0


def test_the_ray_executor_with_two_workers_writes_the_rows_of_the_local_one(tmp_path):
    """Ray Data actors (two workers, units of 2 pages) against the stub: the same rows as the
    local executor, no page twice, parts from both workers, Ray's own progress display off.
    The stub answers each request after 1 s, so a unit lasts seconds, long enough for the second
    worker to be up before the first has taken every unit (Ray Data deals units to the workers
    that are ready: on a loaded machine an instant stub let the first take them all)."""
    from jobs.evaluate import EvaluateJob

    pages = tmp_path / "pages"
    want = replicated_pages(pages, copies=3)
    local, dist = tmp_path / "local", tmp_path / "dist"
    with stub_server(delay_s=1.0) as stub:
        assert EvaluateJob(argv(pages, local, stub.url, "--part-pages", "2")).main() == 0
        ray_argv = argv(pages, dist, stub.url, "--part-pages", "2", "--workers", "2")
        ray_argv[ray_argv.index("--executor") + 1] = "ray"
        # Its own process, so its own local Ray: the suite's model service may hold this process's
        # Ray, and a Ray started or shut down here would be that one.
        done = subprocess.run(
            [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *ray_argv],
            capture_output=True,
            text=True,
            timeout=600,
            env={**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert record(dist)["counters"]["evaluated"] == want["pages"]
    # timings, and which answers the request cache gave: the second run finds the first one's answers
    # and the engine's work for them (the accounting of an answer from the cache is none)
    drop = {
        "latency_s",
        "verdict_latency_s",
        "wall_s",
        "generation_latency_s",
        "verdict_cache_hits",
        "verdict_prompt_tokens",
        "verdict_cached_prompt_tokens",
        "prompt_tokens",
        "cached_prompt_tokens",
        "completion_tokens",
    }

    def rows(out: Path, t: str) -> list:
        return sorted(
            json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True, default=str)
            for r in table(out / t)
        )

    for t in ("markups", "triples", "scores"):
        assert rows(local, t) == rows(dist, t)
    writers = {p.stem.split("-")[2] for p in (dist / "scores").glob("part-*.parquet")}
    assert len(writers) == 2


def test_progress_line_gives_rates_of_the_named_counts():
    """The evaluation's one-line summary: pages done/total, verdicts and prompt tokens with their
    rates, cache hits, ETA."""
    import io

    from udfs.runtime.progress import Progress

    now = [0.0]
    out = io.StringIO()
    p = Progress(
        "evaluate",
        10,
        "pages",
        stream=out,
        tty=False,
        clock=lambda: now[0],
        background=False,
        interval_s=5,
        rates=("verdicts", "prompt_tokens"),
    )
    now[0] = 10.0
    p.update(2, verdicts=40, prompt_tokens=5000, cache_hits=3)
    line = out.getvalue().strip()
    assert line.startswith("evaluate: 2/10 pages, 40 verdicts, 5,000 prompt_tokens, 3 cache_hits")
    assert "4.0 verdicts/s" in line and "500.0 prompt_tokens/s" in line and "ETA 40 s" in line


def test_the_verdict_token_columns_count_the_requests_the_engine_served(tmp_path):
    """The scores' verdict accounting against the stub engine's own bill: the judge asks some
    requests twice (``complies-ranged`` is the compliance agent's very request), so some answers
    come from the request cache; those count in ``verdict_cache_hits`` and add no tokens, so the
    token columns sum to the prompt tokens the engine reported for the requests it served."""
    from jobs.evaluate import EvaluateJob

    pages = tmp_path / "pages"
    pq.write_table(demo_pages_table(), pages.mkdir() or pages / "part-0.parquet")
    with stub_server() as server:
        assert EvaluateJob(argv(pages, tmp_path / "out", server.url, "--max-claims", "6")).main() == 0
        served, billed = len(server.handler.seen), sum(server.handler.billed)
    scores = table(tmp_path / "out" / "scores")
    total = {k: sum(r[k] or 0 for r in scores) for k in ("verdict_requests", "verdict_cache_hits")}
    assert total["verdict_cache_hits"] > 0
    assert total["verdict_requests"] - total["verdict_cache_hits"] == served
    assert sum(r["verdict_prompt_tokens"] or 0 for r in scores) == billed
    assert sum(r["prompt_tokens"] or 0 for r in table(tmp_path / "out" / "triples")) == billed


def test_progress_counts_answers_while_a_page_is_evaluated(tmp_path, monkeypatch):
    """Between pages the progress hears of the model answers received so far: with one page of
    several requests, answers are counted before the page is done, and they add up to the
    requests the engine answered and those the request cache answered."""
    import udfs.evaluation.run as evaluation_run
    from jobs.evaluate import EvaluateJob
    from udfs.evaluation import runner
    from udfs.runtime.progress import Progress

    seen: list[tuple[int, dict]] = []

    class Recording(Progress):
        def update(self, n: int = 1, **counts) -> None:
            seen.append((self.done, n, dict(counts)))
            super().update(n, **counts)

    monkeypatch.setattr(evaluation_run, "Progress", Recording)
    monkeypatch.setattr(runner, "ANSWERS_S", 0.02)
    pages = tmp_path / "pages"
    pq.write_table(demo_pages_table().slice(0, 1), pages.mkdir() or pages / "part-0.parquet")
    with stub_server(delay_s=0.05) as server:
        assert EvaluateJob(argv(pages, tmp_path / "out", server.url, "--max-claims", "6")).main() == 0
        asked = len(server.handler.seen)
    between = [counts["answers"] for done, n, counts in seen if n == 0 and done == 0]
    assert between and all(a > 0 for a in between)
    total = {k: sum(counts.get(k, 0) for _, _, counts in seen) for k in ("answers", "cache_hits")}
    assert total["answers"] == asked + total["cache_hits"] and asked > len(between)
    assert record(tmp_path / "out")["counters"]["evaluated"] == 1


def test_the_planning_scan_reads_long_pages_in_batches_of_bounded_bytes(tmp_path, monkeypatch):
    """A row group of long pages is read a few rows at a time (about BATCH_BYTES of the planned
    columns a batch), and the plan is the same as with whole row groups."""
    import pyarrow.dataset as pads

    from udfs.evaluation import plan

    rows = [
        {"page_url": f"http://p{i}.example/", "status": "ok", "text": ("x" * 99 + " ") * (1000 + i), "sample_rank": i}
        for i in range(40)
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "pages.parquet")
    sizes = []
    real = plan._batches

    def watched(*args):
        for b in real(*args):
            sizes.append(b.num_rows)
            yield b

    monkeypatch.setattr(plan, "_batches", watched)
    monkeypatch.setattr(plan, "BATCH_BYTES", 400_000)
    small = plan.plan_pages(pads.dataset(tmp_path), limit=5, order="shortest")
    assert sum(sizes) == 40 and max(sizes) <= 4
    monkeypatch.setattr(plan, "BATCH_BYTES", 1 << 40)
    sizes.clear()
    whole = plan.plan_pages(pads.dataset(tmp_path), limit=5, order="shortest")
    assert sizes == [40]
    assert small.todo.to_pylist() == whole.todo.to_pylist()
    assert small.todo["page_url"].to_pylist() == [f"http://p{i}.example/" for i in range(5)]
    assert small.counters == whole.counters and small.counters["over_limit"] == 35


def test_early_exit_gives_every_verdict_of_asking_all_for_fewer_requests(tmp_path):
    """The demo's pages judged twice against the stub engine (a yes or no per request, two in three
    yes): asking every question of every claim, and stopping once a verdict is decided. The
    verdicts are the same triple for triple; the early run sends fewer requests; a claim decided
    early has a score on its verdict's side of the threshold and no calibrated probability."""
    from jobs.evaluate import EvaluateJob

    pages = tmp_path / "pages"
    pq.write_table(demo_pages_table(), pages.mkdir() or pages / "part-0.parquet")
    sent = {}
    for how in ("--no-early-exit", "--early-exit"):
        with stub_server() as server:
            extra = ("--max-claims", "12", "--factuality-threshold", "0.3", how)
            assert EvaluateJob(argv(pages, tmp_path / how, server.url, *extra)).main() == 0
            sent[how] = len(server.handler.seen)
    key = ("page_key", "source", "subject", "property", "value")
    full, early = ({tuple(r[k] for k in key): r for r in table(tmp_path / how / "triples")} for how in sent)
    assert full.keys() == early.keys()
    judged = [k for k, r in full.items() if r["factual"] is not None]
    assert len(judged) > 10
    assert all(early[k]["factual"] == full[k]["factual"] for k in full)
    decided = [early[k] for k in judged if early[k]["factual_early"]]
    assert decided and not any(full[k]["factual_early"] for k in judged)
    assert all((r["factual_score"] >= 0.3) == r["factual"] and r["factual_p"] is None for r in decided)
    assert sent["--early-exit"] < sent["--no-early-exit"]


def test_the_gate_asks_the_other_text_questions_only_where_the_first_scores_at_least_it(tmp_path):
    """The shipped questions over the claims of a real schema.org example, against the stub engine
    (a yes or no per request): with a gate, a claim whose ``plain`` scores below it is asked
    ``complies-ranged`` and ``plain`` only, and scores as if ``claim`` and ``extract-soft-all-near``
    had answered 0 (``extract-other`` not applying); every other claim scores what the ungated judge
    gives it. Each judge sees the same answers (one request cache)."""
    import dataclasses

    from udfs.agents import prompts
    from udfs.agents import verdicts as agents
    from udfs.agents.judge import build_judge, combined_score
    from udfs.llm.client import LLMClient
    from udfs.runtime.config import load_config
    from udfs.schemaorg.markup import parse_markup

    ex = next(e for e in prompts.load_examples() if len(agents.claims_of(parse_markup(e.jsonld))) >= 8)
    claims = [c for c in agents.claims_of(parse_markup(ex.jsonld)) if c is not None]
    qs = ["plain", "claim", "extract-soft-all-near", "extract-other", "complies-ranged"]
    conf = load_config().judge
    with stub_server() as server:
        client = LLMClient(server.url + "/v1", "stub-model", timeout_s=60, cache_path=tmp_path / "llm.sqlite")
        try:

            def judge(gate, questions=qs):
                j = build_judge(
                    dataclasses.replace(
                        conf,
                        strategy="direct",
                        factuality_questions=tuple(questions),
                        factuality_gate=gate,
                        factuality_threshold=0.3,
                        calibration="",
                    ),
                    config_file="test.toml",
                )
                return client.run(j.factuality(client, [ex.text], claims, early_exit=False))

            ungated, gated = judge(0.0), judge(0.2)
            alone = {q: judge(0.0, [q]) for q in ("plain", "complies-ranged")}
        finally:
            client.close()
    below = [k for k, j in enumerate(alone["plain"]) if j.score < 0.2]
    assert below and len(below) < len(claims)
    for k, (u, g) in enumerate(zip(ungated, gated)):
        if k in below:
            f = alone["complies-ranged"][k].score
            parts = {"plain": alone["plain"][k].score, "claim": 0.0, "extract-soft-all-near": 0.0}
            assert g.score == pytest.approx(combined_score(parts | ({"complies-ranged": f} if f else {})))
            assert g.requests == (2 if f is not None else 1) < u.requests
        else:
            assert (g.score, g.requests) == (u.score, u.requests)
