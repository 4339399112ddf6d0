# Attention, Executed - the commands a reader, an instructor and a maintainer need.
#
#   make book      build the website from the stored outputs; prints index.html's path
#   make test      lint, unit tests, nbval (strict), book build (-W), browser check
#   make lab       JupyterLab on the chapters
#   make outputs   re-execute every notebook in place (after editing a chapter)
#   make student   workshop copies of the notebooks, without solutions or outputs
#
# Every target first creates .venv (if missing) and installs the pinned requirements.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))
BOOK_FLAGS := -W -n --keep-going
export PYTHONHASHSEED := 0

.PHONY: all book book-all test lint unit nbval site-check screenshots lab outputs student clean

all: test

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first and exactly as pinned, so that nothing pulls another build of it
	$(BIN)/python -m pip install --disable-pip-version-check -q \
		"$$(grep -E '^torch==' requirements.txt)"
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	# build matplotlib's font cache now, not inside a notebook's first figure
	$(BIN)/python -c "import matplotlib.pyplot"
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . $(BOOK_FLAGS)
	@echo "The website is at $(CURDIR)/_build/html/index.html"

# A full rebuild, so that warnings of unchanged pages are reported too.
book-all: $(STAMP)
	$(BIN)/jupyter-book build . --all $(BOOK_FLAGS)
	@echo "The website is at $(CURDIR)/_build/html/index.html"

lint: $(STAMP)
	$(BIN)/ruff check attn_course tests tools chapters
	$(BIN)/ruff format --check attn_course tests tools

unit: $(STAMP)
	$(BIN)/pytest

nbval: $(STAMP)
	$(BIN)/pytest --nbval --nbval-current-env \
		--nbval-sanitize-with tests/sanitize.cfg $(NOTEBOOKS)

# Without the nbval plugin, which the browser check does not use, pytest starts
# without importing nbformat and jsonschema (over a second).
# The browser check plus a full-page picture of every page in _build/screenshots/.
screenshots: $(STAMP)
	SCREENSHOTS=1 $(BIN)/pytest -p no:nbval -m site tests/site

site-check: $(STAMP)
	$(BIN)/pytest -p no:nbval -m site tests/site

test: lint unit nbval book-all site-check

lab: $(STAMP)
	$(BIN)/jupyter lab chapters

outputs: $(STAMP)
	$(BIN)/python -m tools.notebooks execute $(NOTEBOOKS)

student: $(STAMP)
	$(BIN)/python -m tools.notebooks student _build/student

clean:
	rm -rf _build
