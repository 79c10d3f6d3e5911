"""The pipeline's settings: each declared once, here, and read from ``conf/pipeline.toml`` (or a
``--config`` file).

**One declaration per setting.** A section (``[csets]``, ``[judge]``...) is a frozen dataclass; each
field is one setting, declared with :func:`setting`: its name (the TOML key, and ``--name-with-
dashes`` as a flag), its type (the annotation), its range (``ge``/``gt``/``le``/``lt``) or choices,
its default and its help. Everything else reads that declaration: the TOML reader
(:func:`parse_section`), a job's flags (``udfs.runtime.job.Job.build_parser`` derives them; a job
file does not write them again), the configuration reference and ``conf/pipeline.toml`` itself
(``udfs.runtime.reference``), and a job's run record (the checked section objects).
A setting several sections take with one meaning is one declaration too: a mixin dataclass that
those sections extend (:class:`RejectRows`, :class:`PageLimits`, :class:`WarcBase`...). Keys of
the same name but different meanings (``seed``, ``limit``, ``per_stratum``) are declared apart.

**Where defaults live.** The declaration holds the default. ``conf/pipeline.toml`` shows every
default with its meaning: it is *generated* from these declarations (``python -m
udfs.runtime.reference --write-conf``; ``tests/runtime/test_reference.py`` fails when it is out of
sync), so the sensible defaults stay visible in ``conf/`` without a second home. A ``--config``
file may leave keys, or whole sections, out: they take the declared default. So a new setting (a
page limit, say) is its declaration plus its use: two edits, and the flag, the TOML key, the
reference row and the run record follow.

**Checked before any work.** A value is of its declared type (a string where a number belongs, a
bool where an integer belongs: refused), every number is finite and inside its declared range, a
value with choices is one of them, and an unknown key or section is refused with the nearest
known one named. Any fault is a :class:`ConfigError` naming the file, the section and the key (or
the flag: :func:`flag_value` checks a command line's values the same way); command lines print it
as one line and exit with status 2. Jobs read the file and their flags in ``Job.parse_args``,
before any model request, Spark session or output write.

Lists in the TOML become tuples, so a config object can be shared and hashed without being changed
under its readers.

The checking is shared with the model service's files (``udfs.llm.serving.config``) and the
generator rules: :func:`read_toml`, :func:`parse_section` (one table into one dataclass; a field
without a default must be given) and :func:`describe_section` (the keys of a section with their
meanings, ``metadata["doc"]``, for the configuration reference).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import math
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from udfs.runtime.errors import UserError
from udfs.runtime.paths import DEFAULT_CONF


class ConfigError(UserError, ValueError):
    """Settings that cannot be used: a file missing or not TOML, a section or key that is unknown,
    a value of the wrong type or outside its range, a flag's value likewise. The message names the
    file, the section and the key (or the flag)."""


# A threshold a configuration leaves to the calibration file (``[judge]``): the matching entry's,
# else the fallback the same section states.
CALIBRATED = "calibrated"
THRESHOLD = float | str  # a number, or CALIBRATED


# ---- the declaration -------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting as declared (the type is the field's annotation): its default, the one-line
    ``help`` of its flag, the longer ``doc`` of the configuration file and reference (default: the
    help), its range (``ge``/``gt``/``le``/``lt``, inclusive and exclusive bounds) and its
    ``choices`` (for a list: of each item). ``help`` and ``choices`` may be callables, for the ones
    a registry in another module owns (read when first needed, so that module may import this
    one). ``nargs`` is a list flag's ("+" unless "*" is declared), ``metavar`` its value's name."""

    default: Any
    help: str | Callable[[], str]
    doc: str = ""
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | Callable[[], Sequence[Any]] | None = None
    nargs: str | None = None
    metavar: str | None = None

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help

    def options(self) -> tuple[Any, ...] | None:
        """The allowed values (of each item, for a list), or None: any of the type."""
        return tuple(self.choices()) if callable(self.choices) else self.choices

    def range_text(self) -> str:
        """The declared range in words ("in [0, 1]", ">= 1"), "" when there is none."""
        lo, hi = (self.ge, "[") if self.ge is not None else (self.gt, "(")
        top, close = (self.le, "]") if self.le is not None else (self.lt, ")")
        if lo is not None and top is not None:
            return f"in {hi}{lo}, {top}{close}"
        if lo is not None:
            return f"{'>=' if hi == '[' else '>'} {lo}"
        if top is not None:
            return f"{'<=' if close == ']' else '<'} {top}"
        return ""

    def in_range(self, number: float) -> bool:
        return not (
            (self.ge is not None and number < self.ge)
            or (self.gt is not None and number <= self.gt)
            or (self.le is not None and number > self.le)
            or (self.lt is not None and number >= self.lt)
        )


def setting(default: Any, help: str | Callable[[], str], **declared: Any) -> Any:
    """A section's field declared as a setting (:class:`Setting`'s arguments): the dataclass field,
    its default the declared one, its metadata the declaration (``"setting"``), its meaning
    (``"doc"``) and static choices (``"choices"``) for :func:`describe_section`."""
    s = Setting(default, help, **declared)
    doc = s.doc or (help if isinstance(help, str) else "")
    metadata = {"setting": s, "doc": doc}
    if s.choices is not None and not callable(s.choices):
        metadata["choices"] = tuple(s.choices)
    return dataclasses.field(default=default, metadata=metadata)


def declaration(f: dataclasses.Field) -> Setting | None:
    """The :class:`Setting` a field was declared with (None for a plain field: the serving files')."""
    return f.metadata.get("setting")


