"""The schema.org namespace and the schema.org JSON-LD context, named once for the whole project.

Every reader and writer of schema.org data agrees on three things, defined here and nowhere else:

* ``SCHEMA_NS``: the namespace IRI the project writes (``http://schema.org/``: the one the
  official context's ``@vocab`` and WebDataCommons use), in RDF views, N-Quads and shapes;
* ``SCHEMA_NS_RE``: which IRIs are in that namespace. http and https, with or without ``www.``,
  in any letter case (scheme and host are case-insensitive in IRIs) are the one namespace;
* ``SCHEMA_CONTEXT_URL_RE``: which ``@context`` strings mean "schema.org's own context", read with
  the bundled copy (:func:`context_document`) and never fetched: the namespace spellings above, the
  hosted extensions of older markup (``health-lifesci.schema.org``, ``pending.schema.org``,
  ``bib.schema.org``, ...: today all one vocabulary), and ``/docs/jsonldcontext.json[ld]``.
  Any other context URL is remote and is never fetched by anything in the project.

``SCHEMA_CONTEXT_URL`` is the ``@context`` the project writes on markup it produces.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from udfs.runtime.paths import DATA_DIR

SCHEMA_NS = "http://schema.org/"
SCHEMA_CONTEXT_URL = "https://schema.org"

SCHEMA_NS_REGEX = r"^https?://(?:www\.)?schema\.org/"
SCHEMA_NS_RE = re.compile(SCHEMA_NS_REGEX, re.IGNORECASE)

SCHEMA_CONTEXT_URL_REGEX = r"^https?://(?:[a-z0-9-]+\.)?schema\.org(?:/(?:docs/jsonldcontext\.json(?:ld)?/?)?)?$"
SCHEMA_CONTEXT_URL_RE = re.compile(SCHEMA_CONTEXT_URL_REGEX, re.IGNORECASE)


def is_schema_context_url(value: str) -> bool:
    """Does an ``@context`` (or ``@vocab``) string name schema.org's own context? Surrounding
    whitespace is ignored, as pages carry it."""
    return bool(SCHEMA_CONTEXT_URL_RE.match(value.strip()))


@functools.lru_cache(maxsize=4)
def context_document(release: str) -> dict[str, Any]:
    """The ``@context`` object of the official schema.org context bundled for ``release``
    (``data/schemaorg-<release>/schemaorgcontext.jsonld``). Cached and shared: do not mutate it."""
    path = DATA_DIR / f"schemaorg-{release}" / "schemaorgcontext.jsonld"
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["@context"]
