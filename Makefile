# Two commands do all the set-up on a fresh machine (Python 3.11 and Java 17 present):
#   make demo   installs everything into .venv and runs the pipeline on the bundled real data
#   make test   installs everything into .venv and runs the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
OUT ?= out/demo

.PHONY: setup demo test bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[model,dev]'
	touch $@

# spark-submit finds its Spark home through the venv's python, so the venv goes first on PATH.
RUN := PATH=$(CURDIR)/$(VENV)/bin:$$PATH

demo: setup
	$(RUN) spark-submit jobs/csets.py --input data/wdc --output $(OUT)

test: setup
	$(PY) -m pytest

clean:
	rm -rf out .pytest_cache