def _names(module: str, attr: str) -> Callable[[], tuple[Any, ...]]:
    """The names of a registry another module owns (a tuple, or a dict's keys), read when needed."""
    return lambda: tuple(getattr(importlib.import_module(module), attr))


def _text(module: str, func: str, *args: Any) -> Callable[[], str]:
    """A help text another module writes from its registry, read when needed."""
    return lambda: getattr(importlib.import_module(module), func)(*args)


# ---- settings several sections share: one declaration each ----------------------------------------


@dataclass(frozen=True)
class RejectRows:
    """Every job that writes ``rejects/`` rows."""

    reject_raw_chars: int = setting(
        1000,
        "cut the raw input a rejects/ row keeps (a line, a row, a record's sample, a JSON-LD block) to "
        "this many characters",
        doc="A rejects/ row keeps the raw input it refused (an N-Quads line, an input row, a WARC record's "
        "first bytes, a JSON-LD block, a markup file) cut to this many characters.",
        ge=1,
    )


@dataclass(frozen=True)
class RecordLimit:
    """Every job that reads WARC records."""

    max_record_bytes: int = setting(
        10_000_000,
        "a WARC record larger than this decompressed is not read: a reject or fetch_error row with its "
        "first bytes; records are streamed, never held whole",
        doc="Records are streamed (length counted, payload digest computed on the way); one larger than "
        "this when decompressed is a reject (fetch_error in pages/) row with its first bytes, not read "
        "(memory per task stays near it).",
        ge=1,
    )


@dataclass(frozen=True)
class PageLimits(RecordLimit):
    """Bounds per record and page, the same in every job that reads pages ([pages], [extract_quads]):
    a page or block over a bound is a status or reject row, never an out-of-memory or a hung task."""

    max_html_bytes: int = setting(
        5_000_000,
        "a page larger than this many bytes is not parsed (parse_error, or a reject row)",
        ge=1,
    )
    max_markup_chars: int = setting(
        1_000_000,
        "a JSON-LD block (or microdata item) longer than this as JSON is refused, not read; markups are "
        "cut to this length",
        doc="A JSON-LD block (or microdata item) longer than this many characters as JSON is refused with "
        "a reason (markup_errors, or a reject row) before it is read; markups are cut to max_markup_chars.",
        ge=1,
    )
    max_markup_nodes: int = setting(
        200_000,
        "a JSON-LD block holding more JSON values than this is refused, not read",
        doc="A JSON-LD block holding more JSON values than this is refused with a reason (markup_errors, "
        "or a reject row) before it is read.",
        ge=1,
    )
    time_limit_s: float = setting(
        20.0,
        "seconds each step of a page (decoding, extraction, JSON-LD, RDF conversion) may take",
        doc="Each step of a page (HTML decoding, text extraction, JSON-LD reading, RDF conversion) runs "
        "under this limit, in seconds.",
        gt=0,
    )


@dataclass(frozen=True)
class WarcBase:
    """The folder or URL prefix WARC file names are relative to ([warc_index] writes them so,
    [pages] reads them so)."""

    warc_base: str = setting(
        "",
        "the folder or URL prefix relative warc_filename values are under (a folder, s3://commoncrawl/, "
        "https://data.commoncrawl.org/); warc_index stores names relative to it and pages reads an index "
        "entry only if it resolves inside it (else a not_found row saying so); empty: names as they are",
        doc="warc_index stores warc_filename relative to this folder or URL prefix, and pages resolves "
        "relative names under it (give both the same); an entry that resolves outside it (symlinks "
        'followed; a URL base: same scheme, host and path prefix) is a not_found row. "": absolute names, '
        "read as they are.",
    )


@dataclass(frozen=True)
class Vocab:
    """The schema.org release a job or agent reads."""

    vocab: str = setting(
        "30.0",
        "schema.org release: a bundled name (30.0), a release folder or an .nt file",
    )


@dataclass(frozen=True)
class RequestTimeout:
    """Every job that asks a model service."""

    timeout_s: float = setting(
        600.0,
        "seconds one model request may take before it is retried or fails",
        gt=0,
    )


# ---- the sections ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CsetsConf(RejectRows, Vocab):
    """jobs/csets.py: C-sets of N-Quads."""

    subject_scope: str = setting(
        "iri",
        "iri: blank nodes scoped to their page, an IRI is one entity everywhere; page: every (subject, "
        "page) is its own entity",
        doc='Entity identity: "iri" = a blank node is scoped to its page, an IRI is the same entity on every '
        'page (the paper\'s code); "page" = every (subject, page) is its own entity.',
        choices=("iri", "page"),
    )
    sample_urls: int = setting(
        10,
        "K, page URLs kept per C-set in sample_urls",
        doc="Page URLs kept per C-set in sample_urls (chosen deterministically, see udfs/corpus/csets.py).",
        ge=1,
    )
    input_root: tuple[str, ...] = setting(
        (),
        "confine inputs: local files and manifest lines must resolve (symlinks included) under one of "
        "these folders; empty: not confined",
        doc='Confine local inputs and manifest lines to these folders (symlinks resolved), e.g. ["/data/wdc"]; '
        "empty: not confined.",
    )
    max_line_bytes: int = setting(
        16_777_216,
        "a longer line is rejected (its first characters kept in rejects/), never read whole",
        doc="A line longer than this many bytes (its line ending not counted) is a reject row holding its "
        "first reject_raw_chars characters; it is skipped, never held whole, so one line cannot exhaust a task.",
        ge=1,
    )
    strict_nquads: bool = setting(
        False,
        "W3C N-Quads exactly: a fifth term is a reject; --no-strict-nquads reads WebDataCommons' variant, "
        "whose fifth term names the extractor (<ex:html-microdata>), counted in fifth_term",
        doc="false: WebDataCommons' N-Quads variant, whose fifth term names the extractor "
        "(<ex:html-microdata>), is read and the values are counted (fifth_term in the run record); "
        "true: W3C N-Quads exactly, a fifth term is a reject.",
    )
    top: int = setting(10, "C-sets shown in the summary printed at the end", ge=0)


