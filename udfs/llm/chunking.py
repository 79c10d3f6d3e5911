"""Token-aware chunking of page text with 10% overlap, sized by the paper's formula.

    chunk tokens = context window - output tokens - prompt tokens
    chunks       = ceil(text tokens / (0.9 x chunk tokens))

so consecutive chunks start 0.9 x chunk tokens apart and share the last tenth of the earlier one.
Tokens come from the served model's own tokenizer (``ServedTokenizer``: the service's
``/tokenize`` endpoint in llama.cpp's shape or vLLM's) or from tiktoken's ``cl100k_base``
(``TiktokenTokenizer``, the paper's option; its BPE file ships in the ``bpe-openai`` package
because no hub is reachable here), which ``ServedTokenizer`` falls back to for an endpoint
without ``/tokenize`` (a hosted API).

Chunks are cut on token boundaries in the text's UTF-8 bytes; a boundary that falls inside a
multi-byte character (byte-level BPE can split one) moves to the character's end, so every chunk
is valid text and their union covers the text.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

OVERLAP = 0.1


class Tokenizer(Protocol):
    name: str

    def token_bytes(self, text: str) -> list[bytes]:
        """The text's tokens as the UTF-8 bytes each stands for (their concatenation is the text)."""


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    start_token: int
    end_token: int  # exclusive
    start_char: int
    end_char: int  # exclusive

    @property
    def n_tokens(self) -> int:
        return self.end_token - self.start_token


def chunk_token_budget(context_window: int, output_tokens: int, prompt_tokens: int) -> int:
    """The paper's chunk size: what is left of the context after the prompt and the answer."""
    budget = int(context_window) - int(output_tokens) - int(prompt_tokens)
    if budget <= 0:
        raise ValueError(
            f"no room for page text: context window {context_window} - output {output_tokens} "
            f"- prompt {prompt_tokens} = {budget} tokens"
        )
    return budget


def n_chunks(total_tokens: int, chunk_tokens: int, overlap: float = OVERLAP) -> int:
    """The paper's chunk count: tokens / ((1 - overlap) x chunk tokens), rounded up; 1 if it fits."""
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    if total_tokens <= chunk_tokens:
        return 1 if total_tokens > 0 else 0
    return math.ceil(total_tokens / ((1 - overlap) * chunk_tokens))


def chunk_tokens(tokens: Sequence[bytes], text: str, chunk_tokens: int, overlap: float = OVERLAP) -> list[Chunk]:
    """Cut an already tokenized text (``tokens`` as bytes per token) into overlapping chunks."""
    if not 0 <= overlap < 1:
        raise ValueError(f"overlap must be in [0, 1), got {overlap}")
    data = text.encode("utf-8")
    if b"".join(tokens) != data:
        raise ValueError("the tokens do not reproduce the text; the tokenizer altered it")
    total = len(tokens)
    count = n_chunks(total, chunk_tokens, overlap)
    if count == 0:
        return []
    # Byte offset of each token start, and of the end.
    offsets = [0]
    for tok in tokens:
        offsets.append(offsets[-1] + len(tok))
    stride = max(1, math.floor((1 - overlap) * chunk_tokens)) if count > 1 else total
    chunks: list[Chunk] = []
    start = 0
    while True:
        end = min(start + chunk_tokens, total)
        b0, b1 = _char_boundary(data, offsets[start], forward=False), _char_boundary(data, offsets[end], forward=True)
        piece = data[b0:b1].decode("utf-8")
        c0 = len(data[:b0].decode("utf-8"))
        chunks.append(Chunk(len(chunks), piece, start, end, c0, c0 + len(piece)))
        if end >= total:
            break
        start += stride
    return chunks


def _char_boundary(data: bytes, pos: int, forward: bool) -> int:
    # UTF-8 continuation bytes are 0b10xxxxxx.
    while 0 < pos < len(data) and (data[pos] & 0xC0) == 0x80:
        pos += 1 if forward else -1
    return pos


