"""Lines of text as every reader of the project takes them: N-Quads (the C-sets job's JVM scanner,
udfs/corpus/jvm/llm4schema/, keeps the same rules and reasons), the ``--markups`` JSON Lines of
the evaluate job (udfs/evaluation/stored.py) and a CSV file's header (udfs/runtime/contracts.py).

The rules, the same in every format:

- A line ends at LF; a CR before it is not the line's (CRLF files read like LF files).
- A UTF-8 byte order mark (EF BB BF) as a file's first bytes is skipped and counted
  (``Lines.byte_order_marks``): editors on Windows and some exporters write one, and Python's
  ``utf-8-sig``, Spark's CSV reader and JSON's RFC 8259 all drop it there.
- A U+FEFF that starts any other line (two files with a byte order mark each, concatenated; a
  second gzip member that begins with one) is no byte order mark: the line is a reject with
  ``REASON_BOM_INSIDE``, not a silent "malformed term".
- A line is strict UTF-8 (no overlong form, no encoded surrogate, nothing above U+10FFFF), or a
  reject with ``REASON_UNDECODABLE``.
- An escape of a code point (N-Quads' UCHAR ``\\uXXXX`` and ``\\UXXXXXXXX``; JSON's ``\\uXXXX``)
  must name a Unicode scalar value. ``\\uD83D\\uDE00``, a high then a low surrogate written as two
  ``\\u`` escapes (how Java-based extractors write U+1F600), is the one code point they encode;
  any other surrogate (alone, a high one before anything but a low ``\\u`` escape, or any written
  as ``\\U0000D800``), and any value above U+10FFFF, is a reject whose reason names the escape
  (``not_scalar_reason``).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Iterator

BOM = b"\xef\xbb\xbf"
REASON_UNDECODABLE = "undecodable bytes (invalid UTF-8)"
REASON_BOM_INSIDE = (
    "byte order mark (U+FEFF) at the start of a line that is not the file's first bytes "
    "(files concatenated?); only a file's first bytes may be one"
)
# The reason of an escape that is no Unicode scalar value, by what it is; "{escape}" the escape as
# written. The JVM scanner gets these texts from Python (udfs/corpus/csets.py), so both say the same.
REASON_SURROGATE = "escape {escape} is not a Unicode scalar value (a surrogate, not half of a \\u pair)"
REASON_ABOVE_MAX = "escape {escape} is not a Unicode scalar value (above U+10FFFF)"


class LineError(ValueError):
    """A line that cannot be read; ``reason`` says why (a reject's reason)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def not_scalar_reason(escape: str) -> str:
    """Why the escape ``escape`` (``\\uD800``, ``\\U00110000``, as written) is refused."""
    template = REASON_ABOVE_MAX if int(escape[2:], 16) > 0x10FFFF else REASON_SURROGATE
    return template.replace("{escape}", escape)


class Lines:
    """The lines of a binary stream, each as ``(number from 1, bytes without its terminator)``;
    the byte order mark of the first line is dropped and counted in ``byte_order_marks``."""

    def __init__(self, fh: BinaryIO | Iterator[bytes]):
        self._fh = fh
        self.byte_order_marks = 0

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for n, raw in enumerate(self._fh, start=1):
            if n == 1 and raw.startswith(BOM):
                raw = raw[len(BOM) :]
                self.byte_order_marks += 1
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            yield n, raw


def strip_bom(data: bytes) -> tuple[bytes, bool]:
    """``data`` (a file's first bytes) without a leading byte order mark, and whether it had one."""
    return (data[len(BOM) :], True) if data.startswith(BOM) else (data, False)


def decode(line: bytes) -> str:
    """A line's text: strict UTF-8 that does not start with U+FEFF (the file's own byte order mark
    is dropped by ``Lines`` before); else LineError."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise LineError(REASON_UNDECODABLE) from None
    if text.startswith("\ufeff"):
        raise LineError(REASON_BOM_INSIDE)
    return text


# A backslash and what it escapes: UCHARs by their digits, any other escape kept as written.
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.S)


def unescape_uchars(text: str) -> str:
    """``text`` (an N-Quads IRI or literal body) with its UCHARs decoded, a ``\\u`` surrogate pair
    to its one code point; every other escape (``\\n``, ``\\\\``, ``\\"``) kept as written, so a
    ``\\\\u0041`` stays an escaped backslash before ``u0041``. LineError (``not_scalar_reason``)
    at the first escape that is no Unicode scalar value."""
    if "\\" not in text:
        return text
    out: list[str] = []
    pos = 0
    pending: tuple[str, int] | None = None  # a high surrogate escape waiting for its low half
    for m in _ESCAPE.finditer(text):
        if pending is not None and (
            m.start() != pos or m.group(1) is None or not 0xDC00 <= int(m.group(1), 16) <= 0xDFFF
        ):
            raise LineError(not_scalar_reason(pending[0]))
        out.append(text[pos : m.start()])
        pos = m.end()
        digits = m.group(1) or m.group(2)
        if digits is None:
            out.append(m.group(0))
            continue
        cp = int(digits, 16)
        if pending is not None:
            out.append(chr(0x10000 + ((pending[1] - 0xD800) << 10) + (cp - 0xDC00)))
            pending = None
        elif m.group(1) is not None and 0xD800 <= cp <= 0xDBFF:
            pending = (m.group(0), cp)
        elif 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
            raise LineError(not_scalar_reason(m.group(0)))
        else:
            out.append(chr(cp))
    if pending is not None:
        raise LineError(not_scalar_reason(pending[0]))
    out.append(text[pos:])
    return "".join(out)


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_scalar_values(value: object) -> None:
    """LineError when a string of ``value`` (a JSON value as json decoded it: its keys and strings,
    nested), holds a surrogate. json reads a ``\\uD83D\\uDE00`` pair as its one code point, so a
    surrogate left is a lone escape (named ``\\uXXXX``, upper case)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            m = _SURROGATE.search(v)
            if m:
                raise LineError(not_scalar_reason(f"\\u{ord(m.group(0)):04X}"))
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