@dataclass(frozen=True)
class SampleConf(RejectRows):
    """jobs/sample.py: the stratified sample of C-sets."""

    features: tuple[str, ...] = setting(
        ("n_instances", "n_properties"),
        "numeric csets columns, each sampled independently",
        doc="Numeric csets columns, each split into quantile strata and sampled independently (the paper: "
        "instances per C-set and properties per C-set).",
    )
    strata: int = setting(
        3,
        "quantile strata per feature",
        doc="Quantile strata per feature (3: low / medium / high, bounds at the exact tertiles).",
        ge=1,
    )
    per_stratum: int = setting(
        30,
        "C-sets drawn per stratum",
        doc="C-sets (pages) drawn per stratum: 3 strata x 2 features x 30 = 180 pages.",
        ge=1,
    )
    seed: int = setting(
        42,
        "seed of the hash permutation",
        doc="Seed of the hash permutation that orders C-sets and their URLs (sha256, not rand()).",
    )
    replacement_urls: int = setting(
        3,
        "replacement candidates from the drawn C-set's other sample URLs",
        doc="Replacement candidates per drawn C-set for pages that cannot be read: its own other sample "
        "URLs, then undrawn C-sets of the same stratum.",
        ge=0,
    )
    replacement_csets: int = setting(
        5,
        "replacement candidates from undrawn C-sets of the same stratum",
        doc="Undrawn C-sets of the same stratum tried per drawn C-set, after its own URLs.",
        ge=0,
    )


@dataclass(frozen=True)
class WarcIndexConf(RejectRows, RecordLimit, WarcBase):
    """jobs/warc_index.py: the index of WARC files' HTML records."""


@dataclass(frozen=True)
class ExtractQuadsConf(RejectRows, PageLimits):
    """jobs/extract_quads.py: WARC files to WebDataCommons-style N-Quads, under the same bounds per
    record and page as [pages]."""


@dataclass(frozen=True)
class PagesConf(RejectRows, PageLimits, WarcBase):
    """jobs/pages.py: fetch the sample's pages and read their text and markup. Its settings, with
    the generator rules resolved, are how a page is read (``udfs.corpus.html.PageConfig.of``)."""

    warc_index: tuple[str, ...] = setting(
        (),
        "WARC index table(s): Parquet with url, warc_filename, warc_record_offset, warc_record_length "
        "(fetch_status, content_mime_type, fetch_time if present)",
        doc="The WARC index table(s) (Common Crawl's columnar index columns, or jobs/warc_index.py's output).",
    )
    replacements: int = setting(
        8,
        "replacement candidates tried per input row, in order",
        doc="Replacement candidates tried, in the sample's order, when a page cannot be used (0: none).",
        ge=0,
    )
    text_extractor: str = setting(
        "trafilatura",
        "extractor of the text generation reads (text)",
        doc="The text generation reads (the `text` column): trafilatura (main text, default), html2text (the "
        "paper's choice: the whole page as text) or main+rest (main text, then the page's other lines).",
        choices=_names("udfs.corpus.text", "TEXT_EXTRACTORS"),
    )
    judge_text_extractor: str = setting(
        "main+rest",
        "extractor of the text factuality judges against (judge_text)",
        doc="The text factuality judges against (the `judge_text` column), same choices. main+rest states "
        "as many of the human markup's values as the whole page, in fewer tokens, main content first "
        '(experiments/page_text; docs/results/pages.md "Which text states what the human markup says").',
        choices=_names("udfs.corpus.text", "TEXT_EXTRACTORS"),
    )
    microdata: bool = setting(
        False,
        "also read microdata as markup blocks",
        doc="Also read microdata (extruct, uniform JSON-LD shape) as markup blocks.",
    )
    generator_rules: str = setting(
        "conf/generators.toml",
        "rules naming each markup block's generator (conf/generators.toml's format)",
        doc="The rules that name the generator of each markup block (the CMS plugin, platform or module "
        "that wrote it; pages/'s generator columns): udfs/corpus/generators.py reads them.",
    )
    max_text_chars: int = setting(
        200_000,
        "page text is cut to this length (text_chars keeps the full length)",
        ge=1,
    )
    max_html_depth: int = setting(
        256,
        "a page nesting elements deeper than this is a parse_error (not read)",
        doc="A page whose elements nest deeper than this (<html> is 1) is a parse_error row, not read: "
        "lxml's HTML parser, which trafilatura uses, drops every element below depth 256 without an error "
        "(and 2048 is its limit with huge_tree, how the JSON-LD is read), so a deeper page would be `ok` "
        'with its text or markup silently lost (docs/jobs/pages.md "Limits").',
        ge=1,
    )
    judge_truncated: bool = setting(
        False,
        "judge a capture that holds part of its page (WARC-Truncated, a body short of its length)",
        doc="Judge a capture that holds part of its page: a WARC record marked WARC-Truncated (any reason; "
        "Common Crawl's index: content_truncated), an HTTP body shorter than its Content-Length, a chunked "
        "body cut before its last chunk. Off (default): such a capture is a `truncated` row with its reason "
        "and the next candidate is tried; on: it is judged, its pages/ and scores/ rows flagged `truncated`.",
    )
    partitions: int = setting(0, "tasks for fetching and extraction (0: Spark's default parallelism)", ge=0)


