# Two commands on a fresh machine:
#   make app    set up .venv and open the lesson app on the embedded default model
#   make test   set up .venv (and, as root on Debian, chromium + CJK fonts + g++) and run every test
# While working: make test-fast (no browser, no slow test) and make lint.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build that lies on these machines' disk. A GPU user can preinstall their own
# torch into .venv first; setup keeps any torch that already imports. --no-compile: no bytecode for the tens of
# thousands of installed modules nobody imports (40 s of a CI run); Python compiles each one on its first import.
TORCH ?= torch==2.13.0

.PHONY: setup app test test-fast lint browser-deps bench export model classroom

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q --no-compile "$(TORCH)"
	$(BIN)/pip install -q --no-compile -e ".[test]"
	@# One process compiles what the tests import (and pytest rewrites every test module) into the bytecode cache,
	@# before the test processes, servers and workers all start at once and each compiles the same modules again.
	-@$(BIN)/python -m pytest --collect-only -q -p no:cacheprovider >/dev/null 2>&1
	touch $@

# PORT: where the app listens (another app already on 8501: make app PORT=8502).
app: PORT ?= 8501
app: setup
	$(BIN)/streamlit run app.py --server.port $(PORT)

# A class on one machine: REPLICAS app replicas behind HAProxy (sticky websockets), clients of WORKERS engine
# workers (deploy/classroom.py; Debian: apt-get install haproxy). PORT is the proxy's.
REPLICAS ?= 2
WORKERS ?= 1
classroom: PORT ?= 8500
classroom: setup
	$(BIN)/python deploy/classroom.py --replicas $(REPLICAS) --workers $(WORKERS) --port $(PORT)

# Browser tests need Debian's chromium, CJK fonts and colour emoji (🚀 🇫🇷 in figures); never a downloaded browser.
# The "compiled" engine mode (torch.compile, Inductor) needs a C++ compiler; the slide kit's PNGs (CairoSVG) cairo.
browser-deps:
	@if { [ ! -x /usr/bin/chromium ] || [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] \
		|| ! command -v g++ >/dev/null || ! ldconfig -p 2>/dev/null | grep -q 'libcairo\.so\.2'; } \
		&& [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium fonts-noto-cjk \
		fonts-noto-color-emoji g++ libcairo2; fi

# Python's own cache of compiled modules, even where the environment turns it off (PYTHONDONTWRITEBYTECODE):
# the lanes start many Python processes that import the same modules (and pytest rewrites every test module).
export PYTHONDONTWRITEBYTECODE :=

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
# JOBS test processes (pytest-xdist; by default 3 for `make test`, whose browser and server tests spend much of
# their time waiting, and 2 for `make test-fast`), each running whole units: a test file, or a whole folder
# whose tests share one costly thing (tests/conftest.py's ONE_PROCESS_FOLDERS), handed out in the order collected
# (those folders first). JOBS=0 runs every test in pytest's own process.
PYTEST = $(BIN)/python -m pytest
define run_pytest
	@$(PYTEST) -n $(1) --dist loadfile --no-loadscope-reorder $(2) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: no tests ran"; exit 1; fi; exit $$rc
endef

# Every test: the browser lane (tests/browser/, chromium) and the slow lane too. CI runs this.
test: setup browser-deps
	$(call run_pytest,$(or $(JOBS),3),)

# The lane to run while working: no browser, nothing marked slow (what it costs: docs/testing.md).
test-fast: setup
	$(call run_pytest,$(or $(JOBS),2),-m "not browser and not slow")

# ruff, configured in pyproject.toml ([tool.ruff]).
lint: setup
	$(BIN)/ruff check .

bench: setup
	$(BIN)/python -m bench.engine_overhead
	$(BIN)/python -m bench.render
	$(BIN)/python -m bench.soak

export: setup
	$(BIN)/python -m lesson.export --out export

model: setup
	$(BIN)/python assets/default_model/train.py
