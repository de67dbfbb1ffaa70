# Two commands on a fresh clone: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

DEMO_SECRET ?= demo secret: never use it for a real course

demo: $(STAMP)
	$(VENV)/bin/attnkit demo
	ATTNKIT_SECRET='$(DEMO_SECRET)' $(VENV)/bin/attnkit build problem_bank/assignments/example.yaml \
		--roster problem_bank/assignments/sample_roster.csv --out build/demo --format html

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench.model_forward
	$(PY) -m bench.variants
	$(PY) -m bench.build

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis *.egg-info build