@dataclass(frozen=True)
class ImportPsetConf(RejectRows):
    """jobs/import_pset.py: the paper's commit, which text, the bundle's clone cache, the rejects' bound,
    a stratified subset."""

    commit: str = setting(
        "",
        "an original commit of the paper's repository that touched its folder ('': the last)",
        doc='An original commit of the paper\'s repository that touched its data/WDC/Pset folder; "": the '
        "last (a checkout: its own files).",
    )
    text: str = setting(
        "paper",
        "text and judge_text: the paper's <id>.txt, or the project's extraction of the HTML ([pages] settings)",
        doc='Which text fills the text and judge_text columns: "paper" (the paper\'s extracted <id>.txt, '
        'byte for byte) or "project" (the HTML extracted as jobs/pages.py extracts it, under [pages]\'s '
        "extractors and limits).",
        choices=("paper", "project"),
    )
    cache: str = setting(
        "",
        "where a bundle is cloned once ('': under the system temp dir)",
        doc='Where the history bundle is cloned once, under its sha256; "": the system temp dir.',
    )
    per_stratum: int = setting(
        0,
        "a subset: this many pages per feature and stratum, shortest paper text first, with one markup per "
        "source (0: every page)",
        doc="A stratified subset: this many pages per feature and stratum, those with the shortest paper "
        "text (which bounds a CPU judge's work), among the pages with one markup file per source (0: every page).",
        ge=0,
    )


@dataclass(frozen=True)
class ScoresConf:
    """Settings of the scores: BLINKG value matching (udfs/scores/matching.py) and the
    ScrapeGraphAI-100k key scores (udfs/scores/keys.py); MeMR has none."""

    match_threshold: float = setting(
        0.8,
        "BLINKG value match: max(normalised Levenshtein similarity, embedding cosine) >= this",
        doc="BLINKG value match: max(normalised Levenshtein similarity, embedding cosine) >= this (0.8 is "
        "the value BLINKG fitted against expert judgments).",
        ge=0,
        le=1,
    )
    embedding_batch_size: int = setting(64, "texts per embedding batch (all-MiniLM-L6-v2 on CPU)", ge=1)
    embedding_threads: int = setting(
        1,
        "BLAS threads per process for the embeddings' matrix products",
        doc="BLAS threads per process for the embeddings' matrix products (1: workers run side by side; "
        "see udfs/scores/matching.py).",
        ge=1,
    )
    ignore_keys: tuple[str, ...] = setting(
        ("@context",),
        "keys left out of the key scores' flattened key sets and of the JSON BLEU",
        doc="ScrapeGraphAI-100k key scores: keys left out of the flattened key sets and of the JSON BLEU "
        "(@context is boilerplate both markups carry).",
    )
    bleu_max_order: int = setting(
        4,
        "highest n-gram order of the sentence BLEU",
        doc="Highest n-gram order of the sentence BLEU (value score of strings, BLEU of the serialised JSON).",
        ge=1,
    )


@dataclass(frozen=True)
class ValidityConf(Vocab):
    """The validity agent (udfs/agents/validity/): engine, strict or lenient reading, release of the
    shapes, mode (schemaorg or paper)."""

    engine: str = setting(
        "compiled",
        "engine of the validity agent: compiled (in-memory indexes) or pyshacl (the reference)",
        doc='Engine of the validity agent: "compiled" (in-memory indexes, the pipeline\'s) or "pyshacl" (the '
        "reference: pySHACL against shapes/schemaorg-<vocab>[.strict].shapes.ttl). Same verdicts.",
        choices=_names("udfs.agents.validity.engines", "ENGINES"),
    )
    strict: bool = setting(
        False,
        "literals must match a datatype of the range, enumeration members must be IRIs",
        doc="false = the paper's lenient reading (a literal is never rejected, an untyped IRI is a link); "
        "true = literals must match a datatype of the range, enumeration members must be IRIs.",
    )
    mode: str = setting(
        "schemaorg",
        "schemaorg: schema.org's rules; paper: the paper's filter, to reproduce its Table 7",
        doc="\"schemaorg\" = schema.org's rules (union of a multi-typed entity's properties, only the "
        'offending triple removed); "paper" = the paper\'s filter, to reproduce its Table 7 (each type '
        "closes the entity, a flagged value removes every equal leaf of the markup; engine and strict do "
        "not apply). `python -m udfs.agents.validity --compare-modes FILE...` shows where they differ and why.",
        choices=_names("udfs.agents.validity.findings", "MODES"),
    )


_THRESHOLD_HELP = (
    'a claim is {what} at this score or above; a number is used as written, "calibrated" takes the '
    "calibration file's entry for this judge (else --fallback-threshold)"
)


