# Tests (Criterion) and benchmarks. Each tests/test_*.c is one test binary,
# linked with the references, the test-only kernels (tests/specs, emitted
# into a self-registering table) and libubgen.a.

TEST_SRCS  := $(wildcard tests/test_*.c)
TEST_BINS  := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
TEST_SPECS := $(wildcard tests/specs/*)
TKLIST     := $(BUILD)/kobj/test/objects.list
TEST_CFLAGS := $(BASE) -fopenmp -Itemplates -Iruntime/include -Iruntime -Itests \
  -DUBGEN_BIN='"$(CURDIR)/$(UBGEN)"' -DUBGEN_SRC='"$(CURDIR)"' -DUBGEN_BUILD='"$(CURDIR)/$(BUILD)"'
BENCH_SRCS := $(wildcard bench/bench_*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
BENCH_COMMON := $(filter-out $(BENCH_SRCS),$(wildcard bench/*.c))
# libraries one benchmark alone links (its baseline): BENCH_LIBS_<name>
BENCH_LIBS_bench_flce := -lopenblas

.PHONY: test-build bench-build deps-bench test-asan

$(BUILD)/gen/test/MANIFEST: $(BOOT) $(TEST_SPECS) $(TEMPLATES)
	$(BOOT) emit --specs tests/specs --kernel guard_probe --out $(BUILD)/gen/test --registry ubg_aot_test --self-register
	@touch $@
$(TKLIST): $(BUILD)/gen/test/MANIFEST
	$(MAKE) -f mk/kernels.mk SRC=$(BUILD)/gen/test OBJ=$(BUILD)/kobj/test CC='$(CC)' KFLAGS='$(KFLAGS)'

# flags one test alone needs: TEST_FLAGS_<name> (after CFLAGS, so they win)
TEST_FLAGS_test_half_v16 := -march=$(MARCH) -ffp-contract=off

$(BUILD)/tests/%: tests/%.c $(REF_OBJS) $(TKLIST) $(LIB_A) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(CFLAGS) $(TEST_FLAGS_$*) $< $(REF_OBJS) $$(cat $(TKLIST)) $(LIB_A) -lcriterion $(LDLIBS) -o $@

# A library built with UBGEN_AOT=0 (no built-in kernels) must serve every
# op through the JIT: built beside the main one, checked by its own test.
NOAOT := $(BUILD)/noaot
$(NOAOT)/lib/libubgen.a: $(SPECS) $(TEMPLATES) $(wildcard gen/*.c runtime/*.c) $(HEADERS)
	$(MAKE) BUILD=$(NOAOT) UBGEN_AOT=0 $(NOAOT)/lib/libubgen.a
$(BUILD)/tests/noaot_test: tests/noaot/test_noaot.c $(NOAOT)/lib/libubgen.a $(REF_OBJS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(CFLAGS) $< $(REF_OBJS) $(NOAOT)/lib/libubgen.a -lcriterion $(LDLIBS) -o $@

# ubg_flce's OpenBLAS GEMMs (make BLAS=openblas) tested without a second
# library: op_flce.c compiled with them, linked ahead of libubgen.a's copy
$(BUILD)/obj/runtime-blas/op_flce.o: runtime/op_flce.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(LIBFLAGS) $(CFLAGS) -DUBG_HAVE_OPENBLAS -c $< -o $@
$(BUILD)/tests/flce_openblas_test: tests/blas/test_flce_openblas.c $(BUILD)/obj/runtime-blas/op_flce.o $(REF_OBJS) \
                                   $(LIB_A) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) $(CFLAGS) $< $(BUILD)/obj/runtime-blas/op_flce.o $(REF_OBJS) $(LIB_A) -lcriterion $(LDLIBS) \
	  -lopenblas -o $@

test-build: $(TEST_BINS) $(UBGEN) $(BUILD)/tests/noaot_test $(BUILD)/tests/flce_openblas_test

# Criterion runs the tests of a binary in parallel (one process each)
test: deps-test
	$(MAKE) -j$(NPROC) all test-build
	@set -e; for t in $(TEST_BINS) $(BUILD)/tests/noaot_test $(BUILD)/tests/flce_openblas_test; do echo "== $$t"; $$t --jobs 2 --short-filename; done
	@echo "all test binaries passed"

# The whole suite again with AddressSanitizer and UndefinedBehaviorSanitizer,
# in its own build directory: the generator, runtime, references and tests
# instrumented, the kernels as they ship (gcc -O3, not instrumented: their
# memory is the UB arena and the tensors, which the instrumented runtime
# allocates and bounds). Any memory error or undefined behaviour fails the
# run. handle_segv=0: the guard test's deliberate overrun must reach it as
# SIGSEGV (any other SEGV still fails its test). No detect_stack_use_after_return:
# its fake stack does not keep the 64-byte alignment of AVX-512 vector locals
# (test_half_v16 then faults on an aligned load). Leaks: not yet (the test
# fixtures do not free their data, and libcriterion leaks by itself).
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
test-asan:
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1:handle_segv=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(MAKE) BUILD=$(BUILD)/asan CFLAGS='$(SAN_FLAGS)' test

$(BUILD)/bench/%: bench/%.c $(BENCH_COMMON) $(LIB_A) $(HEADERS) $(wildcard bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(BASE) -O3 -march=$(MARCH) -ffp-contract=off -fopenmp -Itemplates -Iruntime/include -Ibench \
	  $< $(BENCH_COMMON) $(LIB_A) $(LDLIBS) $(BENCH_LIBS_$*) -o $@

deps-bench:
	@sh mk/deps.sh bench
bench-build: $(BENCH_BINS)
bench: deps-bench
	$(MAKE) bench-build
	@for b in $(BENCH_BINS); do $$b --out $(BUILD)/bench/$$(basename $$b).json; done
