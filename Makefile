# One way to run each thing. `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# npm packages the book serves (MathJax) or its browser tests inject (axe-core): package-lock.json.
NPM_STAMP := node_modules/.installed
# Debian packages are installed with apt-get: directly as root (CI), else through sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get
# -W: warnings are errors; -n: nitpicky cross-references; --all: rebuild (and so re-execute) every page.
BOOK_FLAGS := -W -n --keep-going --all

.PHONY: help setup browser book test refresh bench data clean binder-check

help:
	@echo "make book     set up .venv if needed, then build the HTML (every page executed) into _build/html"
	@echo "make test     set up (and Debian's chromium), build the book with -W, then run every test"
	@echo "              (pages via nbval, package, Binder pins, browser tests of the built HTML)"
	@echo "make refresh  re-execute every page and rewrite the reference outputs in tests/references"
	@echo "make bench    time a clean forced-execution build page by page, with peak memory (_build/bench.md)"
	@echo "make binder-check  rehearse the Binder launch locally: binder/ built as repo2docker does, every page"
	@echo "              opened and run in JupyterLab in chromium (_build/binder-check.md; not part of make test)"
	@echo "make data     regenerate the synthetic CloudWave data in data/"
	@echo "make clean    remove _build (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "Python 3.11 is required (set PYTHON=python3.11)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

$(NPM_STAMP): package.json package-lock.json
	command -v npm >/dev/null || { $(APT_INSTALL) update && $(APT_INSTALL) install -y nodejs npm; }
	npm ci --no-audit --no-fund
	touch $@

setup: $(STAMP) $(NPM_STAMP)

# Debian's chromium for the browser tests, driven by Playwright (never `playwright install`).
browser:
	command -v chromium >/dev/null || { $(APT_INSTALL) update && $(APT_INSTALL) install -y chromium; }

book: setup
	$(VENV)/bin/jupyter-book build . $(BOOK_FLAGS)

test: browser book
	$(PY) -m pytest

refresh: setup
	$(PY) tests/book_pages.py refresh

data: setup
	$(PY) -m transformer_lab.cloudwave

bench: setup
	$(PY) tests/bench.py

# Not part of `make test` (its separate venv takes minutes to build): run on its own, and by CI as its own step.
binder-check: setup browser
	$(PY) tools/binder_check.py

clean:
	rm -rf _build
