"""The report's sections, one module each (their order on the page: ``udfs.report.build.SECTIONS``).

A section module names its template block (``BLOCK``: ``templates/sections/<BLOCK>.html.j2``)
and says whether it reads the scores (``PER_RUN``: computed once per settings hash, from one
``udfs.report.inputs.Run``) or only the output root's other tables (computed once). Its
``data(run)`` returns a :class:`Part`: what the block shows and the tables it adds as CSV files.
A block renders the parts of its section (one per settings hash, each under its label when the
report compares settings); a module may ``combine(parts)`` them into one table instead (the run
table: one column per settings hash).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Part:
    """One section's content for one settings hash: ``ctx`` (its block's values), ``frames`` (name
    -> pandas DataFrame, written as CSV files), ``label`` (the settings hash's label when the
    report compares settings, else "") and ``files`` (name -> bytes, written beside the page)."""

    ctx: dict[str, Any]
    frames: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    files: dict[str, bytes] = field(default_factory=dict)  # written beside the page (a figure as PNG)
