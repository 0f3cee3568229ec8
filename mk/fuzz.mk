# libFuzzer targets (fuzz/): the expression evaluator, the tuning DB reader, the spec loader (with
# variant enumeration and the default strategy) and the template renderer,
# built with clang's libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# (Debian: clang, libclang-rt-14-dev).
#   make fuzz FUZZ_SECONDS=600      each target for that long, one after another;
#                                   a crash stops make and leaves the input in
#                                   build/fuzz/crash-<target>-*
#   make fuzz-regress               every seed and every kept crash input
#                                   (tests/fuzz/<target>/) through its target once
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_TARGETS := expr spec render tunedb
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_FLAGS   := -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Igen
FUZZ_SRCS    := $(GEN_LIB:%=gen/%.c)

.PHONY: fuzz fuzz-build fuzz-regress deps-fuzz

deps-fuzz:
	@sh mk/deps.sh fuzz

$(BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c $(FUZZ_SRCS) $(wildcard gen/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) $< $(FUZZ_SRCS) -ljansson -lm -o $@

fuzz-build: deps-fuzz $(FUZZ_BINS)

fuzz: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD)/fuzz/corpus-$$t; \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  $(BUILD)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/fuzz/crash-$$t- $(BUILD)/fuzz/corpus-$$t tests/fuzz/$$t; \
	done

fuzz-regress: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz_$$t over tests/fuzz/$$t"; \
	  $(BUILD)/fuzz/fuzz_$$t -runs=0 -timeout=10 tests/fuzz/$$t; \
	done
