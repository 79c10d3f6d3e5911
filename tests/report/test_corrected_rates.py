"""The report's rejection rates corrected for the judge, on a constructed scores table: pages whose
claims are false with a known share, judged by a judge of known sensitivity and specificity (the
calibration's test-split counts in the run record); the corrected rate comes back near the known
share, an agent without a matching calibration says so, and the run's calibration is named."""

import duckdb
import numpy as np
import pandas as pd

from udfs.report.build import calibration_note, corrected_rates


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
    test = {"n": 600, "tp": 240, "fn": 60, "tn": 270, "fp": 30}  # sens 0.8, spec 0.9
    return {
        "evaluation": {
            "stages": ["validity", "factuality", "compliance"],
            "judge": {
                "calibration": {
                    "file": "/x/conf/calibration.json",
                    "sha256": "ab" * 32,
                    "note": "calibrated (factuality) for m, direct",
                    "agents": {"factuality": {"matched": matched, "test": test}, "compliance": {"matched": False}},
                }
            },
        }
    }


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
    assert "calibration.json" in calibration_note(record()) and "abababababab" in calibration_note(record())
    assert "not recorded" in calibration_note({"evaluation": {}})
