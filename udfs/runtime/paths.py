"""Where the project's own files live: the one home of the project root and its fixed folders.

Everything else (inputs, outputs) is a flag or a ``conf/`` setting; these are the folders that
ship with a checkout: bundled data, configuration, prompts.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = PROJECT_ROOT / "data"
CONF_DIR = PROJECT_ROOT / "conf"
DEFAULT_CONF = CONF_DIR / "pipeline.toml"
PROMPTS_DIR = CONF_DIR / "prompts"


def project_file(path: str) -> str:
    """A file a ``conf/`` setting names: relative paths are from the project root (so a job run
    from another folder reads the same file), absolute paths and URLs as they are, "" stays ""."""
    if not path or "://" in path or path.startswith("/"):
        return path
    return str(PROJECT_ROOT / path)


def shown_path(path: str) -> str:
    """A file as a record or a report names it: relative to the project root when inside it (so
    two checkouts say the same), else as it is."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return path
