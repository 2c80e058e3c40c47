# vpsim — build, test, run.
#
#   make               release build -> build/vpsim
#   make debug         -O0 -g build  -> build/debug/vpsim
#   make asan          ASan + UBSan  -> build/asan/vpsim
#   make check         what CI runs: make test, the C suite under ASan/UBSan/LSan, a fuzz smoke per harness
#   make test          every test that needs no GPU: the Criterion suite (test-unit), the Python tests
#                      (test-py), the docs' examples and modelled samples against the binary (test-docs)
#   make docs          rewrite the example outputs of README.md and docs/ from what the binary prints
#   make samples       rewrite the modelled samples of traces/samples
#   make report        one-page Markdown + HTML report with plots from REPORT_IN (default traces/samples)
#                      into REPORT_OUT (default build/report); needs no GPU and no build
#   make test-gpu      tests that need a CUDA GPU (run on the GPU machine)
#   make run           the main job on the embedded default scenario
#   make bench         benchmarks (speed goals live here, not in tests)
#   make config-reference   regenerate docs/config-reference.md from the schema tables
#   make fuzz          libFuzzer harnesses (clang) -> build/fuzz/; make fuzz-smoke runs each FUZZ_SECONDS (60)
#
# Knobs: CUDA_HOME (default /usr/local/cuda), CUDA=0 to build without CUDA (CPU device only),
#        CUDA_ARCHS (default "90a 120": 90a carries the wgmma attention kernel), V=1 for full command lines.

SHELL := /bin/bash
.DEFAULT_GOAL := all

VARIANT ?= release
CUDA_HOME ?= /usr/local/cuda
CUDA ?= 1
CUDA_ARCHS ?= 90a 120

ifeq ($(VARIANT),release)
  OUT := build
  OPT := -O2 -DNDEBUG
else ifeq ($(VARIANT),debug)
  OUT := build/debug
  OPT := -O0 -g3
else ifeq ($(VARIANT),asan)
  OUT := build/asan
  OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
else
  $(error VARIANT must be release, debug or asan (got '$(VARIANT)'))
endif
# Objects of CUDA=0 builds live apart from CUDA ones (never a mix in one library), and the binaries
# depend on a stamp holding the CUDA setting, so switching it relinks them (build/vpsim of `make CUDA=0`
# after a CUDA build links no CUDA library).
OBJ := $(OUT)/obj$(if $(filter 1,$(CUDA)),,-nocuda)
CUDA_STAMP := $(OUT)/cuda-setting

Q := $(if $(filter 1,$(V)),,@)

# ---------------------------------------------------------------- dependencies
# Each check names the package that provides it; `make deps-check` prints them all.
MPICC := $(shell command -v mpicc 2>/dev/null)
NVCC := $(shell command -v $(CUDA_HOME)/bin/nvcc 2>/dev/null || command -v nvcc 2>/dev/null)
YAML_H := $(firstword $(wildcard /usr/include/yaml.h /usr/local/include/yaml.h))
YAML_A := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libyaml.a /usr/lib/aarch64-linux-gnu/libyaml.a /usr/local/lib/libyaml.a))
CRITERION_H := $(firstword $(wildcard /usr/include/criterion/criterion.h /usr/local/include/criterion/criterion.h))
NCCL_H := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
ZLIB_H := $(firstword $(wildcard /usr/include/zlib.h /usr/local/include/zlib.h))
ZLIB_A := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libz.a /usr/lib/aarch64-linux-gnu/libz.a /usr/local/lib/libz.a))
OPENBLAS_A := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libopenblas.a /usr/lib/aarch64-linux-gnu/libopenblas.a))
CBLAS_H := $(firstword $(wildcard /usr/include/x86_64-linux-gnu/cblas.h /usr/include/aarch64-linux-gnu/cblas.h /usr/include/cblas.h))

missing :=
ifeq ($(MPICC),)
  missing += "Open MPI (mpicc): apt-get install -y libopenmpi-dev openmpi-bin"
endif
ifeq ($(YAML_H),)
  missing += "libyaml headers: apt-get install -y libyaml-dev"
endif
ifeq ($(ZLIB_H),)
  missing += "zlib headers (gzip traces): apt-get install -y zlib1g-dev"