def chunk_text(
    text: str,
    tokenizer: Tokenizer,
    *,
    context_window: int,
    output_tokens: int,
    prompt_tokens: int,
    overlap: float = OVERLAP,
) -> list[Chunk]:
    """Chunks of ``text`` that fit beside a prompt of ``prompt_tokens`` and an answer of
    ``output_tokens`` in ``context_window``, with ``overlap`` of each chunk repeated in the next."""
    budget = chunk_token_budget(context_window, output_tokens, prompt_tokens)
    return chunk_tokens(tokenizer.token_bytes(text), text, budget, overlap)


# --------------------------------------------------------------------------------------------
# tokenizers


def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet reversed: the printable character each byte is written as
    in a byte-level vocabulary (Qwen, Llama 3, GPT-2: "Ġ" is the space byte) -> that byte."""
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(printable, chars)}


_BYTE_DECODER = _byte_level_decoder()


def token_strs_to_bytes(token_strs: Sequence[str], text: str) -> list[bytes]:
    """The bytes each vocabulary string of ``token_strs`` stands for, such that they join to ``text``.

    vLLM's ``/tokenize`` gives the vocabulary's own spellings: byte-level BPE writes every byte as
    one printable character (GPT-2's table), SentencePiece writes a space as "▁" and a raw byte
    as "<0xNN>". The spelling that reproduces the text is the one used; a ValueError says that
    neither does.
    """
    data = text.encode("utf-8")
    if all(ch in _BYTE_DECODER for s in token_strs for ch in s):
        out = [bytes(_BYTE_DECODER[ch] for ch in s) for s in token_strs]
        if b"".join(out) == data:
            return out
    out = []
    for s in token_strs:
        if len(s) == 6 and s.startswith("<0x") and s.endswith(">"):
            out.append(bytes([int(s[3:5], 16)]))
        else:
            out.append(s.replace("\u2581", " ").encode("utf-8"))
    if b"".join(out) == data:
        return out
    raise ValueError("the served token strings do not spell the text in byte-level BPE or SentencePiece")


class ServedTokenizer:
    """The served model's tokenizer, through the service's ``/tokenize`` endpoint, whichever
    engine answers; a local tokenizer when the endpoint has none.

    ``base_url`` is the service root or its ``/v1`` URL; ``/tokenize`` sits at the root. The first
    use finds out which body the endpoint takes, and ``kind`` says what was used (a run record
    states it):

    * ``served:llama.cpp``: ``{"content", "with_pieces"}`` answered with ``tokens[].piece`` (the
      embedded engine, llama.cpp's own server);
    * ``served:vllm``: ``{"model", "prompt", "return_token_strs"}`` answered with token ids and
      their vocabulary strings (vLLM, Ray Serve LLM's ingress), mapped back to bytes by
      ``token_strs_to_bytes``;
    * ``local:tiktoken:cl100k_base``: an endpoint with no ``/tokenize`` in either shape (a hosted
      API) is chunked with tiktoken's cl100k_base, the paper's tokenizer; its counts are close to,
      not equal to, the served model's.

    ``base_url`` may be ``serve://<app>/v1`` (``udfs.llm.serve_handle``): the app's ingress
    deployment is called through its handle instead of Serve's HTTP proxy.

    ``api_key`` (default ``$OPENAI_API_KEY``) is sent as a bearer token, never stored elsewhere.
    An endpoint that cannot be reached, or refuses the key, is an error, never a silent fallback.
    """

    def __init__(self, base_url: str, timeout_s: float = 60.0, *, api_key: str | None = None, model: str | None = None):
        import httpx

        root = base_url.rstrip("/")
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.name = f"served:{self.root}"
        self.model = model
        from udfs.llm.client import auth_headers

        if self.root.startswith("serve://"):  # a Serve app's ingress through its handle, answering as httpx
            from udfs.llm.serve_handle import SyncClient

            self._http = SyncClient(timeout_s)
        else:
            self._http = httpx.Client(timeout=timeout_s, headers=auth_headers(api_key))
        self._kind: str | None = None
        self._local: Tokenizer | None = None

    @property
    def kind(self) -> str:
        if self._kind is None:
            self._detect()
        return self._kind

    def _detect(self) -> None:
        probe = "Schema.org"
        resp = self._http.post(f"{self.root}/tokenize", json={"content": probe, "with_pieces": True})
        self._refuse_auth(resp)
        if resp.status_code == 200 and _llama_pieces(resp):
            self._kind = "served:llama.cpp"
            return
        resp = self._http.post(f"{self.root}/tokenize", json=self._vllm_body(probe))
        self._refuse_auth(resp)
        if resp.status_code == 200 and isinstance(_json(resp).get("token_strs"), list):
            self._kind = "served:vllm"
            return
        self._local = TiktokenTokenizer()
        self._kind = f"local:{self._local.name}"

    def _refuse_auth(self, resp) -> None:
        if resp.status_code in (401, 403):
            raise RuntimeError(
                f"{self.root}/tokenize refused the request (HTTP {resp.status_code}): "
                "the endpoint needs an API key (--api-key or OPENAI_API_KEY)"
            )

    def _vllm_body(self, text: str) -> dict:
        body = {"prompt": text, "add_special_tokens": False, "return_token_strs": True}
        if self.model:
            body["model"] = self.model
        return body

    def token_bytes(self, text: str) -> list[bytes]:
        kind = self.kind
        if self._local is not None:
            return self._local.token_bytes(text)
        if kind == "served:llama.cpp":
            resp = self._post({"content": text, "with_pieces": True})
            out = []
            for tok in resp.json()["tokens"]:
                piece = tok["piece"]
                # llama.cpp gives a piece that is not valid UTF-8 on its own as a list of byte values.
                out.append(bytes(piece) if isinstance(piece, list) else piece.encode("utf-8"))
            return out
        return token_strs_to_bytes(self._post(self._vllm_body(text)).json()["token_strs"], text)

    # A replica being replaced answers 503 (Ray Serve) or nothing until its successor is up, and an
    # overloaded one 429: retried as the chat client retries them (exponential backoff with full
    # jitter), so a page is not lost to a restart between its requests; any other 4xx is final.
    RETRIES = 7
    BACKOFF_BASE_S = 0.5
    BACKOFF_MAX_S = 30.0

    def _post(self, body: dict):
        import random
        import time

        import httpx

        failure = ""
        for attempt in range(self.RETRIES + 1):
            try:
                resp = self._http.post(f"{self.root}/tokenize", json=body)
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    return resp
                failure = f"HTTP {resp.status_code}: {resp.text[:300]}"
                if resp.status_code != 429 and resp.status_code < 500:
                    break
            if attempt < self.RETRIES:
                time.sleep(random.uniform(0, min(self.BACKOFF_MAX_S, self.BACKOFF_BASE_S * 2**attempt)))
        raise RuntimeError(f"{self.root}/tokenize answered {failure}")

    def count(self, text: str) -> int:
        return len(self.token_bytes(text))

    def close(self) -> None:
        self._http.close()


def _json(resp) -> dict:
    try:
        body = resp.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _llama_pieces(resp) -> bool:
    tokens = _json(resp).get("tokens")
    return isinstance(tokens, list) and bool(tokens) and all(isinstance(t, dict) and "piece" in t for t in tokens)


_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _tiktoken_offline_cache() -> None:
    """Let tiktoken find cl100k_base without a network: copy the BPE file that the ``bpe-openai``
    package ships into tiktoken's cache under the name tiktoken looks for (tiktoken still checks
    the file's sha256 itself)."""
    if os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR"):
        return
    cache = Path(tempfile.gettempdir()) / "data-gym-cache"
    target = cache / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
    if not target.exists():
        import importlib.resources

        try:
            packed = importlib.resources.files("bpe_openai") / "data" / "cl100k_base.tiktoken.gz"
            data = gzip.decompress(packed.read_bytes())
        except (ModuleNotFoundError, FileNotFoundError):
            return  # tiktoken will try its own download and say why it failed
        cache.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)


class TiktokenTokenizer:
    def __init__(self, encoding: str = "cl100k_base"):
        import tiktoken

        if encoding == "cl100k_base":
            _tiktoken_offline_cache()
        self.name = f"tiktoken:{encoding}"
        self._enc = tiktoken.get_encoding(encoding)

    def token_bytes(self, text: str) -> list[bytes]:
        return self._enc.decode_tokens_bytes(self._enc.encode(text, disallowed_special=()))

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))
