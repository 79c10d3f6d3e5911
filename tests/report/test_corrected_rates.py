"""The report's rejection rates corrected for the judge, on a constructed scores table: pages whose
claims are false with a known share, judged by a judge of known sensitivity and specificity (the
calibration's test-split counts in the run record); the corrected rate comes back near the known
share, an agent without a matching calibration says so, and the run's calibration is named."""

import duckdb
import numpy as np
import pandas as pd

from udfs.report.sections.corrected_rates import corrected_rates
from udfs.report.sections.run_table import calibration_note
from udfs.runtime.judge_record import AgentRecord, AppliedThreshold, JudgeRecord, Origin, PassedOver


def scores_table(pages=300, claims=10, false_share=0.3, sens=0.8, spec=0.9, seed=2):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(pages):
        false = rng.random(claims) < false_share
        u = rng.random(claims)
        rejected = int(np.where(false, u < spec, u >= sens).sum())
        n_factual = claims - rejected
        rows.append(
            {
                "page_key": f"p{i}",
                "source": "human",
                "status": "ok",
                "n_valid": claims,
                "n_factual": n_factual,
                "n_compliant": n_factual,
            }
        )
    return pd.DataFrame(rows)


def record(matched=True):
    """A run record whose judge took a calibration entry for factuality (when ``matched``) with
    these test-split counts, and none for compliance."""
    test = {"n": 600, "tp": 240, "fn": 60, "tn": 270, "fp": 30}  # sens 0.8, spec 0.9

    def agent(entry, value):
        origin = (
            Origin("calibration", file="conf/calibration.json", entry=entry["id"])
            if entry
            else Origin("fallback", file="conf/pipeline.toml", setting="[judge] fallback_threshold")
        )
        passed = () if entry else (PassedOver("calibration", "no entry m compliance direct shared_prefix:ranged"),)
        return AgentRecord(
            ("plain",), ("plain",), "plain", "f" * 16, 0.0, AppliedThreshold(value, origin, passed), entry
        )

    fact = {"id": "m factuality direct shared_prefix", "test": test} if matched else None
    judge = JudgeRecord(
        "direct",
        ("m",),
        None,
        "conf/calibration.json",
        {"factuality": agent(fact, 0.3), "compliance": agent(None, 0.5)},
    )
    return {"evaluation": {"stages": ["validity", "factuality", "compliance"], "judge": judge.to_dict()}}


def test_the_corrected_rate_recovers_the_known_share_and_unmatched_agents_say_so():
    con = duckdb.connect()
    con.register("scores", scores_table())
    rows = {r["agent"]: r for r in corrected_rates(con, record())}
    f = rows["factuality"]
    observed = float(f["observed"].rstrip("%")) / 100
    corrected = float(f["corrected"].rstrip("%")) / 100
    low, high = (float(x.strip().rstrip("%")) / 100 for x in f["interval"].split("(")[0].split("–"))
    assert abs(observed - 0.41) < 0.03  # 0.3 * 0.9 + 0.7 * 0.2
    assert abs(corrected - 0.3) < 0.04 and low <= 0.3 <= high and f["why"] is None
    assert f["pages"] == 300 and f["claims"] == 3000
    c = rows["compliance"]
    assert c["corrected"] is None and "no calibration matched" in c["why"] and c["observed"] == "0.0%"
    assert "no calibration matched" in corrected_rates(con, record(matched=False))[0]["why"]
    note = calibration_note(record())
    assert note.startswith("conf/calibration.json") and "factuality: entry m factuality direct shared_prefix" in note
    assert "compliance: none (no entry m compliance direct shared_prefix:ranged)" in note
    assert "not recorded" in calibration_note({"evaluation": {}})