@dataclass(frozen=True)
class JudgeConf:
    """The verdict agents' judge, one for every job that judges (``jobs/evaluate.py``, and
    ``jobs/agents_bench.py`` which measures it): the strategy, the questions of each agent
    (``udfs.agents.questions``) and the factuality gate, each agent's threshold (a number, used as
    written, or "calibrated": the calibration file's matching entry, else
    ``fallback_threshold``), the verdict models (empty: the service's first), the model that breaks
    their ties ("": none) and the calibration file ("": none). Both jobs take these settings' flags;
    ``udfs.agents.judge.build_judge`` makes the run's judge of the checked section."""

    strategy: str = setting(
        "direct",
        "FactCheck verdict strategy",
        doc='FactCheck verdict strategy: "direct", "guided" (zero-shot), "fewshot" (schema.org examples).',
        choices=_names("udfs.agents.prompts", "STRATEGIES"),
    )
    factuality_questions: tuple[str, ...] = setting(
        ("plain", "claim", "extract-soft-all-near", "extract-other", "complies-ranged"),
        _text("udfs.agents.questions", "questions_help", "factuality"),
        doc="Questions asked of every claim (udfs/agents/questions.py; `python jobs/evaluate.py --help` lists "
        "them with a line each). Factuality: the text questions' scores averaged, and where questions about "
        "the property (complies-ranged) are asked too, the geometric mean of that mean and theirs; "
        "compliance: the scores averaged. Each question is a request per claim; a calibration entry applies "
        "to the same questions only. The default is the best judge measured on the embedded model "
        "(docs/results/judge.md, docs/results/judge-configurations.md), at about four to five times the "
        'seconds of ["plain"] alone; its complies-ranged request is the compliance agent\'s own ("ranged"), '
        "answered once per claim.",
        choices=_names("udfs.agents.questions", "FACTUALITY"),
        metavar="Q",
    )
    factuality_gate: float = setting(
        0.1,
        "the first factuality question about the text gates the others: they are asked only where it "
        "scores at least this, and below it score 0 (0: every question asked of every claim); a "
        "calibration entry is fitted for one gate",
        doc="The first text question (plain) gates the others: they are asked only of a claim it scores at "
        "least this, and below it score 0 (0: every question asked of every claim). Part of the judge: a "
        "calibration entry is fitted for one gate. 0.1: the largest gate that keeps the ungated judge's F1 "
        'on the fit and test splits and on a held-out sample (docs/results/judge.md "The gate (the default '
        'judge)").',
        ge=0,
        le=1,
    )
    compliance_questions: tuple[str, ...] = setting(
        ("ranged",),
        _text("udfs.agents.questions", "questions_help", "compliance"),
        doc='Compliance questions asked of every claim, their scores averaged (the default: "ranged", the '
        "question with the property's expected types).",
        choices=_names("udfs.agents.questions", "COMPLIANCE"),
        metavar="Q",
    )
    factuality_threshold: THRESHOLD = setting(
        CALIBRATED,
        _THRESHOLD_HELP.format(what="factual"),
        doc='A claim passes at this score or above. "calibrated": the calibration file\'s entry for these '
        "verdict models, strategy, questions and prompts gives it, else fallback_threshold. A number "
        "written here (or in your own --config file, or given as --factuality-threshold) is used as "
        "written, never replaced by an entry. The run record says which applied and why the others did "
        "not (docs/results/judge.md has the shipped entries' figures).",
        ge=0,
        le=1,
        metavar="T",
    )
    compliance_threshold: THRESHOLD = setting(
        CALIBRATED,
        _THRESHOLD_HELP.format(what="compliant"),
        doc="The compliance agent's threshold, the same way.",
        ge=0,
        le=1,
        metavar="T",
    )
    fallback_threshold: float = setting(
        0.5,
        'the threshold of an agent left "calibrated" when no calibration entry applies',
        doc='The threshold of an agent left "calibrated" when no entry applies (no file, no matching entry, '
        "or the verdict model is not known).",
        ge=0,
        le=1,
    )
    verdict_models: tuple[str, ...] = setting(
        (),
        "models that judge; several: majority vote with --judge-model breaking ties; empty: the first "
        "model the service lists",
        doc='Several models: majority vote, judge_model breaking ties ("": none); empty: the service\'s first model.',
        nargs="*",
    )
    judge_model: str = setting("", 'breaks ties between several --verdict-models ("": none)')
    calibration: str = setting(
        "conf/calibration.json",
        "calibration file (jobs/agents_bench.py calibrate writes entries for it): the threshold and "
        "probability map of the entry for these verdict models, strategy, questions and prompts, for an "
        'agent whose threshold is "calibrated"; "": none',
        doc="Calibration file (jobs/agents_bench.py calibrate writes an entry file; --install adds it here): "
        'thresholds and score-to-probability maps per verdict model, agent, strategy and questions. "": '
        "none. The shipped file holds the embedded model's direct verdicts for the shipped judge and for "
        'the cheap judge (factuality_questions = ["plain"]).',
    )


