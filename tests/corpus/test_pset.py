"""The paper's folder read offline (udfs.corpus.pset) from the bundle in ../shared; skipped without it."""

from __future__ import annotations

import shutil

import pytest

from udfs.corpus.pset import PSET, PsetError, open_pset

RESULTS = PSET + "/results.csv"
# the manifest's first GPT-3.5 markup, pinned at an original commit older than the last
MARKUP = (
    PSET + "/count_sum/stratum_0/corpus/GPT_3_Turbo_16K/text2kg_prompt3/3eab47918ca7d27bfa106104f3f17c33_WebPage.jsonld"
)
OLD = "434662f6871b672fc7c1f7bb1e911fc3c051be06"


def test_reads_the_last_and_an_original_commit(pset):
    commits = pset.original_commits()
    assert len(commits) == 12 and commits[-1] == "f335aeff164751e3520ce656b4dd2a6cc494bcce"
    assert pset.read(RESULTS).startswith(b"metric,approach,instance,value")
    assert pset.read(RESULTS, commits[-1]) == pset.read(RESULTS)
    assert pset.read(MARKUP, OLD).lstrip().startswith((b"{", b"["))
    assert MARKUP in pset.files(OLD) and RESULTS in pset.files()
    # the file the stored copy lacks in five commits (the bundle's README): held by the last four only
    lost = (
        PSET + "/pset_length/stratum_0/corpus/baseline/d9acf40a35ba18d643f095fa6292dece_WebPage_factual_expected.json"
    )
    assert [pset.exists(lost, c) for c in commits] == [False] * 8 + [True] * 4


def test_commits_the_folder_never_saw_and_paths_outside_it_are_refused(pset):
    with pytest.raises(PsetError, match="did not touch"):
        pset.read(RESULTS, "0" * 40)
    with pytest.raises(PsetError, match="not under"):
        pset.read("README.md")
    with pytest.raises(PsetError, match="absent"):
        pset.read(PSET + "/no-such-file")


def test_a_checkout_and_a_second_open_of_the_bundle(pset, tmp_path):
    from tests.conftest import PSET_DATA

    again = open_pset(PSET_DATA / "pset-history.bundle")  # the clone under its sha256 is reused
    assert again.root == pset.root
    checkout = tmp_path / "repo"
    shutil.copytree(pset.root / PSET / "count_sum" / "stratum_0", checkout / PSET / "count_sum" / "stratum_0")
    plain = open_pset(checkout)
    path = PSET + "/count_sum/stratum_0/corpus/baseline/5acb13a6d1776ceab442df15ac28488a_LocalBusiness.jsonld"
    assert plain.read(path) == pset.read(path) and path in plain.files()
    with pytest.raises(PsetError, match="no git checkout"):
        plain.read(path, OLD)
    with pytest.raises(PsetError, match="neither"):
        open_pset(tmp_path / "repo" / PSET)
