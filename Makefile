# Two commands on a fresh clone with Python 3.11 and pip: `make report` and `make test`.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/bendtorch: pyproject.toml
	@command -v $(PY) >/dev/null 2>&1 || { echo "Python 3.11 is needed (set PY=/path/to/python3.11)"; exit 1; }
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(BIN)/bendtorch

.PHONY: report test typecheck
report: $(BIN)/bendtorch
	$(BIN)/bendtorch report

test: $(BIN)/bendtorch
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

typecheck: $(BIN)/bendtorch
	$(BIN)/mypy
