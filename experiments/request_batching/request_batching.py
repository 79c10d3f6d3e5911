"""Does sending several prompts in one request pay for the harness? The client's transport cost per
verdict with one chat request per verdict (what the evaluation sends) beside one ``/v1/completions``
request carrying ``k`` prompts (what vLLM and llama.cpp accept, given a prompt the client has
templated itself).

    .venv/bin/python experiments/request_batching/request_batching.py [--verdicts 20000] [--in-flight 256] [--k 1,4,16,32]

The server is a minimal aiohttp app in its own process that answers both routes at once with a fixed
yes/no body of the engines' shapes (a transport stub, never a model), so the figures are the
client's: ``udfs.llm.transport.AiohttpTransport`` plus encoding the request and decoding the answer,
CPU time of this process per verdict. Compare them with the whole job's CPU per verdict that
``benchmarks/evaluate_throughput.py`` prints: the difference between k = 1 and k = 16 is the most
that batching prompts could save the evaluation per verdict.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

from cluster.local.procs import free_port
from udfs.llm.transport import AiohttpTransport

SERVER = r"""
import sys
from aiohttp import web

TOP = [{"token": "yes", "logprob": -0.1}, {"token": "no", "logprob": -2.3}]

async def chat(req):
    await req.read()
    return web.json_response({"model": "stub", "usage": {"prompt_tokens": 300, "completion_tokens": 1},
        "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "yes"},
                     "logprobs": {"content": [{"token": "yes", "logprob": -0.1, "top_logprobs": TOP}]}}]})

async def completions(req):
    n = len((await req.json())["prompt"])
    return web.json_response({"model": "stub", "usage": {"prompt_tokens": 300 * n, "completion_tokens": n},
        "choices": [{"index": i, "text": "yes", "finish_reason": "length",
                     "logprobs": {"tokens": ["yes"], "token_logprobs": [-0.1],
                                  "top_logprobs": [{"yes": -0.1, "no": -2.3}]}} for i in range(n)]})

app = web.Application(client_max_size=64 << 20)
app.router.add_post("/v1/chat/completions", chat)
app.router.add_post("/v1/completions", completions)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""
PAGE = "word " * 300  # a page chunk of about the evaluation's prompt size


async def measure(url: str, k: int, verdicts: int, in_flight: int) -> tuple[float, float]:
    """(client CPU ms per verdict, verdicts per second) for ``verdicts`` verdicts, ``k`` per request."""
    transport = AiohttpTransport(max_connections=in_flight)
    gate = asyncio.Semaphore(in_flight)

    async def one(i: int) -> None:
        if k == 1:
            req = {
                "model": "stub",
                "max_tokens": 1,
                "logprobs": True,
                "top_logprobs": 20,
                "messages": [
                    {"role": "system", "content": "Answer yes or no."},
                    {"role": "user", "content": f"{PAGE}\n\nIs claim {i} supported?"},
                ],
            }
            path = "chat/completions"
        else:
            req = {
                "model": "stub",
                "max_tokens": 1,
                "logprobs": 20,
                "prompt": [
                    f"<|im_start|>system\nAnswer yes or no.<|im_end|>\n<|im_start|>user\n{PAGE}\n\n"
                    f"Is claim {i}.{j} supported?<|im_end|>\n<|im_start|>assistant\n"
                    for j in range(k)
                ],
            }
            path = "completions"
        async with gate:
            answer = await transport.request("POST", f"{url}/{path}", json.dumps(req, sort_keys=True).encode())
        assert len(answer.json()["choices"]) == k

    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(verdicts // k)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    await transport.aclose()
    return 1000 * cpu / verdicts, verdicts / wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--verdicts", type=int, default=20000, help="verdicts per measurement")
    ap.add_argument("--in-flight", type=int, default=256, help="requests outstanding")
    ap.add_argument("--k", default="1,4,16,32", help="prompts per request, comma-separated")
    a = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)])
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        print(
            f"| prompts per request | client CPU ms per verdict | verdicts/s (client and server on {os.cpu_count()} CPUs) |"
        )
        print("|---|---|---|")
        for k in [int(x) for x in a.k.split(",")]:
            cpu_ms, rate = asyncio.run(measure(f"http://127.0.0.1:{port}/v1", k, a.verdicts, a.in_flight))
            print(f"| {k} | {cpu_ms:.3f} | {rate:,.0f} |")
    finally:
        server.terminate()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
