"""MkDocs hook: ``docs/configuration.md``'s marker becomes the configuration reference, generated
from the settings' declarations (udfs.runtime.reference), so the site never restates a default."""

from __future__ import annotations


def on_page_markdown(markdown: str, page, config, files) -> str:
    from udfs.llm.serving.config import config_reference
    from udfs.runtime.config import SECTIONS
    from udfs.runtime.reference import MARKER, pipeline_rows, section_markdown

    if MARKER not in markdown:
        return markdown
    pipeline = section_markdown(
        "`conf/pipeline.toml`",
        "Each job reads its own section (and `[judge]`, for the jobs that judge); each key is also the job's "
        "flag `--key-with-dashes`. A flag on the command line wins over the file (`--help` shows the result); "
        "`--config FILE` replaces the whole file, and a key or section it leaves out takes the default shown here.",
        pipeline_rows(),
        list(SECTIONS),
    )
    serving = section_markdown(
        "`conf/serving*.toml`",
        "The model service (`python -m udfs.llm.serving start --config FILE`). Shipped files: "
        "`conf/serving.toml` (embedded llama.cpp, the CPU default), `conf/serving-gpu.toml` (vLLM on GPUs), "
        "`conf/serving-consensus.toml` (several embedded models).",
        config_reference(),
    )
    return markdown.replace(MARKER, pipeline + "\n\n" + serving)
