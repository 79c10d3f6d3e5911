"""The published figures the report sets beside ours, named once.

Source: Dang, Pham, Molli, Skaf-Molli, Gaignard, "LLM4Schema.org" (Sage journal article), as
summarised in ``../shared/docs/method.md``: Table 7 (180 pages, 30 per stratum of two features;
triples in, after validity, after factuality, after compliance, rejection rate) and the MeMR
averages of its text. The article's per-stratum figures (Table 8) are not in that summary, only
its finding, kept here as words.
"""

from __future__ import annotations

CITATION = "LLM4Schema.org (Dang et al.), Table 7: 180 pages, 30 per stratum"
PAGES = 180

# source -> (triples in, after validity, after factuality, after compliance), Table 7
TABLE7: dict[str, tuple[int, int, int, int]] = {
    "human": (5690, 4875, 3315, 2719),
    "GPT-3.5": (4190, 3369, 2489, 2055),
    "GPT-4": (5260, 4613, 3573, 3113),
}
# the rejection rate the article prints (1 - after compliance / triples in)
REJECTION = {"human": 0.522, "GPT-3.5": 0.509, "GPT-4": 0.408}
# model -> (MeMR of the human side, MeMR of the model side), averaged over the pages
MEMR: dict[str, tuple[float, float]] = {"GPT-3.5": (0.687, 0.585), "GPT-4": (0.568, 0.707)}
# Table 8, in words: which side the article found ahead, per stratum
TABLE8_FINDING = {"high": "humans ahead", "low": "GPT-4 ahead"}
