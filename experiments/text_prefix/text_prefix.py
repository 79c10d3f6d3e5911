"""Run a job with the shipped prompts overlaid by this folder's ``prompts/``: every question about
the page text opens with one system prompt, so the engine reads a page's text once for all of
them; each question family's instructions come after the text, before the claim.

    python experiments/text_prefix/text_prefix.py agents_bench calibrate --calibration $OUT/text_prefix.json ...
    python experiments/text_prefix/text_prefix.py evaluate --executor local ...

The job runs in this process (``evaluate`` needs ``--executor local``: Ray workers would read the
shipped prompts), with ``conf/prompts`` and ``prompts/`` merged into a temporary folder that the
prompt loader and the evaluation's settings hash read.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOBS = ("agents_bench", "evaluate")


def merged_prompts() -> Path:
    """A temporary folder of the shipped prompt files, this folder's replacing theirs."""
    from udfs.runtime.paths import PROMPTS_DIR

    merged = Path(tempfile.mkdtemp(prefix="text_prefix_prompts_"))
    for src in (PROMPTS_DIR, HERE / "prompts"):
        for p in src.glob("*.txt"):
            shutil.copy(p, merged / p.name)
    return merged


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in JOBS:
        raise SystemExit(f"usage: text_prefix.py {{{','.join(JOBS)}}} <the job's arguments>")
    job, args = argv[0], argv[1:]
    local = any(a == "--executor" and b == "local" for a, b in zip(args, args[1:]))
    if job == "evaluate" and not local:
        raise SystemExit("evaluate: pass --executor local (Ray workers would read the shipped prompts)")
    from udfs.agents import prompts
    from udfs.evaluation import parts

    folder = merged_prompts()
    prompts.PROMPTS_DIR = folder
    prompts.load_prompt.cache_clear()
    parts.settings_hash.__kwdefaults__["prompts_dir"] = folder
    if job == "agents_bench":
        from jobs.agents_bench import AgentsBenchJob as Job
    else:
        from jobs.evaluate import EvaluateJob as Job
    return Job(args).main()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
