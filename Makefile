# Attention, Executed - the commands a reader, an instructor and a maintainer need.
#
#   make book      build the website from the stored outputs; prints index.html's path
#   make pdf       the book as one PDF, _build/pdf/attention-executed.pdf, printed by
#                  headless Chromium with no network (tools/pdf.py)
#   make serve     serve the built website on http://127.0.0.1:8000 (PORT=...), where
#                  its search shows an excerpt of every page it finds
#   make test      lint, unit tests, nbval (strict, every exercise answered wrong and
#                  right), book build (-W), browser check, workshop check;
#                  on a machine that cannot reproduce the stored numbers (not x86-64
#                  with AVX2) it stops at once and says to run make test-anywhere
#   make test-anywhere  the same checks with the notebooks run but their numbers
#                  not compared, for any machine
#   make nbval-elsewhere  make nbval as another machine runs it: AVX-512 kernels
#                  and four threads asked for, four cores seen, one core to run on
#   make lab       JupyterLab on the chapters
#   make outputs   re-execute every notebook in place (after editing a chapter)
#   make bench     time plain, tiled and PyTorch's attention and measure their peak
#                  memory (Chapter 9); writes attn_course/measured/bench-cpu.json.
#                  Minutes long, not part of make test: run it on a quiet machine
#   make bench-history  Chapter 10's stored measurements: one training step of a GRU
#                  and of self-attention as T grows (history-cpu.json), additive
#                  against dot-product scores (history-scores-cpu.json), and the
#                  sentence-length experiment over three seeds, in the pinned
#                  environment (history-lengths-cpu.json), all in attn_course/measured/.
#                  About 15 minutes, not part of make test: run it on a quiet machine
#   make bench-modern  Chapter 11's stored runs of the modern block's swaps, sinks and
#                  local-global layers over three seeds, in the pinned environment
#                  (attn_course/measured/modern-cpu.json). About 10 minutes, not part
#                  of make test
#   make bench-recall  Chapter 12's associative-recall runs: six sequence mixers, each
#                  at its tuned learning rate, four numbers of pairs, three seeds, in
#                  the pinned environment (attn_course/measured/recall-cpu.json).
#                  About 30 minutes, not part of make test
#   make dist      the package's sdist and wheel in dist/, checked with twine
#   make workshop  a folder and a zip for a workshop without Wi-Fi: student notebooks,
#                  solutions, the package as a wheel, pinned requirements, a README
#
# Every target first creates .venv (if missing) and installs the pinned requirements.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard chapters/*.ipynb))
BOOK_FLAGS := -W -n --keep-going
WORKFLOWS := $(sort $(wildcard .github/workflows/*.yml))
export PYTHONHASHSEED := 0

.PHONY: all book book-all serve test test-anywhere reproducible lint unit nbval \
	nbval-lax nbval-elsewhere exercises site-check screenshots lab outputs student \
	workshop workshop-check dist bench bench-history bench-modern \
	bench-recall pdf clean

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

# Every page in one PDF, in the order of _toc.yml; make site-check checks it
# (tests/site/test_pdf.py) and builds it first where it is older than its sources.
pdf: $(STAMP)
	$(BIN)/python -m tools.pdf

# Opened from disk, the website works, but its search lists pages without an excerpt
# (browsers do not let a page read other files from disk); over HTTP it shows them.
# Only the standard library is needed, so no installation runs first. Ctrl+C stops it.
PORT ?= 8000
serve:
	@test -f _build/html/index.html || { echo "no website in _build/html: run make book first"; exit 1; }
	@echo "The website is at http://127.0.0.1:$(PORT)/ (Ctrl+C stops the server)"
	$(PYTHON) -m http.server --bind 127.0.0.1 --directory _build/html $(PORT)

# ruff, and the GitHub Actions workflows checked against the workflow schema that
# check-jsonschema ships (no network needed).
lint: $(STAMP)
	$(BIN)/ruff check attn_course tests tools chapters
	$(BIN)/ruff format --check attn_course tests tools
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows $(WORKFLOWS)
	$(BIN)/check-jsonschema --builtin-schema vendor.citation-file-format CITATION.cff

unit: $(STAMP)
	$(BIN)/python -m pytest -n 2

# Stored outputs are compared in the pinned numeric environment of
# tools/reproducible.py (see the README's "Reproducible numbers"), as they were stored;
# after each check cell, its exercise is answered wrong and right in the same kernel
# (tests/exercise_rounds.py). Two notebooks at a time, each in one process.
NBVAL := -n 2 --dist loadfile -p tests.exercise_rounds --nbval-current-env \
	--nbval-sanitize-with tests/sanitize.cfg $(NOTEBOOKS)
nbval: $(STAMP)
	$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m pytest --nbval $(NBVAL)

# Every notebook run top to bottom, its outputs not compared: for any machine.
nbval-lax: $(STAMP)
	$(BIN)/python -m pytest --nbval-lax $(NBVAL)

# What tests/elsewhere/sitecustomize.py and the variables set here ask for, the pinned
# environment must override: the stored outputs still match.
nbval-elsewhere: $(STAMP)
	ATEN_CPU_CAPABILITY=avx512 OMP_NUM_THREADS=4 MKL_CBWR=AUTO ATTN_COURSE_SEEN_CORES=4 \
		PYTHONPATH=$(CURDIR)/tests/elsewhere taskset -c 0 $(MAKE) nbval

# Every exercise answered wrong and right in its notebook, the notebooks run top to
# bottom without comparing their stored outputs (make nbval does both at once).
exercises: $(STAMP)
	$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m pytest --nbval-lax $(NBVAL)

# Without the nbval plugin, which the browser check does not use, pytest starts
# without importing nbformat and jsonschema (over a second).
# The browser check plus a full-page picture of every page in _build/screenshots/.
screenshots: $(STAMP)
	SCREENSHOTS=1 $(BIN)/pytest -p no:nbval -m site tests/site

site-check: $(STAMP)
	$(BIN)/pytest -p no:nbval -m site tests/site

# First, in one line, whether this machine can reproduce the stored numbers at all.
reproducible:
	@$(PYTHON) -m tools.reproducible check

test: reproducible lint unit nbval book-all site-check workshop-check

test-anywhere: lint unit nbval-lax book-all site-check

lab: $(STAMP)
	$(BIN)/jupyter lab chapters

outputs: $(STAMP)
	$(BIN)/python -m tools.notebooks execute $(NOTEBOOKS)

bench: $(STAMP)
	$(BIN)/python -m tools.bench

bench-history: $(STAMP)
	$(BIN)/python -m tools.bench_history
	$(BIN)/python -m tools.bench_history --part scores
	$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m tools.bench_history --part lengths
	$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m tools.bench_history --part norms

bench-modern: $(STAMP)
	$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m tools.bench_modern

bench-recall: $(STAMP)
	$(BIN)/python -m tools.reproducible run -- $(BIN)/python -m tools.bench_recall

student: $(STAMP)
	$(BIN)/python -m tools.notebooks student _build/student

# WHEELS=1 also downloads every pinned package as a wheel (run it where there is
# network), so that the folder installs with no network at all.
workshop: $(STAMP)
	$(BIN)/python -m tools.workshop _build/workshop $(if $(WHEELS),--with-wheels)

# The workshop folder installed into a fresh virtual environment from its own wheels
# only (--no-index), and every student notebook run there with the right answers in.
# The package's sdist and wheel in dist/, checked as PyPI will check them.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/python -m twine check --strict dist/*

workshop-check: $(STAMP)
	$(BIN)/pytest -p no:nbval -m workshop tests/test_workshop.py

clean:
	rm -rf _build
