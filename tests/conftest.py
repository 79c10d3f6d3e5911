"""Shared fixtures: one local Spark session for the whole suite, paths to the bundled data."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
WDC_SAMPLE = DATA / "wdc" / "wdc-2022-12-jsonld-part00044-first10k.nq"
SCHEMAORG = DATA / "schemaorg-30.0"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """A local Spark session shared by every test that needs one (starting the JVM costs ~5 s)."""
    from udfs.job import build_spark

    os.environ.setdefault("SPARK_LOG_LEVEL", "ERROR")
    session = build_spark(
        "tests",
        master="local[2]",
        extra=[
            "spark.sql.shuffle.partitions=4",
            "spark.ui.showConsoleProgress=false",
            f"spark.sql.warehouse.dir={tmp_path_factory.mktemp('warehouse')}",
        ],
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def wdc_sample() -> Path:
    return WDC_SAMPLE
