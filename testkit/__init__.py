"""Test and benchmark support: the differential fuzzers (``testkit.fuzz``), the stub engine, the
synthetic corpora and the capacity model. Tests, ``benchmarks/`` and ``experiments/`` import it; no
module of the product (``udfs/``, ``jobs/``, ``shapes/``, ``cluster/``) does, which
``tests/test_import_graph.py`` checks."""