endif
ifeq ($(CUDA),1)
  ifeq ($(NVCC),)
    missing += "CUDA toolkit (nvcc) under CUDA_HOME=$(CUDA_HOME): install the CUDA toolkit, or build with CUDA=0"
  endif
  ifeq ($(NCCL_H),)
    missing += "NCCL (nccl.h): install libnccl-dev, or build with CUDA=0"
  endif
endif

# ---------------------------------------------------------------- flags
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
        -Wcast-align -Wpointer-arith -Wvla -Wundef -Werror=implicit-function-declaration
CFLAGS_BASE := -std=c11 $(OPT) $(WARN) -MMD -MP -D_GNU_SOURCE
MPI_CFLAGS := $(if $(MPICC),$(shell $(MPICC) --showme:compile),)
MPI_LIBS := $(if $(MPICC),$(shell $(MPICC) --showme:link),)
CFLAGS := $(CFLAGS_BASE) $(MPI_CFLAGS) -DVPSIM_HAVE_CUDA=$(CUDA) $(if $(filter 1,$(CUDA)),-isystem $(CUDA_HOME)/include,)
LDFLAGS := $(filter -fsanitize=%,$(OPT))
# libyaml and zlib are linked statically: the GPU machine has no libyaml (and need not have zlib's headers).
LIBS := $(if $(YAML_A),$(YAML_A),-lyaml) $(if $(ZLIB_A),$(ZLIB_A),-lz) $(MPI_LIBS) -lm -lpthread -ldl

NVCC_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
NVCCFLAGS := -std=c++17 -O3 $(NVCC_GENCODE) -Xcompiler -Wall,-Wextra -MMD -MP -lineinfo \
             $(if $(filter 90a,$(CUDA_ARCHS)),-DVP_ATTN_SM90A=1,)
ifneq ($(VARIANT),release)
  NVCCFLAGS += -g
endif
ifeq ($(CUDA),1)
  LIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcublas -lnccl -lcudart -lstdc++
endif

# ---------------------------------------------------------------- sources
# Host C files that call CUDA, cuBLAS or NCCL; left out of CUDA=0 builds (exec_devices.c and comm_backends.c decide).
CUDA_HOST_SRCS := sim/exec/dev_cuda.c sim/exec/dev_cuda_facts.c sim/exec/exec_links_cuda.c sim/comm/comm_nccl.c sim/comm/comm_nccl_symm.c \
                  sim/comm/comm_custom.c sim/comm/comm_peers.c sim/comm/comm_sysmem.c
