"""The one line reader (udfs/runtime/lines.py): its decode rules, and a CSV input's header read by
them (a byte order mark is no part of the first column's name, for the contract check and for
Spark's reader alike)."""

from __future__ import annotations

import io

import pytest

from udfs.runtime import lines as L


def test_a_byte_order_mark_is_skipped_and_counted_only_as_the_first_bytes():
    data = b"\xef\xbb\xbfa\r\nb\n\xef\xbb\xbfc\nlast"
    lines = L.Lines(io.BytesIO(data))
    assert list(lines) == [(1, b"a"), (2, b"b"), (3, b"\xef\xbb\xbfc"), (4, b"last")]
    assert lines.byte_order_marks == 1
    assert L.decode(b"a") == "a"
    with pytest.raises(L.LineError) as e:
        L.decode(b"\xef\xbb\xbfc")
    assert e.value.reason == L.REASON_BOM_INSIDE
    none = L.Lines(io.BytesIO(b"a\nb\n"))
    assert [n for n, _ in none] == [1, 2] and none.byte_order_marks == 0


@pytest.mark.parametrize(
    "data",
    [b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"],
    ids=["overlong-2", "overlong-3", "encoded-surrogate", "above-max", "cut"],
)
def test_ill_formed_utf8_is_a_reason(data):
    with pytest.raises(L.LineError) as e:
        L.decode(b"x" + data + b"y")
    assert e.value.reason == L.REASON_UNDECODABLE


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("http://p/\\uD83D\\uDE00", "http://p/\U0001f600"),
        ("http://p/\\U0001F600", "http://p/\U0001f600"),
        ("\\ud83d\\ude00!", "\U0001f600!"),
        ("a\\u0041\\n", "aA\\n"),  # an ECHAR is kept as written
        ("a\\\\uD800", "a\\\\uD800"),  # an escaped backslash, then text
        ("no escape", "no escape"),
        ("\\U0010FFFF", "\U0010ffff"),
    ],
)
def test_uchars_decode_with_surrogate_pairs(text, want):
    assert L.unescape_uchars(text) == want


@pytest.mark.parametrize(
    ("text", "escape", "above"),
    [
        ("\\uD800", "\\uD800", False),
        ("a\\uD83Db", "\\uD83D", False),
        ("\\uD83D\\u0041", "\\uD83D", False),
        ("\\uD83D\\U0000DE00", "\\uD83D", False),  # a pair is two \\u escapes
        ("\\uD83D\\\\uDE00", "\\uD83D", False),
        ("\\uDE00", "\\uDE00", False),
        ("\\uDE00\\uD83D", "\\uDE00", False),
        ("\\U0000D800", "\\U0000D800", False),
        ("\\U00110000", "\\U00110000", True),
        ("\\UFFFFFFFF", "\\UFFFFFFFF", True),
    ],
)
def test_an_escape_that_is_no_scalar_value_is_a_reason_naming_it(text, escape, above):
    with pytest.raises(L.LineError) as e:
        L.unescape_uchars(text)
    template = L.REASON_ABOVE_MAX if above else L.REASON_SURROGATE
    assert e.value.reason == template.replace("{escape}", escape)
    assert f"escape {escape} is not a Unicode scalar value" in e.value.reason


def test_json_values_with_a_lone_surrogate_are_named():
    import json

    L.check_scalar_values(json.loads('{"a": ["\\ud83d\\ude00", {"b": "c"}]}'))
    for doc, escape in (('{"a": "\\ud800"}', "\\uD800"), ('{"\\udfff": 1}', "\\uDFFF"), ('[["\\ud83dx"]]', "\\uD83D")):
        with pytest.raises(L.LineError) as e:
            L.check_scalar_values(json.loads(doc))
        assert e.value.reason == L.REASON_SURROGATE.replace("{escape}", escape)


def test_a_csv_header_with_a_byte_order_mark_names_its_columns(spark, tmp_path):
    """The contract check's header and Spark's reader agree: ``page_url``, not ``\\ufeffpage_url``;
    a CRLF header too."""
    from udfs.runtime.contracts import read_columns
    from udfs.runtime.tables import read_table

    path = tmp_path / "sample.csv"
    path.write_bytes(b"\xef\xbb\xbfpage_url,cset_id\r\nhttp://a.example/,c1\r\n")
    assert list(read_columns(str(path)).columns) == ["page_url", "cset_id"]
    df, _ = read_table(spark, [str(path)], resolve=lambda specs, suffixes: list(specs))
    assert df.columns == ["page_url", "cset_id"]
    assert [tuple(r) for r in df.collect()] == [("http://a.example/", "c1")]
