# Tests (Criterion) and benchmarks. Each tests/test_*.c is one test binary,
# linked with the references, the test-only kernels (tests/specs, emitted
# into a self-registering table) and libubgen.a.

TEST_SRCS  := $(wildcard tests/test_*.c)
TEST_BINS  := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_SPECS := $(wildcard tests/specs/*)
TKLIST     := $(KBUILD)/kobj/test/objects.list
TEST_CFLAGS := $(BASE) -fopenmp -Itemplates -Iruntime/include -Iruntime -Itests \
  -DUBGEN_BIN='"$(CURDIR)/$(UBGEN)"' -DUBGEN_SRC='"$(CURDIR)"' -DUBGEN_BUILD='"$(CURDIR)/$(BUILD)"'
BENCH_SRCS := $(wildcard bench/bench_*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
BENCH_COMMON := $(filter-out $(BENCH_SRCS),$(wildcard bench/*.c))
# libraries one benchmark alone links (its baseline): BENCH_LIBS_<name>
BENCH_LIBS_bench_flce := -lopenblas

.PHONY: test-build bench-build deps-bench test-asan

ifeq ($(KBUILD),$(BUILD))
$(BUILD)/gen/test/MANIFEST: $(BOOT) $(TEST_SPECS) $(TEMPLATES)
	$(BOOT) emit --specs tests/specs --kernel guard_probe --out $(BUILD)/gen/test --registry ubg_aot_test --self-register
	@touch $@
$(TKLIST): $(BUILD)/gen/test/MANIFEST
	$(MAKE) -f mk/kernels.mk SRC=$(BUILD)/gen/test OBJ=$(BUILD)/kobj/test CC='$(CC)' KFLAGS='$(KFLAGS)'
endif
# the kernels alone (test-asan links them from the plain build)
.PHONY: kernels
kernels: $(KLIST) $(TKLIST)

# flags one test alone needs: TEST_FLAGS_<name> (after CFLAGS, so they win)
TEST_FLAGS_test_half_v16 := -march=$(MARCH) -ffp-contract=off

# command-line sources one test alone links (the library has none): TEST_SRCS_<name>
TEST_SRCS_test_tune_timing := cli/tune_timing.c

.SECONDEXPANSION:
$(BUILD)/tests/%: tests/%.c $(REF_OBJS) $(TKLIST) $(LIB_A) $(HEADERS) $$(TEST_SRCS_$$*)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(CFLAGS) $(TEST_FLAGS_$*) $< $(TEST_SRCS_$*) $(REF_OBJS) $$(cat $(TKLIST)) $(LIB_A) -lcriterion \
	  $(LDLIBS) -o $@

# A library built with UBGEN_AOT=0 (no built-in kernels) must serve every
# op through the JIT, and one without oneDNN its GEMMs on the generated
# kernels: both in one, built beside the main one, checked by its own test.
NOAOT := $(BUILD)/noaot
$(NOAOT)/lib/libubgen.a: $(SPECS) $(TEMPLATES) $(wildcard gen/*.c runtime/*.c templates/*.c) $(HEADERS)
	$(MAKE) BUILD=$(NOAOT) KBUILD=$(NOAOT) UBGEN_AOT=0 SAMPLE= ONEDNN= $(NOAOT)/lib/libubgen.a
$(BUILD)/tests/noaot_test: tests/noaot/test_noaot.c $(NOAOT)/lib/libubgen.a $(REF_OBJS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(CFLAGS) $< $(REF_OBJS) $(NOAOT)/lib/libubgen.a -lcriterion $(LDLIBS) -o $@

test-build: $(TEST_BINS) $(UBGEN) $(BUILD)/tests/noaot_test

# Criterion runs the tests of a binary in parallel (one process each), and
# mk/run-tests.sh two binaries at a time; the suites that time their tests
# or measure the resident set run alone after them.
TEST_ALONE := $(BUILD)/tests/test_tune_timing $(BUILD)/tests/test_concurrency
# the longest suites (under valgrind most of all) start first, so that the
# binaries left running side by side at the end are short ones
TEST_SLOW  := $(patsubst %,$(BUILD)/tests/test_%,flce jit_kernels rms_norm glu fused_linear_jsd poly_norm jit)
TEST_ORDER := $(TEST_SLOW) $(filter-out $(TEST_SLOW),$(TEST_BINS)) $(BUILD)/tests/noaot_test
# OMP_WAIT_POLICY=passive: with two such processes on two cores, each
# context's OpenMP threads would spin waiting for a core the other process
# holds (test_inputs took 16 s instead of 1, the suite 175 s instead of 110).
# The Python suite runs beside the C binaries, except on a sanitized library
# (ctypes cannot load it).
SANITIZED  := $(findstring -fsanitize,$(CFLAGS))
test:
	@sh mk/deps.sh test
	$(MAKE) -j$(NPROC) all test-build $(VENV_REQ)
	@export OMP_WAIT_POLICY=passive UBGEN_TEST_PYTHON=$(PYTHON); \
	  sh mk/run-tests.sh -j $(NPROC) $(if $(SANITIZED),,-c '$(MAKE) --no-print-directory test-python') \
	  $(filter-out $(TEST_ALONE),$(TEST_ORDER)) --alone $(TEST_ALONE)
	@echo "all tests passed"$(if $(SANITIZED),"; the Python suite is not run on a sanitized library")

# the Python package (tests/python) on the library just built
.PHONY: test-python
test-python: python-check $(LIB_SO)
	OMP_WAIT_POLICY=passive UBGEN_LIB=$(CURDIR)/$(LIB_SO) UBGEN_TEST_BUILD=$(BUILD) PYTHONPATH=$(CURDIR)/python \
	  $(PYTHON) -m pytest -q -p no:cacheprovider -m "not integration and not large" tests/python

# the tests marked integration: every patched Hugging Face model family
# trained against stock, and pip install into a fresh environment (a
# minute's work, kept out of make test's budget)
.PHONY: test-integration
test-integration: python-check $(LIB_SO)
	OMP_WAIT_POLICY=passive UBGEN_LIB=$(CURDIR)/$(LIB_SO) UBGEN_TEST_BUILD=$(BUILD) PYTHONPATH=$(CURDIR)/python \
	  $(PYTHON) -m pytest -q -p no:cacheprovider -m integration tests/python

# The whole suite again with AddressSanitizer and UndefinedBehaviorSanitizer,
# in its own build directory: the generator, runtime, references and tests
# instrumented, the kernels as they ship (gcc -O3, not instrumented: their
# memory is the UB arena and the tensors, which the instrumented runtime
# allocates and bounds), so the plain build's kernel objects are linked,
# not compiled again (KBUILD). Any memory error or undefined behaviour fails the
# run. handle_segv=0: the guard test's deliberate overrun must reach it as
# SIGSEGV (any other SEGV still fails its test). No detect_stack_use_after_return:
# its fake stack does not keep the 64-byte alignment of AVX-512 vector locals
# (test_half_v16 then faults on an aligned load). No LeakSanitizer:
# libcriterion's runner leaks a block itself, and a LeakSanitizer
# suppression matches any frame of the stack, so one for libcriterion would
# hide every test's leaks (all run below its main); make test-valgrind checks
# the test processes' leaks, with a suppression that matches only
# Criterion's own allocation. The ubgen command the tests run is no
# Criterion process: it runs with LeakSanitizer on (UBGEN_TEST_WRAPPER), and
# a leak fails its test.
SAN_OPTIONS := abort_on_error=1:strict_string_checks=1:handle_segv=0
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
test-asan: deps-test
	$(MAKE) -j$(NPROC) kernels
	ASAN_OPTIONS=detect_leaks=0:$(SAN_OPTIONS) UBGEN_TEST_WRAPPER='env ASAN_OPTIONS=detect_leaks=1:$(SAN_OPTIONS)' \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) BUILD=$(BUILD)/asan KBUILD=$(BUILD) CFLAGS='$(SAN_FLAGS)' test

# The whole suite under valgrind's memcheck, leaks included, in its own
# build directory. Valgrind 3.19 has no AVX-512, so everything (the kernels,
# the gcc JIT's -march) is built for x86-64-v3, the kernels at -O2 (the same
# bits as -O3, without FMA contraction or fast math, in half the compile
# time). The tests are built with -DTC_REDUCED=$(VG_SAMPLE) (a variant sweep
# takes ug_sample_mark's share: every 16th variant plus one of each kind; shapes of
# more than 2^20 elements are left out), and only that share of the kernels
# is built in (SAMPLE: building them all took a quarter of the stage; a
# variant a test calls outside it goes through the JIT), TC_TIME_SCALE=40
# (their timeouts) and TC_VALGRIND (what a memory checker changes: freed
# memory stays resident). Valgrind follows the test processes Criterion
# starts; the shell, timeout and the compilers the gcc JIT runs are not
# traced. A memory error or a
# definite or indirect leak makes its process exit 99, which fails its test
# (or the run); every log is kept in $(VG_LOGS), and the ones with an error
# are printed. tests/valgrind.supp: what is not ubgen's. Nor is the ubgen
# command that test_cli and test_bad_specs run traced (it took 7 of the
# stage's 25 minutes): make test-asan checks it, leaks included; and
# test_cli is not run here at all (VG_SKIP): it is that command's test, and
# under valgrind only its own harness was checked, in 60 s. Nor is
# oneDNN: its JIT kernels read up to 32 bytes past buffers it allocated
# itself (valgrind's invalid reads, from code with no symbols to suppress
# by), so this build is without it (ONEDNN=) and its tests skip, and
# make test-asan checks runtime/gemm_onednn.c (ASan cannot see into the
# uninstrumented libdnnl).
VG_BUILD := $(BUILD)/valgrind
VG_SAMPLE := 16
VG_LOGS  := $(VG_BUILD)/logs
VG_SKIP  := $(BUILD)/tests/test_cli
VG_OPTS  := --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect --trace-children=yes --log-file=$(CURDIR)/$(VG_LOGS)/%p.log \
  --trace-children-skip=*/sh,*/dash,*/bash,*/timeout,*/rm,*/cc,*/gcc*,*/cc1,*/as,*/ld,*/ld.*,*/collect2 \
  --suppressions=$(CURDIR)/tests/valgrind.supp
VG_ERRORS := grep -lE 'ERROR SUMMARY: [1-9]|Invalid (read|write|free)|uninitialised|Mismatched free|Syscall param' \
  $(VG_LOGS)/*.log
.PHONY: test-valgrind deps-valgrind
deps-valgrind:
	@sh mk/deps.sh valgrind
test-valgrind: deps-valgrind
	$(MAKE) -j$(NPROC) BUILD=$(VG_BUILD) MARCH=x86-64-v3 KOPT=-O2 ONEDNN= SAMPLE=$(VG_SAMPLE) \
	  CFLAGS='-O2 -g -DTC_VALGRIND -DTC_REDUCED=$(VG_SAMPLE) -DTC_TIME_SCALE=40' all test-build
	@rm -rf $(VG_LOGS) && mkdir -p $(VG_LOGS)
	@export OMP_WAIT_POLICY=passive; \
	sh mk/run-tests.sh -j $(NPROC) -w "valgrind $(VG_OPTS)" \
	  $(patsubst $(BUILD)/%,$(VG_BUILD)/%,$(filter-out $(VG_SKIP),$(TEST_ORDER))) \
	  || { $(VG_ERRORS) | xargs -r cat; exit 1; }
	@bad=$$($(VG_ERRORS)); if [ -n "$$bad" ]; then cat $$bad; exit 1; fi
	@echo "valgrind: $$(ls $(VG_LOGS) | wc -l) processes, no memory error or leak"

$(BUILD)/bench/%: bench/%.c $(BENCH_COMMON) $(LIB_A) $(HEADERS) $(wildcard bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) -ffp-contract=off -fopenmp -Itemplates -Iruntime/include -Ibench \
	  $< $(BENCH_COMMON) $(LIB_A) $(LDLIBS) $(BENCH_LIBS_$*) -o $@

# ubgen.torch against PyTorch eager (bench/python): JSON and PNG plots in
# $(BUILD)/bench/python; BENCH_PY_ARGS=--quick for one shape per op
.PHONY: bench-python
bench-python: deps-bench python-check $(LIB_SO)
	@mkdir -p $(BUILD)/bench/python
	UBGEN_LIB=$(CURDIR)/$(LIB_SO) $(PYTHON) bench/python/bench_ops.py --out $(BUILD)/bench/python/bench_torch.json \
	  $(BENCH_PY_ARGS)
	UBGEN_LIB=$(CURDIR)/$(LIB_SO) $(PYTHON) bench/python/bench_flce.py --out $(BUILD)/bench/python/bench_flce.json \
	  $(BENCH_PY_ARGS)
	$(PYTHON) bench/python/plot.py $(BUILD)/bench/python/bench_torch.json $(BUILD)/bench/python
	$(PYTHON) bench/python/plot.py $(BUILD)/bench/python/bench_flce.json $(BUILD)/bench/python

# each patched model family's training step against stock (minutes)
.PHONY: bench-models
bench-models: deps-bench python-check $(LIB_SO)
	@mkdir -p $(BUILD)/bench/python
	UBGEN_LIB=$(CURDIR)/$(LIB_SO) $(PYTHON) bench/python/bench_models.py --out $(BUILD)/bench/python/bench_models.json \
	  --plot $(BUILD)/bench/python $(BENCH_MODELS_ARGS)

deps-bench:
	@sh mk/deps.sh bench
	@$(if $(VENV_REQ),sh mk/venv.sh $(VENV))
bench-build: $(BENCH_BINS)
bench: deps-bench
	$(MAKE) bench-build
	@for b in $(BENCH_BINS); do $$b --out $(BUILD)/bench/$$(basename $$b).json; done

# The library's sources and a sample of the kernels with a second compiler
# (clang from Debian: deps-fuzz installs it), so that a gcc-only construct
# fails here (mk/second-compiler.sh)
CC2 ?= clang
.PHONY: test-cc2
test-cc2: deps-fuzz $(KLIST)
	@sh mk/second-compiler.sh $(CC2) $(BUILD)/gen/main $(MARCH)
