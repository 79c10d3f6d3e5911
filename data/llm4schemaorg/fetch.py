"""Fetch the LLM4Schema.org markups that ``manifest.tsv`` names into ``cache/`` (git-ignored).

    .venv/bin/python data/llm4schemaorg/fetch.py [--force] [--from SOURCE] [--cache DIR]

The repository GDD-Nantes/LLM4SchemaOrg publishes no licence, so its files are not redistributed
here: this script downloads each one from raw.githubusercontent.com at the commit the manifest
pins, to ``cache/<path in that repository>`` (or ``--cache DIR``). ``--from SOURCE`` reads them
offline instead, from a checkout of that repository or the bundle of its ``data/WDC/Pset`` history
(``pset-history.bundle`` with its ``commits.tsv``; see :func:`udfs.corpus.pset.open_pset`). A file
already in the cache is kept unless ``--force``. Exits 1 naming each file it could not fetch.
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


def fill_cache(cache: Path, pset=None, force: bool = False) -> list[str]:
    """Every file of the manifest into ``cache``, from GitHub or, with ``pset`` (a
    :class:`udfs.corpus.pset.PsetSource`), offline; returns one error line per file it could not get."""
    errors = []
    for row in manifest():
        for col in ("markup", "filtered"):
            path, commit = row[col], row[f"{col}_commit"]
            out = cache / path
            if out.exists() and not force:
                continue
            if pset is not None:
                try:
                    body = pset.read(path, commit)
                except Exception as e:  # noqa: BLE001 (PsetError: the file or commit is absent there)
                    errors.append(f"{pset.root}: {e}")
                    continue
            else:
                url = RAW.format(repo=REPO, commit=commit, path=path)
                try:
                    with urllib.request.urlopen(url, timeout=60) as r:  # noqa: S310 (a fixed https host)
                        body = r.read()
                except OSError as e:
                    errors.append(f"{url}: {e}")
                    continue
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(body)
    return errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="get files already in the cache again")
    ap.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="read offline from a checkout of the paper's repository or pset-history.bundle (commits.tsv beside it)",
    )
    ap.add_argument("--cache", type=Path, default=HERE / "cache", help="where the files go (default: %(default)s)")
    args = ap.parse_args(argv)
    pset = None
    if args.source is not None:
        sys.path.insert(0, str(HERE.parents[1]))  # the project's udfs, when run as a script
        from udfs.corpus.pset import PsetError, open_pset

        try:
            pset = open_pset(args.source)
        except PsetError as e:
            print(f"fetch.py: error: {e}", file=sys.stderr)
            return 1
    errors = fill_cache(args.cache, pset, args.force)
    for e in errors:
        print(f"fetch.py: error: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