@dataclass(frozen=True)
class EvaluateConf(RequestTimeout):
    """jobs/evaluate.py: generation, the agents and how the work is spread."""

    limit: int = setting(
        3,
        "pages evaluated at most, in --order (0: all)",
        doc="Pages evaluated at most (0: all). The default bounds the CPU demo (the embedded 1.5B model "
        "takes 1.5-3 s per verdict and tens of seconds per generated markup on 2 cores).",
        ge=0,
    )
    order: str = setting(
        "shortest",
        "which pages a --limit keeps: sample order (rank, feature, stratum), or shortest text first (a "
        "bounded CPU demo)",
        choices=("sample", "shortest"),
    )
    generators: tuple[str, ...] = setting(
        (),
        "model ids on the service that generate markup (each is a source beside 'human'); empty: the "
        "first model the service lists. With --markups, only when this flag is given: --markups alone "
        "generates nothing",
        doc="Models on the service that generate markup (empty: the first it lists).",
        nargs="*",
    )
    stages: tuple[str, ...] = setting(
        ("validity", "factuality", "compliance"),
        "agents run, in this order of the pipeline",
        doc="The agents applied in turn to every markup.",
    )
    context_window: int = setting(8192, "tokens per request (the served n_ctx)", ge=1)
    max_tokens: int = setting(1024, "most tokens of one generated markup", ge=1)
    max_claims: int = setting(
        0,
        "distinct claims judged per markup and agent (0: all); the rest are recorded as not judged",
        ge=0,
    )
    repeats: int = setting(
        1,
        "evaluate each page this many times (sources named source#1..N, generation seeded by the repeat, "
        "each repeat's judge asking afresh); the report gives the mean over repeats and their spread",
        doc="Each page evaluated this many times (BLINKG's and FactCheck's repeated runs): with several, "
        "every source's rows are named source#1..N, generation samples with the repeat as its seed, and "
        "each repeat's judge asks afresh, past the request cache of the others (greedy, so its spread is "
        "the engine's run-to-run noise). The report gives Table 7 as the mean over repeats with its spread.",
        ge=1,
    )
    temperature: float = setting(
        0.0,
        "generation's sampling temperature (0: greedy; above 0 each repeat draws its own markup)",
        doc="Sampling temperature of generation: 0 is greedy (the paper's: one markup per page and model), "
        "so repeats differ only by the judge; above 0 each repeat draws its own markup.",
        ge=0,
        le=2,
    )
    early_exit: bool = setting(
        True,
        "stop asking a claim's factuality questions once its verdict is decided (the same verdicts for "
        "fewer requests; factual_score then combines the questions answered, factual_answers of them); "
        "--no-early-exit asks every question of every claim, for full scores",
        doc="Stop asking a claim's factuality questions once its verdict is decided, whatever the rest would "
        "answer: the same verdicts as asking all (at the threshold in use), for fewer requests; the claim's "
        "factual_score is then that of the questions answered (factual_answers). false: every question of "
        "every claim (full scores: score histograms, a calibration fitted on your own labels).",
    )
    executor: str = setting(
        "ray",
        "ray: Ray Data actors; local: this process",
        doc='"ray" (Ray Data actors calling the Serve app) or "local" (this process).',
        choices=("ray", "local"),
    )
    workers: int = setting(1, "concurrent page evaluators (Ray actors)", ge=1)
    max_in_flight: int = setting(
        4,
        "model requests outstanding per worker and model (a quarter as many pages at once); "
        "conf/serving-gpu.toml says what GPU replicas want",
        doc="Model requests outstanding per worker and model; a worker evaluates a quarter as many pages at "
        "once (at least one: on CPU one page at a time, its requests sharing the engine's prefix cache). "
        "The embedded llama.cpp engine runs one sequence at a time: a few keep it fed. A vLLM replica on "
        "a GPU wants hundreds (conf/serving-gpu.toml).",
        ge=1,
    )
    part_pages: int = setting(
        10_000,
        "pages a worker takes at a time; their rows are committed together when they are done, so a kill "
        "redoes at most these pages per worker (answers from the request cache)",
        doc="A worker takes part_pages pages at a time and commits their rows together when they are done "
        "(a kill redoes at most these, with answers from the request cache); a table's part is written "
        "early once it holds part_rows rows. Files per table: about pages / part_pages (+ one per worker).",
        ge=1,
    )
    part_rows: int = setting(
        100_000,
        "a table's part is written once it holds this many rows (a page's rows stay in one part)",
        ge=1,
    )


@dataclass(frozen=True)
class ReportConf:
    """jobs/report.py: the report's tables."""

    group_interval_width: float = setting(
        0.25,
        "per-generator and per-type tables: a group whose rates' intervals are wider is pooled as (other)",
        doc="The per-generator and per-type tables show a group (the software that wrote the human markup, "
        "a root schema.org type) on its own only when each of its rejection rates' 95% intervals is at most "
        'this wide; the other groups are pooled as "(other)" (udfs/report/groups.py).',
        gt=0,
        le=1,
    )


