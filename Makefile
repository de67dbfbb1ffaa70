# Two commands on a fresh clone: `make demo` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@# the repository's own tools (python -m synthetic, python -m bench) from any directory:
	@# the editable install maps only the shipped packages
	$(PY) -c 'import site, sys; open(site.getsitepackages()[0] + "/attention-kit-tools.pth", "w").write(sys.argv[1] + "\n")' '$(CURDIR)'
	touch $(STAMP)

DEMO_SECRET ?= demo secret: never use it for a real course

DEMO_ENV := ATTNKIT_SECRET='$(DEMO_SECRET)'
DEMO_HW   := problem_bank/assignments/example.yaml

# The whole loop on the sample roster: build, students' submissions (synthetic: correct,
# partial, one per common misconception, a few hostile ones), a self-check, grading in the
# sandbox, the class table and the reports.
demo: $(STAMP)
	$(VENV)/bin/attnkit demo
	@printf '\n== 1. build: a randomized notebook per student ==\n'
	$(DEMO_ENV) $(VENV)/bin/attnkit build $(DEMO_HW) \
		--roster problem_bank/assignments/sample_roster.csv --out build/demo --format html
	@printf '\n== 2. submissions: correct, partial, misconceptions, hostile ==\n'
	$(DEMO_ENV) $(PY) -m synthetic build/demo --key build/demo/instructor/answer_key.json \
		--secret-env ATTNKIT_SECRET --out build/demo/submissions
	@printf '\n== 3. a student checks their notebook before handing it in ==\n'
	$(VENV)/bin/attnkit check build/demo/submissions/submitted/s2026002/attention-hw1/attention-hw1.ipynb \
		|| [ $$? -eq 1 ]   # 1: not ready (the partial notebook has unanswered parts)
	@printf '\n== 4. grading, in the sandbox (unchanged submissions are skipped: --regrade) ==\n'
	$(DEMO_ENV) $(VENV)/bin/attnkit grade $(DEMO_HW) build/demo/submissions/submitted \
		--build build/demo --timeout 3
	@printf '\n== 5. reports ==\n'
	$(DEMO_ENV) $(VENV)/bin/attnkit report $(DEMO_HW) --build build/demo --dashboard
	@printf '\n== 6. next: grade the free-response parts by hand, in a browser ==\n'
	@printf '%s\n' "$(DEMO_ENV) $(VENV)/bin/attnkit mark $(DEMO_HW) --build build/demo" \
		'(a page on 127.0.0.1 with a one-time token; Ctrl-C stops it; then attnkit report again)'

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench.model_forward
	$(PY) -m bench.variants
	$(PY) -m bench.build
	$(PY) -m bench.grade --cluster local:2
	$(PY) -m bench.hostile
	$(PY) -m bench.mark_page
	$(PY) -m bench.diagnosis
	$(PY) -m bench.forensics
	$(PY) -m bench.credit
	$(PY) -m bench.course --students 1000 10000 --cluster local:2

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis *.egg-info build
