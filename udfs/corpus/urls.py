"""One page, one identity: the normal form in which page URLs are compared.

A page URL is kept as it was given in every row (``page_url``); wherever two page URLs are
compared (a sample row against the WARC index in the pages job, a replacement candidate against
another slot's sampled page, two input rows without a sample rank), they are compared by
``normal_url``, the join key. The normal form is `url-normalize`_'s (RFC 3986 section 6.2.2,
syntax-based, and 6.2.3, scheme-based normalisation), with the fragment cut first:

* scheme and host lower-cased (``HTTP://Example.COM/a`` -> ``http://example.com/a``); an
  internationalised host in its IDNA (punycode) form (``http://BÜCHER.de/`` ->
  ``http://xn--bcher-kva.de/``); a trailing dot of the host dropped;
* the scheme's default port dropped (``:80`` for http, ``:443`` for https); another port kept;
* percent-encoding normalised: hex digits upper-cased (``%c3%a9`` -> ``%C3%A9``), unreserved
  characters decoded (``%7E`` -> ``~``, ``%41`` -> ``A``), non-ASCII characters UTF-8
  percent-encoded; an encoded reserved character that would change the URL's structure stays
  encoded (``%2F`` in a path, ``%26``, ``%3D``, ``%2B``, ``%23`` in a query);
* dot segments resolved (``/a/./b/../c`` -> ``/a/c``), an empty path is ``/``, an empty query
  (a bare ``?``) dropped;
* the fragment (``#...``) cut: a client never sends it, so it names no other capture. Common
  Crawl's index does the same (its SURT keys drop the fragment), and its captures' target URIs
  carry none.

What is never changed, because it can name another page: the path's case, a trailing slash
(``/a`` and ``/a/`` stay two URLs), the query and the order of its arguments (``?b=1&a=2`` and
``?a=2&b=1`` stay two; Common Crawl's SURT keys sort the arguments, and also drop a trailing
slash, lower-case the path and strip ``www.``, which this key does not follow), ``+`` and ``%20``
in a query, the user information. Pages that one server serves under two such URLs are still one
page to the evaluation: it judges the same HTML and markup once (``udfs.evaluation.plan``).

A text without a scheme and host (``pset:12``, ``example.com/a``) or one ``url-normalize`` cannot
read (an invalid IDNA host) is its own key, fragment cut: it matches the same spelling only. No
scheme is guessed.

.. _url-normalize: https://pypi.org/project/url-normalize/
"""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from url_normalize import url_normalize


def normal_url(url: str | None) -> str | None:
    """The join key of page URL ``url`` (module docstring); None for None or a blank text. Never
    raises: a URL it cannot normalise is its own key (surrounding white space and fragment cut)."""
    if url is None:
        return None
    text = url.strip().partition("#")[0]
    if not text:
        return None
    try:
        parts = urlsplit(text)
        if not parts.scheme or not parts.netloc:
            return text
        return url_normalize(text) or text
    except (ValueError, UnicodeError):  # an unreadable host or port: the text as given is the key
        return text


def same_page_url(a: str | None, b: str | None) -> bool:
    """Whether two page URLs name one page: their normal forms are equal (None names none)."""
    ka = normal_url(a)
    return ka is not None and ka == normal_url(b)


def _normal_urls(urls):
    return urls.map(normal_url, na_action="ignore")


@functools.cache
def _normal_udf():
    import pandas as pd
    from pyspark.sql import functions as F

    # Spark reads a pandas UDF's kind from its annotations, which must be the types themselves
    # (this module's are strings)
    _normal_urls.__annotations__ = {"urls": pd.Series, "return": pd.Series}
    return F.pandas_udf(_normal_urls, "string")


def normal_url_column(col):
    """Spark: the column of ``normal_url`` of the string column ``col`` (a vectorised UDF, one
    Arrow batch per call)."""
    return _normal_udf()(col)