@dataclass(frozen=True)
class AgentsBenchConf(RequestTimeout):
    """jobs/agents_bench.py: the ground truth (build), the benchmark (run) and the calibration
    (calibrate) of the judge."""

    # the argument group each flag is shown in by --help (the command it belongs to)
    flag_groups: ClassVar[dict[str, tuple[str, ...]]] = {
        "build": ("seed", "distant_max", "intrinsic", "max_value_chars"),
        "run": ("tasks", "limit", "held_out_after", "batch_size", "timeout_s", "concurrency"),
        "calibrate (and every run flag)": ("fit_fraction",),
    }

    seed: int = setting(
        42, "seed of every choice (negatives, subsets)", doc="Ground truth (build): seed of every choice."
    )
    distant_max: float = setting(
        0.25,
        "two properties are semantically distant below this embedding cosine",
        doc='Two properties are "semantically distant" below this cosine of their name+definition embeddings '
        "(all-MiniLM-L6-v2).",
        ge=-1,
        le=1,
    )
    intrinsic: str = setting(
        "distant",
        "intrinsic negatives: a seeded choice among the distant properties' values (distant), or the "
        "authors' rule: the same kind of value, the furthest property name (paper)",
        doc='Intrinsic negatives: "distant", a seeded choice among the distant properties\' values; "paper", '
        "the authors' rule (the value of the same kind whose property name is furthest), under which the "
        'paper\'s Table 2 was measured (docs/results/judge.md, "Two readings of the intrinsic negatives").',
        choices=_names("udfs.agents_bench.groundtruth", "INTRINSIC_CHOICES"),
    )
    max_value_chars: int = setting(
        300,
        "longer values are rejected",
        doc="Claims with longer values are left out of the ground truth.",
        ge=1,
    )
    limit: int = setting(
        40,
        "items per task, half positive (0: all)",
        doc="Benchmark (run): items per task, half positive (0: all); the default bounds a CPU run of the "
        "embedded model (about 100 verdicts for the three tasks, positives shared by the two factuality tasks).",
        ge=0,
    )
    tasks: tuple[str, ...] = setting(
        ("intrinsic", "extrinsic", "compliance"),
        "tasks benchmarked",
        doc="The tasks measured: intrinsic and extrinsic factuality, compliance.",
        choices=_names("udfs.agents_bench.groundtruth", "TASKS"),
    )
    held_out_after: int = setting(
        0,
        "run: judge a held-out sample, --limit items per task drawn from those that none of the first N "
        "items per task of the agent's tasks is, nor shares its example text with (the items a calibrate "
        "--limit N saw); 0: the first --limit items",
        doc="Benchmark (run): 0 judges the first `limit` items per task; N judges a held-out sample instead, "
        "drawn from the items that none of the first N per task is nor shares its example text with.",
        ge=0,
    )
    batch_size: int = setting(8, "items judged per results part", doc="Items sent to the judge at once.", ge=1)
    concurrency: int = setting(
        1,
        "requests in flight per model; 1 asks one claim at a time so latency_s is the time of one verdict "
        "(with more, it includes the wait behind the others); more suits a batching engine (vLLM on a GPU)",
        ge=1,
    )
    fit_fraction: float = setting(
        0.5,
        "share of the example texts the threshold and probability map are fitted on; the rest is the test split",
        doc="Calibration (calibrate): the share of the ground truth's example texts the threshold and the "
        "probability map are fitted on (the rest is the test split the figures are measured on); the "
        "entries are written to [judge] calibration (relative paths: from the project root).",
        gt=0,
        lt=1,
    )


@dataclass(frozen=True)
class Config:
    """The whole file: one attribute per section, named as the section."""

    path: str
    csets: CsetsConf
    sample: SampleConf
    warc_index: WarcIndexConf
    extract_quads: ExtractQuadsConf
    pages: PagesConf
    import_pset: ImportPsetConf
    scores: ScoresConf
    validity: ValidityConf
    judge: JudgeConf
    evaluate: EvaluateConf
    report: ReportConf
    agents_bench: AgentsBenchConf

    def section(self, name: str) -> Any:
        """The section called ``name`` (a job's name), or a ConfigError naming the file."""
        if name not in SECTIONS:
            raise ConfigError(f"{self.path}: no [{name}] section is defined (sections: {', '.join(SECTIONS)})")
        return getattr(self, name)


# section name -> its dataclass, in the order of Config's fields
SECTIONS: dict[str, type] = {k: v for k, v in typing.get_type_hints(Config).items() if k != "path"}


# ---- checking --------------------------------------------------------------------------------------


def _type_name(tp: Any) -> str:
    if tp == THRESHOLD:
        return f'a number or "{CALIBRATED}"'
    if typing.get_origin(tp) is tuple:
        return f"a list of {typing.get_args(tp)[0].__name__}"
    if typing.get_origin(tp) is dict:
        return f"a table of {typing.get_args(tp)[1].__name__}"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}[tp]


def threshold_value(value: Any, where: str = "threshold") -> float | str:
    """A threshold as a file holds it (TOML, JSON): a finite number in [0, 1], or the string
    :data:`CALIBRATED`; anything else (a string holding a number, a bool, NaN, 1.7) is a
    ConfigError naming ``where``."""
    if value == CALIBRATED:
        return CALIBRATED
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0
    if not ok:  # NaN fails the comparison too
        raise ConfigError(f'{where} must be a number in [0, 1] or "{CALIBRATED}", not {value!r}')
    return float(value)


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """``value`` as type ``tp`` (TOML's own types; an integer is a number, a list a tuple), or a
    ConfigError saying what was expected."""

    def bad() -> ConfigError:
        return ConfigError(f"{where} must be {_type_name(tp)}, not {type(value).__name__} {value!r}")

    if tp == THRESHOLD:
        return threshold_value(value, where)
    if typing.get_origin(tp) is tuple:
        item = typing.get_args(tp)[0]
        if not isinstance(value, list):
            raise bad()
        return tuple(_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if typing.get_origin(tp) is dict:  # a table of one type, keyed by strings (environment variables)
        item = typing.get_args(tp)[1]
        if not isinstance(value, dict):
            raise bad()
        return {k: _coerce(v, item, f"{where}.{k}") for k, v in value.items()}
    plain = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}.get(tp)
    if plain is None:
        raise TypeError(f"unsupported config field type {tp!r}")  # a programming error in this module
    if not isinstance(value, plain) or (tp is not bool and isinstance(value, bool)):
        raise bad()
    return float(value) if tp is float else value


def _check(f: dataclasses.Field, value: Any, where: str) -> None:
    """A typed value against its field's declaration: every number finite and in range, every value
    (every item of a list) one of the choices; else a ConfigError naming ``where``."""
    s = declaration(f)
    choices = s.options() if s else f.metadata.get("choices")
    items = value if isinstance(value, tuple) else (value,)
    for i, v in enumerate(items):
        at = f"{where}[{i}]" if isinstance(value, tuple) else where
        if choices is not None and v not in choices:
            raise ConfigError(f"{at} must be one of {', '.join(map(repr, choices))}, not {v!r}")
        if s is None or isinstance(v, (str, bool)):
            continue
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{at} must be a finite number {s.range_text()}".rstrip() + f", not {v!r}")
        if not s.in_range(v):
            raise ConfigError(
                f"{at} must be {'an integer' if isinstance(v, int) else 'a number'} {s.range_text()}, not {v!r}"
            )


