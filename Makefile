# One entry point for setup, tests and the demo. Every target creates/uses .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv test test-fast test-flink lint format java demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -e ".[dev,flink]"
	touch $(STAMP)

## The README's test command: lint, types, the fast suite, then the Flink suite.
test: venv lint test-fast test-flink

test-fast: venv
	$(PY) -m pytest -m "not flink" -q

test-flink: venv
	$(PY) -m pytest -m flink -q

lint: venv
	$(PY) -m ruff check flink_agents tests examples benchmarks
	$(PY) -m ruff format --check flink_agents tests examples benchmarks
	$(PY) -m mypy

format: venv
	$(PY) -m ruff check --fix flink_agents tests examples benchmarks
	$(PY) -m ruff format flink_agents tests examples benchmarks

bench: venv
	$(PY) benchmarks/local_env.py

clean:
	rm -rf $(VENV) build *.egg-info

## The Java bridge jar (javac + jar, no Maven), shipped in flink_agents/runtime/java/lib/.
JAVA_JAR := flink_agents/runtime/java/lib/flink-agents-bridge.jar
JAVA_SRC := $(shell find java-bridge/src -name '*.java' 2>/dev/null)

java: $(JAVA_JAR)

$(JAVA_JAR): $(JAVA_SRC) java-bridge/build.sh | venv
	PYTHON=$(PY) java-bridge/build.sh

## The real local LLM: llama-cpp-python (the `local-llm` extra) and the verified model file.
.PHONY: model
model: venv
	@echo "Installing llama-cpp-python (local-llm extra). The first time it builds llama.cpp"
	@echo "from source: this may take ~9 minutes on 2 cores (pip caches the wheel afterwards)."
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
		$(PY) -m pip install -e ".[local-llm]"
	$(PY) -m flink_agents.integrations.chat_models.local_llama.model_store
