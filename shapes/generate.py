"""Write the SHACL shapes of a schema.org release.

``python -m shapes.generate [--vocab 30.0] [--strict] [--output FILE]`` writes the shapes of a
release (default: ``shapes/schemaorg-<release>.shapes.ttl``, ``...strict.shapes.ttl`` with
``--strict``). The shape model and its Turtle live in :mod:`udfs.schemaorg.shapes`; this file is
only the command.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from udfs.runtime.cli import ArgumentParser, HelpFormatter, fail
from udfs.schemaorg.shapes import build_model, default_path, to_turtle

PROG = "python -m shapes.generate"


def main(argv: list[str] | None = None) -> int:
    ap = ArgumentParser(prog=PROG, description=__doc__, formatter_class=HelpFormatter, allow_abbrev=False)
    ap.add_argument("--vocab", default="30.0", help="schema.org release (bundled name, folder or .nt file)")
    ap.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="strict reading of values (--no-strict: lenient, the paper's)",
    )
    ap.add_argument("--output", help="output file (default: shapes/schemaorg-<release>[.strict].shapes.ttl)")
    args = ap.parse_args(argv)
    try:
        model = build_model(args.vocab)
    except UnicodeDecodeError as exc:  # before ValueError: name the file, not only the codec
        fail(PROG, f"schema.org vocabulary {args.vocab!r} is not UTF-8: {exc.reason} at byte {exc.start}")
    except (FileNotFoundError, ValueError) as exc:
        fail(PROG, str(exc))
    except OSError as exc:  # a folder or file that cannot be read (permissions, a device)
        fail(PROG, f"schema.org vocabulary {args.vocab!r} cannot be read: {exc.strerror or exc}")
    if not model.entity_types:
        fail(PROG, f"schema.org vocabulary {args.vocab!r} defines no type: no shapes written")
    text = to_turtle(model, strict=args.strict)
    path = Path(args.output) if args.output else default_path(model.release, args.strict)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(PROG, f"{path}: cannot write: {exc.strerror or exc}")
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    print(
        f"{path}: {len(model.entity_types)} type shapes, {len(model.ranges)} property shapes, sha256 {digest}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
