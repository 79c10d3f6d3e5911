"""``udfs.llm.client.first_model``, the service's default model as the jobs ask for it, against a
small OpenAI-style ``/models`` endpoint (no model needed): the first listed id, and an
``LLMError`` that says to start the service when it lists none or cannot be reached."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cluster.local.procs import free_port
from udfs.llm.client import LLMError, first_model


def serve(listing: dict | None):
    """A server whose GET /v1/models answers ``listing`` (None: a 500 with a non-JSON body)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            ok = listing is not None and self.path == "/v1/models"
            body = json.dumps(listing).encode() if ok else b"internal error"
            self.send_response(200 if ok else 500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # keep the test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_the_first_listed_model_is_the_default():
    server, url = serve({"object": "list", "data": [{"id": "qwen2.5-coder-1.5b"}, {"id": "other"}]})
    try:
        assert first_model(url, timeout_s=5) == "qwen2.5-coder-1.5b"
    finally:
        server.shutdown()


@pytest.mark.parametrize("listing,message", [({"data": []}, "lists no model"), (None, "cannot be read")])
def test_no_model_or_a_broken_service_says_to_start_it(listing, message):
    server, url = serve(listing)
    try:
        with pytest.raises(LLMError, match=f"{message}.*python -m udfs.llm.serving start"):
            first_model(url, timeout_s=5)
    finally:
        server.shutdown()


def test_an_unreachable_service_says_to_start_it():
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with pytest.raises(LLMError, match=r"cannot be read \(ConnectError.*python -m udfs.llm.serving start"):
        first_model(url, timeout_s=5)
