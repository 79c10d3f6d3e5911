"""Fetch the LLM4Schema.org markups that ``manifest.tsv`` names into ``cache/`` (git-ignored).

    .venv/bin/python data/llm4schemaorg/fetch.py [--force]

The repository GDD-Nantes/LLM4SchemaOrg publishes no licence, so its files are not redistributed
here: this script downloads each one from raw.githubusercontent.com at the commit the manifest
pins, to ``cache/<path in that repository>``. A file already in the cache is kept unless
``--force``. Needs network access; exits 1 naming each file it could not fetch.
"""

from __future__ import annotations

import argparse
import csv
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = "GDD-Nantes/LLM4SchemaOrg"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def manifest(folder: Path = HERE) -> list[dict[str, str]]:
    """The manifest's rows: source, document, markup and filtered paths with their commits, expect."""
    with open(folder / "manifest.tsv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="download files already in the cache again")
    args = ap.parse_args(argv)
    failed = 0
    for row in manifest():
        for col in ("markup", "filtered"):
            path, commit = row[col], row[f"{col}_commit"]
            out = HERE / "cache" / path
            if out.exists() and not args.force:
                continue
            url = RAW.format(repo=REPO, commit=commit, path=path)
            try:
                with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (a fixed https host)
                    body = r.read()
            except OSError as e:
                print(f"fetch.py: error: {url}: {e}", file=sys.stderr)
                failed += 1
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(body)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
