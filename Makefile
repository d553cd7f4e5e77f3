# Two commands on a fresh clone with Python 3.11 and pip: `make report` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

# The environment: the exact versions of requirements.lock, then the project itself (editable, no dependency
# resolution: the lock already holds every dependency).
$(BIN)/bendtorch: pyproject.toml requirements.lock
	@command -v $(PY) >/dev/null 2>&1 || { echo "Python 3.11 is needed (set PY=/path/to/python3.11)"; exit 1; }
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(BIN)/bendtorch

.PHONY: report test typecheck lint-imports wheel-check
report: $(BIN)/bendtorch
	$(BIN)/bendtorch report

# mypy --strict and import-linter over the whole tree, then every test suite (what CI runs)
test: typecheck lint-imports
	$(BIN)/python -m pytest -q

# mypy and import-linter read packages from the file system: they see the installed layout through a tree of links
typecheck: $(BIN)/bendtorch
	$(BIN)/python .ci/layout.py >/dev/null
	MYPYPATH=build/layout $(BIN)/mypy build/layout/bendtorch tests notebooks

lint-imports: $(BIN)/bendtorch
	$(BIN)/python .ci/layout.py >/dev/null
	cd build/layout && PYTHONPATH=. ../../$(BIN)/lint-imports --no-cache ../../pyproject.toml

# The wheel, installed into a fresh environment outside the checkout, runs the main jobs from another directory.
wheel-check: $(BIN)/bendtorch
	bash .ci/wheel-check