HOST_SRCS := $(sort $(wildcard sim/*/*.c))
ifneq ($(CUDA),1)
  HOST_SRCS := $(filter-out $(CUDA_HOST_SRCS),$(HOST_SRCS))
endif
MAIN_SRC := sim/cli/main.c
LIB_SRCS := $(filter-out $(MAIN_SRC),$(HOST_SRCS))
CU_SRCS := $(if $(filter 1,$(CUDA)),$(sort $(wildcard kernels/*.cu)),)
LIB_OBJS := $(LIB_SRCS:%.c=$(OBJ)/%.o) $(CU_SRCS:%.cu=$(OBJ)/%.cu.o)
MAIN_OBJ := $(MAIN_SRC:%.c=$(OBJ)/%.o)
LIBVPSIM := $(OBJ)/libvpsim.a
BIN := $(OUT)/vpsim

TEST_SRCS := $(sort $(wildcard tests/unit/*.c))
TEST_OBJS := $(TEST_SRCS:%.c=$(OBJ)/%.o)
TEST_BIN := $(OUT)/vpsim-tests

PHONY_TESTS := build-tests test-unit test-py test-docs test-loops schemas schemas-check config-reference-check test-extend docs docs-check samples samples-check
.PHONY: FORCE deps all debug asan test check test-gpu $(PHONY_TESTS) run bench clean deps-check config-reference report fuzz fuzz-smoke

all: deps-check $(BIN)

debug:
	$(MAKE) VARIANT=debug all
asan:
	$(MAKE) VARIANT=asan all

# Installs the apt packages the build and tests need (sudo when not root).
deps:
	bash .ci/install-deps.sh

deps-check:
ifneq ($(strip $(missing)),)
	@echo "vpsim: missing build dependencies:" >&2
	@for m in $(missing); do echo "  - $$m" >&2; done
	@exit 1
endif

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)gcc $(CFLAGS) -c $< -o $@

$(OBJ)/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(LIBVPSIM): $(LIB_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# Rewritten only when the setting differs from the last build's, so an unchanged setting relinks nothing.
$(CUDA_STAMP): FORCE
	@mkdir -p $(dir $@)
	@[ "$$(cat $@ 2>/dev/null)" = "$(CUDA)" ] || echo "$(CUDA)" > $@
FORCE:

# The commit the binary was built from, for `vpsim --version` (a GPU call's copy of the tree has no
# history, so its own git cannot say); rewritten only when it changes, so main.o rebuilds only then.
GIT_STAMP := $(OUT)/git-describe
GIT_DESCRIBE := $(shell git -C $(CURDIR) describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
$(GIT_STAMP): FORCE
	@mkdir -p $(dir $@)
	@[ "$$(cat $@ 2>/dev/null)" = "$(GIT_DESCRIBE)" ] || echo "$(GIT_DESCRIBE)" > $@
$(MAIN_OBJ): $(GIT_STAMP)
$(MAIN_OBJ): CFLAGS += -DVPSIM_GIT='"$(GIT_DESCRIBE)"'

$(BIN): $(MAIN_OBJ) $(LIBVPSIM) $(CUDA_STAMP)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)gcc $(LDFLAGS) $(filter-out $(CUDA_STAMP),$^) $(LIBS) -o $@

# ---------------------------------------------------------------- tests
$(TEST_BIN): $(TEST_OBJS) $(LIBVPSIM) $(CUDA_STAMP)
	@$(if $(CRITERION_H),,echo "vpsim: tests need Criterion: apt-get install -y libcriterion-dev" >&2; exit 1)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)gcc $(LDFLAGS) $(filter-out $(CUDA_STAMP),$^) -lcriterion $(LIBS) -o $@

# Tests find the binary and the repo through these (tests/unit/test_helpers.h).
TEST_ENV := VPSIM_BIN=$(abspath $(BIN)) VPSIM_ROOT=$(CURDIR)
ifeq ($(VARIANT),asan)
  # LeakSanitizer ignores Open MPI's and Criterion's own allocations, which it recognises only with ASan's
  # full unwinder: the test runner and the processes that initialise MPI get it, the tests and the rest of
  # what they start the fast one (tests/lsan.supp says why; tests/unit/test_helpers.[ch] do the sorting).
  TEST_ENV += LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
              ASAN_OPTIONS=fast_unwind_on_malloc=0 VPSIM_MPI_ASAN_OPTIONS=fast_unwind_on_malloc=0 \
              VPSIM_WORKER_ASAN_OPTIONS=fast_unwind_on_malloc=1
endif

# `make test`: the Criterion suite, the Python tests, and the docs' examples and the modelled samples
# against what the binary prints. `make test VARIANT=asan` runs only the Criterion suite: the sanitizers
# see C, not Python or Markdown.
test: test-unit $(if $(filter asan,$(VARIANT)),,test-py test-docs test-loops)

build-tests: all $(TEST_BIN)
# Tests run in parallel; many wait on processes (mpirun, watchdogs), so make check (scripts/check.sh) runs
# both passes with one job more than its 2 cores.
TEST_JOBS ?= 2
ifeq ($(VARIANT),asan)
# Criterion passes a test whose worker reports a leak at exit, or a UBSan error it recovers from (the
# report comes after the result): the suite's output is kept, and any such report fails the target.
TEST_LOG := $(OUT)/test-unit.log
test-unit: all $(TEST_BIN)
	set -o pipefail; $(TEST_ENV) $(TEST_BIN) --jobs $(TEST_JOBS) $(TEST_ARGS) 2>&1 | tee $(TEST_LOG)
	@! grep -qE '^==[0-9]+==ERROR: LeakSanitizer|: runtime error: ' $(TEST_LOG) || \
	    { echo "vpsim: a sanitizer report in the test output ($(TEST_LOG)), though every test passed" >&2; exit 1; }
else
test-unit: all $(TEST_BIN)
	$(TEST_ENV) $(TEST_BIN) --jobs $(TEST_JOBS) $(TEST_ARGS)
endif

PY_TESTS := analysis/tests scripts/tests
test-py:
	$(ANALYSIS_PY) -m pytest -q -p no:cacheprovider $(PY_TESTS)

# The Markdown files whose example outputs are generated (scripts/doc_examples.py says how).
DOC_FILES := README.md $(sort $(wildcard docs/*.md))
docs: all
	$(ANALYSIS_PY) scripts/doc_examples.py --write $(DOC_FILES)
docs-check: all
	$(ANALYSIS_PY) scripts/doc_examples.py --check $(DOC_FILES)

# The modelled samples of traces/samples (the report reads them), made by the binary; the check writes
# them to a scratch folder and compares byte for byte.
SAMPLES_CHECK := build/samples-check
samples: all
	bash traces/samples/make-model-samples.sh $(BIN) >/dev/null
samples-check: all
	@rm -rf $(SAMPLES_CHECK)
	@SAMPLES_OUT=$(SAMPLES_CHECK) bash traces/samples/make-model-samples.sh $(BIN) >$(SAMPLES_CHECK).log 2>&1 || { cat $(SAMPLES_CHECK).log; exit 1; }
	@bad=0; for f in $(SAMPLES_CHECK)/*; do b=$${f##*/}; \
	    if ! cmp -s "$$f" traces/samples/$$b; then echo "samples-check: traces/samples/$$b differs from what $(BIN) writes now (make samples rewrites it)" >&2; bad=1; fi; \
	done; [ $$bad = 0 ] && echo "samples-check: $$(ls $(SAMPLES_CHECK) | wc -l) modelled samples current"

# The JSON Schemas of the records vpsim writes and reads (docs/schemas/), generated by `vpsim schema`;
# the check compares them with what the binary emits now.
SCHEMA_RECORDS := plan results bench
schemas: all
	@for r in $(SCHEMA_RECORDS); do $(BIN) schema $$r > docs/schemas/$$r.schema.json.tmp && mv docs/schemas/$$r.schema.json.tmp docs/schemas/$$r.schema.json; done
config-reference-check: all
	@$(BIN) config-reference | cmp -s - docs/config-reference.md || { echo "config-reference-check: docs/config-reference.md differs from what vpsim config-reference prints (make config-reference rewrites it)" >&2; exit 1; }
	@echo "config-reference-check: docs/config-reference.md current"
schemas-check: all
	@bad=0; for r in $(SCHEMA_RECORDS); do $(BIN) schema $$r | cmp -s - docs/schemas/$$r.schema.json || { echo "schemas-check: docs/schemas/$$r.schema.json differs from what vpsim schema $$r prints (make schemas rewrites it)" >&2; bad=1; }; done; \
	[ $$bad = 0 ] && echo "schemas-check: $(words $(SCHEMA_RECORDS)) schema(s) current"

test-docs: docs-check samples-check schemas-check config-reference-check

# No two files of sim/ call each other (scripts/file_loops.py reads the objects; the loops kept on
# purpose, with why, are in scripts/file_loops.allow).
test-loops: all
	$(ANALYSIS_PY) scripts/file_loops.py --objdir $(OBJ)

# "A new backend is one list line and one file": a copy of the tree with tests/extend/comm_dummy.c's
# line and file builds (CUDA=0) and the backend works through every command (tests/extend/new_backend.sh).
test-extend:
	bash tests/extend/new_backend.sh

# CI's command (.ci/run, README): the suite, the Python and docs checks, the suite under the sanitizers,
# every fuzz harness briefly; each stage announced with its progress and duration (scripts/check.sh).
NPROC := $(shell nproc 2>/dev/null || echo 2)
# make check's fuzz smoke: every harness this many seconds at once (`make fuzz-smoke` alone: FUZZ_SECONDS).
CHECK_FUZZ_SECONDS ?= 30
check:
	NPROC=$(NPROC) FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS) bash scripts/check.sh

