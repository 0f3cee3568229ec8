# libFuzzer targets (fuzz/): the expression evaluator, the tuning DB reader, the spec loader (with
# variant enumeration and the default strategy), the template renderer and a composite op run,
# built with clang's libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# (Debian: clang, libclang-rt-14-dev).
#   make fuzz FUZZ_SECONDS=600      each target for that long (-j2: two at a time),
#                                   then the composite target for its runs (below);
#                                   a crash stops make and leaves the input in
#                                   build/fuzz/crash-<target>-*
#   make fuzz-regress               every seed and every kept crash input
#                                   (tests/fuzz/<target>/) through its target once
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_TARGETS := expr spec render tunedb composite
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_SAN     := address,undefined -fno-sanitize-recover=all
FUZZ_FLAGS   := -g -O1 -std=c11 -D_GNU_SOURCE -Igen
# the generator library instrumented once, linked into every target
FUZZ_OBJS    := $(GEN_LIB:%=$(BUILD)/fuzz/obj/%.o)
.SECONDARY: $(FUZZ_OBJS)

.PHONY: fuzz fuzz-build fuzz-regress deps-fuzz

deps-fuzz:
	@sh mk/deps.sh fuzz

$(BUILD)/fuzz/obj/%.o: gen/%.c $(wildcard gen/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c $< -o $@
$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_OBJS) $(wildcard gen/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer,$(FUZZ_SAN) $< $(FUZZ_OBJS) -ljansson -lm -o $@

# the composite target runs its ops: the runtime instrumented too, with
# tcc for the kernels (the vector operations they call built as kernels are)
FUZZ_RT_OBJS := $(RUNTIME:%=$(BUILD)/fuzz/rt/%.o)
.SECONDARY: $(FUZZ_RT_OBJS)
$(BUILD)/fuzz/rt/%.o: runtime/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fopenmp -Iruntime/include -DUBGEN_SOURCE_DIR='"$(CURDIR)"' -DUBGEN_JIT_MARCH='"$(MARCH)"' \
	  -DUBGEN_VERSION='"$(VERSION)"' -Wno-pass-failed -fsanitize=fuzzer-no-link,$(FUZZ_SAN) -c $< -o $@
$(BUILD)/fuzz/rt/vops.o: templates/vops.c $(HEADERS)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 -O2 -march=$(MARCH) -ffp-contract=off -fno-math-errno -c $< -o $@
$(BUILD)/fuzz/fuzz_composite: fuzz/fuzz_composite.c $(FUZZ_OBJS) $(FUZZ_RT_OBJS) $(BUILD)/fuzz/rt/vops.o $(HEADERS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fopenmp -Iruntime/include -DUBGEN_SOURCE_DIR='"$(CURDIR)"' -fsanitize=fuzzer,$(FUZZ_SAN) \
	  $< $(FUZZ_OBJS) $(FUZZ_RT_OBJS) $(BUILD)/fuzz/rt/vops.o -ltcc -ljansson -ldl -lm -lpthread -o $@

fuzz-build: deps-fuzz $(FUZZ_BINS)

# each target one job: make -j2 fuzz runs two at a time (libFuzzer uses one
# core). The composite target is held to a count of inputs instead, a
# million in all by default: two processes of FUZZ_COMPOSITE_RUNS each (a
# seed apiece, one corpus), after the timed ones.
FUZZ_TIMED := $(filter-out composite,$(FUZZ_TARGETS))
FUZZ_RUNS := $(FUZZ_TIMED:%=fuzz-run-%)
FUZZ_COMPOSITE_RUNS ?= 500000
FUZZ_COMPOSITE := fuzz-run-composite-1 fuzz-run-composite-2
.PHONY: $(FUZZ_RUNS) $(FUZZ_COMPOSITE)
fuzz: $(FUZZ_RUNS) $(FUZZ_COMPOSITE)
$(FUZZ_COMPOSITE): fuzz-run-composite-%: fuzz-build | $(FUZZ_RUNS)
	@mkdir -p $(BUILD)/fuzz/corpus-composite
	@echo "== fuzz_composite ($*) for $(FUZZ_COMPOSITE_RUNS) inputs"
	@$(BUILD)/fuzz/fuzz_composite -runs=$(FUZZ_COMPOSITE_RUNS) -seed=$* -timeout=10 -rss_limit_mb=2048 \
	  -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/crash-composite- $(BUILD)/fuzz/corpus-composite \
	  tests/fuzz/composite > $(BUILD)/fuzz/log-composite-$* 2>&1 || { cat $(BUILD)/fuzz/log-composite-$*; exit 1; }
	@tail -n 12 $(BUILD)/fuzz/log-composite-$*
$(FUZZ_RUNS): fuzz-run-%: fuzz-build
	@mkdir -p $(BUILD)/fuzz/corpus-$*
	@echo "== fuzz_$* for $(FUZZ_SECONDS) s"
	@$(BUILD)/fuzz/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	  -artifact_prefix=$(BUILD)/fuzz/crash-$*- $(BUILD)/fuzz/corpus-$* tests/fuzz/$* > $(BUILD)/fuzz/log-$* 2>&1 \
	  || { cat $(BUILD)/fuzz/log-$*; exit 1; }
	@tail -n 12 $(BUILD)/fuzz/log-$*

fuzz-regress: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz_$$t over tests/fuzz/$$t"; \
	  $(BUILD)/fuzz/fuzz_$$t -runs=0 -timeout=10 tests/fuzz/$$t; \
	done
