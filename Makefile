# One entry point for setup, tests and the demo. Every target creates/uses .venv.
#   make demo   the review-analysis agent on a local Flink MiniCluster with the offline LLM
#   make test   lint, types, the fast suite and the Flink suite (thread and process mode)
#   make test-versions FLINK_VERSION=1.20.5   every suite against another supported PyFlink
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MODEL_STAMP := $(VENV)/.local-llm
# Portable llama.cpp build (AVX2/FMA, no -march=native): same speed, runs on any x86-64 v3.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# The PyFlink of .venv: the newest supported (the flink extra allows 1.20-2.3; see
# docs/flink-versions.md). Other versions run in venvs of their own: make test-versions.
FLINK_NEWEST := 2.3.0
FLINK_VERSION ?= 1.20.5

.PHONY: venv test test-fast test-props test-flink test-flink-thread test-flink-process lint \
	format java model demo bench dist clean browser stores docs docs-serve test-versions

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -e ".[dev,flink,chroma,mem0,otel,providers,test-stores]" "apache-flink==$(FLINK_NEWEST)"
	touch $(STAMP)

## The test command (README, Getting started).
test: venv java model browser stores lint test-fast test-flink

## Headless chromium for the trace page and docs site tests (Debian's package; a no-op when
## installed, a note when it cannot be installed here: those tests then skip with that reason).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; \
	    else echo "chromium missing and not installable here: the trace page test skips"; fi; }

## redis-server for the Redis vector store's tests (Debian's package, as root; a no-op when
## installed, a note when it cannot be installed: those tests then skip with that reason).
## The other stores' tests need no system package: Qdrant and Milvus Lite are embedded, the
## PostgreSQL with pgvector comes with the test-stores extra, Elasticsearch/OpenSearch are a
## stand-in (docs/providers.md).
stores:
	@command -v redis-server >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	        redis-server >/dev/null; \
	    else echo "redis-server missing and not installable here: the Redis store tests skip"; fi; }

## The fast suite in FAST_WORKERS processes (pytest-xdist): most of its time is waiting on
## servers, deadlines and subprocesses, so 3 workers on 2 cores finish it in about half the
## time of one. FAST_WORKERS=0 runs it in this process.
FAST_WORKERS ?= 3
test-fast: venv java
	$(PY) -m pytest -m "not flink" -q -n $(FAST_WORKERS)

## The per-key protocol's property tests and the secret byte scan's with a long budget (the
## fast suite runs 200 / 400 examples): PROPS_EXAMPLES random examples (about 25 ms each here),
## with hypothesis' statistics (examples tried, how often each transition was reached); no
## pytest-timeout (the suite's 600 s would cut a long budget).
PROPS_EXAMPLES ?= 20000
test-props: venv
	FLINK_AGENTS_PROPS=long FLINK_AGENTS_PROPS_EXAMPLES=$(PROPS_EXAMPLES) $(PY) -m pytest \
	  tests/runtime/test_sequencing_props.py \
	  tests/test_secrets.py::test_the_byte_scan_never_misses_what_the_walk_masks \
	  -q -p no:randomly --timeout=0 \
	  --hypothesis-show-statistics

## Flink tests run in both python.execution-mode values (thread is the default).
test-flink: test-flink-thread test-flink-process

test-flink-thread: venv java
	FLINK_AGENTS_TEST_MODE=thread $(PY) -m pytest -m flink -q

# The operator's own suite again in process mode (examples, Java bridge and cluster tests are
# mode-independent or thread-only and run once above).
test-flink-process: venv java
	FLINK_AGENTS_TEST_MODE=process $(PY) -m pytest tests/flink -m flink -q

# mkdocs-material's banner about its successor, printed on every build: not a problem of ours.
export NO_MKDOCS_2_WARNING := 1

LINTED := flink_agents tests examples benchmarks scripts docs/gen_reference.py setup.py \
	java-bridge/build.py

## Lint, types, the import contracts, and the docs: the generated reference pages must be up
## to date and the site must build with `mkdocs build --strict` (broken links and anchors
## fail it; the docs part takes ~10 s).
lint: venv
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)
	$(PY) -m mypy
	$(VENV)/bin/lint-imports
	$(PY) docs/gen_reference.py --check
	$(PY) -m mkdocs build --strict --quiet --site-dir build/site

format: venv
	$(PY) -m ruff check --fix $(LINTED)
	$(PY) -m ruff format $(LINTED)

## The documentation site: reference pages written from the code, then the site in site/
## (open site/index.html, or `make docs-serve` for http://127.0.0.1:8000 with live reload).
docs: venv
	$(PY) docs/gen_reference.py
	$(PY) -m mkdocs build --strict --site-dir site

docs-serve: venv
	$(PY) docs/gen_reference.py
	$(PY) -m mkdocs serve --dev-addr 127.0.0.1:8000

## Every suite (fast, Flink thread, Flink process; on 1.20 also the upgrade to the newest)
## against one supported PyFlink, in a venv of its own (.versions/flink-$(FLINK_VERSION))
## made from the built wheel: tests/versions/run.py. CI runs it for each supported version.
test-versions: venv
	$(PY) tests/versions/run.py --flink $(FLINK_VERSION) --reuse

## The Java bridge jar (javac, no Maven), shipped in flink_agents/runtime/java/lib/. The
## editable install of `make venv` builds it too (setup.py); this target builds it again
## after a source change, with warnings as errors and the bridge's self test.
JAVA_JAR := flink_agents/runtime/java/lib/flink-agents-bridge.jar
JAVA_STAMP := java-bridge/build/.checked
JAVA_SRC := $(shell find java-bridge/src -name '*.java' 2>/dev/null)

java: $(JAVA_STAMP)

$(JAVA_STAMP): $(JAVA_SRC) java-bridge/build.py | venv
	$(PY) java-bridge/build.py --strict --self-test
	mkdir -p $(dir $(JAVA_STAMP)) && touch $(JAVA_STAMP)

## The real local LLM: llama-cpp-python (the `local-llm` extra) and the verified model file.
model: $(MODEL_STAMP)
	$(PY) -m flink_agents.integrations.chat_models.local_llama.model_store

$(MODEL_STAMP): $(STAMP)
	@echo "Installing llama-cpp-python (local-llm extra). The first time it builds llama.cpp"
	@echo "from source: about 9 minutes on 2 cores (pip caches the wheel for later runs)."
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -e ".[local-llm]"
	touch $(MODEL_STAMP)

## The demo: review analysis with the offline LLM on a local Flink MiniCluster.
demo: venv java model
	$(PY) -m examples.review_analysis_demo

bench: venv java
	$(PY) -m benchmarks.local_env
	$(PY) -m benchmarks.flink_host
	$(PY) -m benchmarks.java_bridge

## The wheel and sdist (the wheel compiles the bridge jar in; needs a JDK 11+).
dist: venv
	$(PY) -m build

clean:
	rm -rf $(VENV) build dist site *.egg-info .versions
