"""The vLLM engine behind the same Serve application, on CPU (vllm-cpu + the 0.5B model).

vllm-cpu brings its own torch and takes minutes to start, so it lives in its own virtualenv
(see cluster/vllm_cpu.py) and this test is skipped where vllm is not importable:

    /tmp/vllm-venv/bin/python -m pytest tests/llm/test_vllm_cpu.py -m vllm -q
"""
import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_vllm_serve_app_gives_structured_answers(capsys):
    pytest.importorskip("vllm")
    pytest.importorskip("ray.serve.llm")
    from cluster.vllm_cpu import main

    rc = main(["--convert", "--serve", "--port", "8013"])
    out = capsys.readouterr().out
    assert rc == 0, out
    import json

    report = json.loads(out[out.index("{"):])
    verdicts = list(report["verdicts"].values())
    assert all(v["answer_text"] in ("yes", "no") for v in verdicts)
    assert all(0.0 <= v["score"] <= 1.0 for v in verdicts)
    assert report["json_schema"]["parsed"]["birth_year"] == 1815