# Kernel tests and benchmarks (tests/gpu/*.c against libvpsim.a); built here, run on a GPU machine.
KTEST_SRCS := $(sort $(wildcard tests/gpu/*.c))
KTEST_OBJS := $(KTEST_SRCS:%.c=$(OBJ)/%.o)
KTEST_BIN := $(OUT)/vpsim-kernel-tests
$(KTEST_OBJS): CFLAGS += -isystem $(CUDA_HOME)/include

$(KTEST_BIN): $(KTEST_OBJS) $(LIBVPSIM)
	@$(if $(filter 1,$(CUDA)),,echo "vpsim: the kernel tests need CUDA (build without CUDA=0)" >&2; exit 1)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)gcc $(LDFLAGS) $^ -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++ -lm -o $@

# CI has no GPU, but building the GPU tests there catches a kernel-test build break.
test-unit build-tests: $(if $(filter 1,$(CUDA)),$(KTEST_BIN))

# Kernels, executor steps, then tests/gpu/run_comm_tests.sh as one section (quick list; GPU_TEST_COMM=0
# leaves it out); one "N passed, M failed" line for all.
test-gpu: all $(KTEST_BIN)
	VPSIM=$(BIN) VPSIM_KERNEL_TESTS=$(KTEST_BIN) bash tests/gpu/run_gpu_tests.sh

run: all
	VPSIM=$(BIN) bash scripts/run_default.sh

# analysis/ runs on Debian's Python, which has python3-matplotlib, -numpy and -pytest (.ci/install-deps.sh).
ANALYSIS_PY ?= /usr/bin/python3
REPORT_IN ?= traces/samples
REPORT_OUT ?= build/report
report:
	$(ANALYSIS_PY) analysis/make_report.py $(REPORT_IN) --out $(REPORT_OUT)

bench: all
	VPSIM=$(BIN) bash bench/run_bench.sh

config-reference: all
	$(BIN) config-reference > docs/config-reference.md.tmp && mv docs/config-reference.md.tmp docs/config-reference.md

# ---------------------------------------------------------------- fuzzing
# libFuzzer harnesses (tests/fuzz/fuzz_*.c) against the host library built by clang with ASan and UBSan
# (no CUDA, so they build and run anywhere). `make fuzz` builds them, `make fuzz-smoke` runs every
# harness FUZZ_SECONDS (default 60) at once, each on a scratch copy of its seed corpus
# (tests/fuzz/corpus/NAME/). A crash or leak fails the target and leaves the input in build/fuzz/.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_OUT := build/fuzz
FUZZ_CFLAGS := -std=c11 -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
               $(WARN) -Wno-format-nonliteral -Wno-cast-align -MMD -MP -D_GNU_SOURCE $(MPI_CFLAGS) -DVPSIM_HAVE_CUDA=0 -DFUZZ_ROOT='"$(CURDIR)"'
FUZZ_LIB_OBJS := $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(filter-out $(MAIN_SRC) $(CUDA_HOST_SRCS),$(HOST_SRCS)))
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_util.c,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_OUT)/fuzz_%)
FUZZ_LIBS := $(if $(YAML_A),$(YAML_A),-lyaml) $(if $(ZLIB_A),$(ZLIB_A),-lz) $(MPI_LIBS) -lm -lpthread -ldl
FUZZ_OBJS := $(FUZZ_LIB_OBJS) $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(wildcard tests/fuzz/*.c))
.SECONDARY: $(FUZZ_OBJS)

$(FUZZ_OUT)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_OUT)/fuzz_%: $(FUZZ_OUT)/obj/tests/fuzz/fuzz_%.o $(FUZZ_OUT)/obj/tests/fuzz/fuzz_util.o $(FUZZ_LIB_OBJS)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $^ $(FUZZ_LIBS) -o $@

fuzz: deps-check $(FUZZ_BINS)

# Leaks are reported as crashes (libFuzzer's -detect_leaks); stdout and stderr of the code under test
# are closed (-close_fd_mask=3) while libFuzzer's own report still reaches the terminal.
FUZZ_RUN_ARGS := -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 -close_fd_mask=3 -print_final_stats=1
fuzz-smoke: fuzz
	@mkdir -p $(FUZZ_OUT)/logs
	@pids=(); for n in $(FUZZ_NAMES); do \
	    mkdir -p $(FUZZ_OUT)/work/$$n $(FUZZ_OUT)/artifacts/$$n; \
	    $(FUZZ_OUT)/fuzz_$$n $(FUZZ_RUN_ARGS) -artifact_prefix=$(FUZZ_OUT)/artifacts/$$n/ \
	        $(FUZZ_OUT)/work/$$n tests/fuzz/corpus/$$n > $(FUZZ_OUT)/logs/$$n.log 2>&1 & pids+=($$!); \
	done; fail=0; i=0; for n in $(FUZZ_NAMES); do \
	    if wait $${pids[$$i]}; then \
	        echo "fuzz $$n: ok, $$(grep -o 'stat::number_of_executed_units: *[0-9]*' $(FUZZ_OUT)/logs/$$n.log | grep -o '[0-9]*$$') runs in $(FUZZ_SECONDS) s"; \
	    else echo "fuzz $$n: FAILED (log: $(FUZZ_OUT)/logs/$$n.log)"; tail -40 $(FUZZ_OUT)/logs/$$n.log; fail=1; fi; \
	    i=$$((i+1)); done; exit $$fail

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