def _nearest(word: str, known: Sequence[str], shown: str = "{}") -> str:
    """What an error about the unknown ``word`` suggests: the nearest of ``known``, else all of them."""
    close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {shown.format(close[0])}?"
    return f"known: {', '.join(shown.format(k) for k in known) or 'none'}"


def parse_section(cls: type, name: str, table: Any, path: str, *, label: str | None = None) -> Any:
    """``table`` (one TOML table) as the frozen dataclass ``cls``: every field a key of the same name,
    of the field's type, finite and in its declared range, one of its choices; a field with a
    default may be left out (it takes the default). ``label`` names the table in errors (default
    ``[name]``). Any fault is a ConfigError naming ``path``, the table and the key; an unknown key
    is named with the nearest known one."""
    label = label or f"[{name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {label} must be a table of settings, not {type(table).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in table:
        if key not in fields:
            raise ConfigError(f"{path}: {label} has unknown key {key} ({_nearest(key, list(fields))})")
    missing = [k for k in fields if k not in table and _required(fields[k])]
    if missing:
        raise ConfigError(f"{path}: {label} is missing key{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    values = {}
    for k in fields:
        if k in table:
            where = f"{path}: {label} {k}"
            values[k] = _coerce(table[k], hints[k], where)
            _check(fields[k], values[k], where)
    return cls(**values)


def flag_value(cls: type, name: str, value: Any, flag: str) -> Any:
    """A command line's value of the setting ``name`` of section ``cls`` (the text argparse kept, a
    list of texts, or a switch's bool) as the declared type, checked as a file's value is; a
    ConfigError naming ``flag`` otherwise (``--max-html-bytes abc``, ``--factuality-threshold nan``)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    tp = typing.get_type_hints(cls)[name]
    typed = tuple(_from_text(v, typing.get_args(tp)[0], flag) for v in value) if isinstance(value, list) else None
    if typed is None:
        typed = _from_text(value, tp, flag)
    if tp == THRESHOLD:
        typed = threshold_value(typed, flag)
    _check(f, typed, flag)
    return typed


def _from_text(text: Any, tp: Any, flag: str) -> Any:
    if not isinstance(text, str) or tp is str:
        return text  # a switch's bool, or a string setting
    if tp == THRESHOLD and text.strip() == CALIBRATED:
        return CALIBRATED
    try:
        return int(text) if tp is int else float(text)
    except ValueError:
        kind = "an integer" if tp is int else _type_name(tp)
        raise ConfigError(f"{flag} must be {kind}, not {text!r}") from None


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


class ConfigKey(typing.NamedTuple):
    """One key of a configuration file, for its reference documentation: the section (``embedded``,
    ``embedded.models``...), the key, its TOML type, whether a file must give it, its default
    (None when required), the allowed values (empty: any of the type), a one-line meaning and its
    range in words ("" when it has none)."""

    section: str
    key: str
    type: str
    required: bool
    default: Any
    choices: tuple[Any, ...]
    doc: str
    range: str = ""


def describe_section(cls: type, section: str) -> list[ConfigKey]:
    """The keys of the dataclass ``cls`` read as ``[section]``, in declaration order; the meaning is
    each field's ``metadata["doc"]`` (empty when it has none)."""
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        required = _required(f)
        default = None if required else (f.default if f.default is not dataclasses.MISSING else f.default_factory())
        s = declaration(f)
        rows.append(
            ConfigKey(
                section,
                f.name,
                _type_name(hints[f.name]).split(" ", 1)[1],
                required,
                default,
                tuple((s.options() if s else None) or f.metadata.get("choices", ())),
                f.metadata.get("doc", ""),
                s.range_text() if s else "",
            )
        )
    return rows


def parse_config(data: dict[str, Any], path: str = "<config>") -> Config:
    """A :class:`Config` from already parsed TOML (``path`` only names it in errors); a section the
    file leaves out takes its declared defaults."""
    for name in data:
        if name not in SECTIONS:
            raise ConfigError(f"{path}: unknown section [{name}] ({_nearest(name, list(SECTIONS), '[{}]')})")
    return Config(
        path=path, **{name: parse_section(cls, name, data.get(name, {}), path) for name, cls in SECTIONS.items()}
    )


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed TOML of ``path``, or a ConfigError naming it (missing, a directory, not TOML)."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such configuration file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a configuration file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load_config(path: str | Path | None = None) -> Config:
    """Read ``path`` (default: conf/pipeline.toml) into a typed, checked, frozen :class:`Config`."""
    path = Path(path) if path else DEFAULT_CONF
    return parse_config(read_toml(path), str(path))


def as_defaults(section: Any) -> dict[str, Any]:
    """A section's values as command-line defaults (tuples as lists, as argparse gives them)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(section).items()}


def exit_on_config_error(prog: str, exc: ConfigError) -> typing.NoReturn:
    """What a command line does with a ConfigError: one line on stderr, exit status 2 (argparse's
    status for a usage error), through :func:`udfs.runtime.cli.fail`."""
    from udfs.runtime.cli import fail

    fail(prog, str(exc))
