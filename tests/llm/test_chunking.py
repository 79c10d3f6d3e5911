"""Token-aware chunking: the paper's sizing formula, 10% overlap, boundaries on real page text."""

import math

import html2text
import pytest

from tests.conftest import DATA
from udfs.llm.chunking import Chunk, TiktokenTokenizer, chunk_text, chunk_token_budget, chunk_tokens, n_chunks

PAGE = DATA / "html" / "extruct-samples" / "websites" / "microdata-with-description.html"


def page_text(path=PAGE) -> str:
    h = html2text.HTML2Text()
    h.ignore_links = True
    h.ignore_images = True
    return h.handle(path.read_text(encoding="utf-8", errors="replace"))


@pytest.fixture(scope="module")
def cl100k():
    return TiktokenTokenizer("cl100k_base")


def test_budget_is_context_minus_output_minus_prompt():
    assert chunk_token_budget(8192, 1024, 500) == 6668
    with pytest.raises(ValueError, match="no room for page text"):
        chunk_token_budget(2048, 1024, 1100)


def test_chunk_count_follows_the_paper_formula():
    assert n_chunks(0, 100) == 0
    assert n_chunks(100, 100) == 1
    assert n_chunks(1000, 100) == math.ceil(1000 / 90)
    with pytest.raises(ValueError):
        n_chunks(10, 0)


def check_chunks(chunks: list[Chunk], text: str, tokens: list[bytes], budget: int):
    assert chunks[0].start_token == 0 and chunks[0].start_char == 0
    assert chunks[-1].end_token == len(tokens) and chunks[-1].end_char == len(text)
    overlap = budget - math.floor(0.9 * budget)
    for c in chunks:
        assert c.n_tokens <= budget
        assert text[c.start_char : c.end_char] == c.text
    for a, b in zip(chunks, chunks[1:]):
        # Each chunk but the last is full and shares its last tenth with the next one.
        assert a.n_tokens == budget
        assert a.end_token - b.start_token == overlap
        assert b.start_char < a.end_char
        assert text[b.start_char : a.end_char] == a.text[b.start_char - a.start_char :]
    # The formula's count is the ceiling; full chunks with exact overlap never need more.
    assert len(chunks) <= n_chunks(len(tokens), budget)
    assert len(chunks) >= n_chunks(len(tokens), budget) - 1


def test_real_page_with_cl100k(cl100k):
    text = page_text()
    tokens = cl100k.token_bytes(text)
    assert len(tokens) > 3000
    chunks = chunk_text(text, cl100k, context_window=2048, output_tokens=512, prompt_tokens=536)
    check_chunks(chunks, text, tokens, 1000)
    assert len(chunks) > 3


def test_short_text_is_one_chunk(cl100k):
    chunks = chunk_text("Executive Anvil, $119.99", cl100k, context_window=4096, output_tokens=512, prompt_tokens=100)
    assert len(chunks) == 1 and chunks[0].text == "Executive Anvil, $119.99"
    assert chunk_text("", cl100k, context_window=4096, output_tokens=512, prompt_tokens=100) == []


def test_multibyte_characters_are_never_split(cl100k):
    # Byte-level BPE splits rare CJK characters over several tokens; chunk edges must not.
    text = "価格は１１９ドル。在庫あり。" * 40 + "Anvil 🔨 " * 30
    tokens = cl100k.token_bytes(text)
    chunks = chunk_tokens(tokens, text, 7)
    assert chunks[-1].end_char == len(text)
    for c in chunks:
        assert c.text == text[c.start_char : c.end_char]
        assert "\ufffd" not in c.text
    covered = set()
    for c in chunks:
        covered.update(range(c.start_char, c.end_char))
    assert covered == set(range(len(text)))


def test_tokens_must_reproduce_the_text():
    with pytest.raises(ValueError, match="do not reproduce"):
        chunk_tokens([b"abc"], "abd", 10)
    with pytest.raises(ValueError, match="overlap"):
        chunk_tokens([b"a"], "a", 10, overlap=1.0)


class _Answers:
    """An endpoint that answers /tokenize from a script: an httpx response or an exception per call."""

    def __init__(self, script):
        self.script, self.calls = list(script), 0

    def post(self, url, json=None):
        import httpx

        self.calls += 1
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        status, body = step
        return httpx.Response(status, json=body, request=httpx.Request("POST", url))


def test_a_replica_restart_between_tokenize_calls_is_retried_and_a_refusal_is_not(monkeypatch):
    """A Serve replica being replaced answers 503 (or nothing) until its successor is up: the
    served tokenizer retries as the chat client does, so the page is not lost; a 400 is final."""
    import httpx

    from udfs.llm.chunking import ServedTokenizer

    monkeypatch.setattr(ServedTokenizer, "BACKOFF_BASE_S", 0.001)
    tok = ServedTokenizer("http://127.0.0.1:9/v1")
    tok._kind = "served:llama.cpp"
    pieces = {"tokens": [{"id": 1, "piece": "Schema"}, {"id": 2, "piece": ".org"}]}
    down = (503, {"error": {"message": "model unavailable: ActorDiedError"}})
    tok._http = _Answers([down, httpx.ConnectError("refused"), down, (200, pieces)])
    assert tok.token_bytes("Schema.org") == [b"Schema", b".org"] and tok._http.calls == 4
    tok._http = _Answers([(400, {"error": "bad request"}), (200, pieces)])
    with pytest.raises(RuntimeError, match="HTTP 400"):
        tok.token_bytes("Schema.org")
    assert tok._http.calls == 1
    tok._http = _Answers([down] * (ServedTokenizer.RETRIES + 1))
    with pytest.raises(RuntimeError, match="HTTP 503"):
        tok.token_bytes("Schema.org")
    assert tok._http.calls == ServedTokenizer.RETRIES + 1
