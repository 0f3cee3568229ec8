# ubgen: build, test, run, emit, install.
#   make                 build/bin/ubgen, build/lib/libubgen.a and .so (all feasible kernels)
#   make test            install missing packages (as root), build, run the test suite
#   make run             install missing packages (as root), build, tune every kernel into the DB the
#                        library reads (UBGEN_TUNING_DB, else ~/.cache/ubgen/tuning.json); SVG in build/
#   make install PREFIX=/usr/local DESTDIR=
#   make MARCH=x86-64-v3 kernels for another CPU (default: this one)
#   make UB=256KiB       the UB budget the built-in kernels are emitted for
#   make UBGEN_AOT=0     a library without built-in kernels: every variant through the JIT
#   make ONEDNN=         without oneDNN (default: with it when it links: ubg_flce's GEMMs then run on it)
#   make BUILD=build-lean TUNED=build/tuning.json
#                        a lean library: only the tuned variants and the default choices built in
#                        (ubgen emit --tuned); any other variant a call needs goes through the JIT

VERSION := 0.1.0
# the ABI's number: a program linked with -lubgen needs libubgen.so.$(ABI) at run time
ABI     := 0
SONAME  := libubgen.so.$(ABI)
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
MARCH   ?= native
UB      ?= 196608
UBGEN_AOT ?= 1
# oneDNN when a program using it compiles and links here (make test and
# make run install libdnnl-dev first, then build in a sub-make): ubg_flce's
# GEMMs by default where it is linked
ifeq ($(origin ONEDNN),undefined)
ONEDNN  := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\nint main(void) { dnnl_engine_t e; return dnnl_engine_create(&e, dnnl_cpu, 0) != dnnl_success; }\n' | \
             $(CC) -x c - -ldnnl -o /dev/null >/dev/null 2>&1 && echo onednn)
endif
TUNED   ?=
# SAMPLE=N: only ubgen emit --sample N's share of the kernels built in (make test-valgrind's build)
SAMPLE  ?=
EMIT_KERNELS := $(if $(filter 0,$(UBGEN_AOT)),--no-kernels,) $(if $(TUNED),--tuned $(TUNED)) $(if $(SAMPLE),--sample $(SAMPLE))
AOT_FLAG := $(BUILD)/aot-$(UBGEN_AOT)$(if $(TUNED),-tuned)$(if $(SAMPLE),-sample$(SAMPLE)).flag
CC      ?= gcc
# Python: the interpreter the package is tested and benchmarked on. One
# given (PYTHON=...) must import torch >= 2.1 and is used as it is; else
# make deps-test makes $(VENV) with mk/python-requirements.txt (mk/venv.sh).
VENV    ?= $(CURDIR)/.venv
PYTHON  ?= $(VENV)/bin/python
# the environment's requirements file, when PYTHON is its interpreter
VENV_REQ = $(if $(filter $(VENV)/bin/python,$(PYTHON)),$(VENV)/requirements.txt)
# where `make install` puts the ubgen package: Debian's dist-packages layout
PYVER    = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PYDIR   ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYVER)/dist-packages)
NPROC   ?= $(shell nproc 2>/dev/null || echo 2)

WARN     := -Wall -Wextra -Wshadow -Wno-unused-parameter
CFLAGS   ?= -O2 -g
BASE     := -std=c11 -D_GNU_SOURCE -fPIC $(WARN)
LIBFLAGS := $(BASE) -fvisibility=hidden -fopenmp -DUBGEN_SOURCE_DIR='"$(CURDIR)"' -DUBGEN_JIT_MARCH='"$(MARCH)"' \
            -DUBGEN_VERSION='"$(VERSION)"'
# every kernel: the flags that make gcc and tcc agree bit for bit (no FMA contraction);
# KOPT, their optimization (the valgrind build's kernels compile at -O2, twice as fast);
# -Wno-psabi: the prelude's 64-byte vector functions are static, so the ABI gcc warns of
# in builds without AVX-512 is never crossed
# KGCC, gcc's alone: no second vectorization of each vectorized loop's remainder, 15% of
# the kernels' compile time and no speed measured (build-notes.md; runtime/jit_gcc.c
# passes it too). KCC_IS_GCC is exported for mk/kernels.mk.
KOPT     ?= -O3
export KCC_IS_GCC := $(shell $(CC) -dM -E -x c /dev/null 2>/dev/null | grep -q __clang__ || echo 1)
KGCC     := $(if $(KCC_IS_GCC),--param vect-epilogues-nomask=0)
KFLAGS   := -std=c11 $(KOPT) -march=$(MARCH) -ffp-contract=off -fno-math-errno -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-function \
            -Wno-psabi $(KGCC)
LDLIBS   := -ljansson -ltcc -ldl -lm -lpthread
ifeq ($(ONEDNN),onednn)
LIBFLAGS += -DUBG_HAVE_ONEDNN
LDLIBS   += -ldnnl
else ifneq ($(ONEDNN),)
$(error ONEDNN=$(ONEDNN): onednn or empty)
endif

GEN_LIB  := diag strbuf json_text json_loc expr spec_names spec_json spec_exprs spec_sections spec_composite spec_run spec_load point ubplan variant render source emit fsutil specset bind strategy tunedb_index tunedb_read tunedb tuned
CLI      := cli suggest help isolate cmd_list cmd_plan plan_composite cmd_emit emit_tuned cmd_check cmd_tune cmd_tune_merge tune_timing tune_composite tune_svg shape_arg check_run check_ref
# the typed entry points (runtime/op_*.c) are found, so a kernel's wrapper is one new file
RUNTIME  := messages config registry kernels pools grid ctx composite launch jit jit_tcc jit_gcc datadir ce_rows gemm_onednn \
  composite_run launch_api routines routine_gemm routine_ce \
  $(patsubst runtime/%.c,%,$(wildcard runtime/op_*.c))

GEN_OBJS := $(GEN_LIB:%=$(BUILD)/obj/gen/%.o)
CLI_OBJS := $(CLI:%=$(BUILD)/obj/cli/%.o)
RT_OBJS  := $(RUNTIME:%=$(BUILD)/obj/runtime/%.o) $(BUILD)/obj/templates/vops.o
# libtcc inside libubgen.so: Debian's libtcc.a is position-independent code
# but for PC-relative loads of glibc's stdout, stderr and environ, which a
# shared object cannot resolve; in this copy they load pointers that
# runtime/jit_tcc.c owns (and sets from glibc's when the library loads)
LIBTCC_A := $(shell $(CC) -print-file-name=libtcc.a)
LIBTCC_SO := $(BUILD)/lib/libtcc-so.a
REF_SRCS := $(wildcard tests/ref/*.c)
REF_OBJS := $(REF_SRCS:tests/ref/%.c=$(BUILD)/obj/ref/%.o)
SPECS    := $(wildcard specs/*.json)
SPEC_REFS := $(wildcard specs/*_ref.c)
TEMPLATES := $(filter-out templates/vops.c,$(wildcard templates/*))
HEADERS  := $(wildcard gen/*.h cli/*.h runtime/*.h runtime/include/*.h templates/*.h tests/ref/*.h tests/*.h)

BOOT := $(BUILD)/boot/ubgen-boot
UBGEN := $(BUILD)/bin/ubgen
LIB_A := $(BUILD)/lib/libubgen.a
LIB_SO := $(BUILD)/lib/libubgen.so
# the build whose kernel objects this one links: its own, or (KBUILD=) another
# build's made with the same KFLAGS, which CFLAGS do not reach: the sanitizer
# build links the plain build's kernels instead of compiling them again
KBUILD ?= $(BUILD)
KLIST := $(KBUILD)/kobj/main/objects.list

.PHONY: all deps deps-test test run install clean bench check-build
.DELETE_ON_ERROR:

all: $(UBGEN) $(LIB_A) $(LIB_SO)

deps:
	@sh mk/deps.sh build
deps-test:
	@sh mk/deps.sh test
	@$(if $(VENV_REQ),sh mk/venv.sh $(VENV))
# the environment as a file, for make test to make beside the kernels: pip
# keeps one core busy for half a minute
$(VENV)/requirements.txt: mk/python-requirements.txt
	@sh mk/venv.sh $(VENV)

$(BUILD)/obj/gen/%.o: gen/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(LIBFLAGS) $(CFLAGS) -c $< -o $@
$(BUILD)/obj/runtime/%.o: runtime/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(LIBFLAGS) $(CFLAGS) -c $< -o $@
# switching ONEDNN rebuilds the files that use it
$(BUILD)/obj/runtime/gemm_onednn.o: $(BUILD)/onednn-$(ONEDNN).flag
$(BUILD)/onednn-$(ONEDNN).flag:
	@mkdir -p $(@D)
	@rm -f $(BUILD)/onednn-*.flag
	@touch $@
# the vector operations tcc kernels call: the kernels' flags, not the library's
$(BUILD)/obj/templates/vops.o: templates/vops.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(KFLAGS) -c $< -o $@
$(LIBTCC_SO): $(LIBTCC_A)
	@mkdir -p $(@D)
	objcopy --redefine-sym stdout=ubg_tcc_stdout --redefine-sym stderr=ubg_tcc_stderr \
	  --redefine-sym environ=ubg_tcc_environ $< $@
$(BUILD)/obj/ref/%.o: tests/ref/%.c $(HEADERS) $(SPEC_REFS) $(wildcard tests/specs/*_ref.c)
	@mkdir -p $(@D)
	$(CC) $(BASE) $(CFLAGS) -Itemplates -c $< -o $@
$(BUILD)/obj/cli/%.o: cli/%.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(LIBFLAGS) $(CFLAGS) -c $< -o $@
$(BUILD)/obj/boot/ubgen.o: cli/ubgen.c $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(LIBFLAGS) $(CFLAGS) -DUBGEN_BOOT -c $< -o $@

# the generator alone, to emit the kernels the library is built from
BOOT_CLI := cli suggest help cmd_list cmd_plan cmd_emit emit_tuned shape_arg
$(BOOT): $(GEN_OBJS) $(BOOT_CLI:%=$(BUILD)/obj/cli/%.o) $(BUILD)/obj/boot/ubgen.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fopenmp $^ $(LDLIBS) -o $@

# emitted sources -> objects, by a sub-make that sees the emitted file list
# (a build linking another's kernels has no rule for them: that build made them)
ifeq ($(KBUILD),$(BUILD))
$(BUILD)/gen/main/MANIFEST: $(BOOT) $(SPECS) $(TEMPLATES) $(AOT_FLAG) $(TUNED)
	$(BOOT) emit --out $(BUILD)/gen/main --ub $(UB) $(EMIT_KERNELS)
	@touch $@
# switching UBGEN_AOT, TUNED or SAMPLE re-emits
$(AOT_FLAG):
	@mkdir -p $(@D)
	@rm -f $(BUILD)/aot-*.flag
	@touch $@
$(KLIST): $(BUILD)/gen/main/MANIFEST
	$(MAKE) -f mk/kernels.mk SRC=$(BUILD)/gen/main OBJ=$(BUILD)/kobj/main CC='$(CC)' KFLAGS='$(KFLAGS)'
endif

$(LIB_A): $(RT_OBJS) $(GEN_OBJS) $(KLIST)
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $(RT_OBJS) $(GEN_OBJS) $$(cat $(KLIST))
$(LIB_SO): $(RT_OBJS) $(GEN_OBJS) $(KLIST) $(LIBTCC_SO) mk/libubgen.map
	@mkdir -p $(@D)
	$(CC) -shared -fopenmp -Wl,-soname,$(SONAME) -Wl,--version-script=mk/libubgen.map -o $@ $(RT_OBJS) \
	  $(GEN_OBJS) $$(cat $(KLIST)) $(LIBTCC_SO) $(filter-out -ltcc,$(LDLIBS))
	ln -sf libubgen.so $(BUILD)/lib/$(SONAME)

$(UBGEN): $(CLI_OBJS) $(BUILD)/obj/cli/ubgen.o $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fopenmp $(CLI_OBJS) $(BUILD)/obj/cli/ubgen.o $(LIB_A) $(LDLIBS) -o $@

# ---- tests -------------------------------------------------------------------
include mk/tests.mk
include mk/fuzz.mk

# ---- run: the main job ---------------------------------------------------------
run: deps deps-bench
	$(MAKE) -j$(NPROC) all bench-build
	$(UBGEN) list | tail -n 1
	$(UBGEN) tune all --svg $(BUILD)/tuning.svg
	$(UBGEN) plan rms_norm.fwd --dtype bf16 --shape rows=2048,cols=4096 | head -n 4

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/ubgen/specs $(DESTDIR)$(PREFIX)/share/ubgen/templates
	install -m 755 $(UBGEN) $(DESTDIR)$(PREFIX)/bin/ubgen
	install -m 644 $(LIB_A) $(DESTDIR)$(PREFIX)/lib/libubgen.a
	install -m 755 $(LIB_SO) $(DESTDIR)$(PREFIX)/lib/libubgen.so.$(VERSION)
	ln -sf libubgen.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libubgen.so
	install -m 644 runtime/include/ubgen.h $(DESTDIR)$(PREFIX)/include/ubgen.h
	install -m 644 templates/ubgen_ref.h $(DESTDIR)$(PREFIX)/include/ubgen_ref.h
	install -m 644 runtime/ubgen_aot.h $(DESTDIR)$(PREFIX)/include/ubgen_aot.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' -e 's|@GEMM_LIBS@|$(if $(ONEDNN),-ldnnl)|' mk/ubgen.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ubgen.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/ubgen.pc
	install -m 644 $(SPECS) $(SPEC_REFS) $(DESTDIR)$(PREFIX)/share/ubgen/specs/
	install -m 644 $(TEMPLATES) $(DESTDIR)$(PREFIX)/share/ubgen/templates/
	@if ! $(PYTHON) -c 'import torch' >/dev/null 2>&1; then \
	  echo "ubgen: $(PYTHON) does not import torch: the Python package is not installed"; \
	else cd python && find ubgen -name '*.py' ! -name _install.py | while read f; do \
	  install -D -m 644 "$$f" "$(DESTDIR)$(PYDIR)/$$f" || exit 1; done && \
	  printf '"""written by make install: where the library is"""\nLIB = "%s"\n' "$(PREFIX)/lib/libubgen.so" \
	    > $(DESTDIR)$(PYDIR)/ubgen/_install.py && \
	  echo "ubgen: the Python package in $(PYDIR) (import ubgen, ubgen.torch, ubgen.liger)"; fi

# the interpreter the Python package, its tests and benchmarks run on
.PHONY: python-check
python-check:
	@$(PYTHON) -c 'import sys, torch; sys.exit(tuple(map(int, torch.__version__.split(".")[:2])) < (2, 1))' \
	  >/dev/null 2>&1 || { echo "ubgen: $(PYTHON) does not import torch >= 2.1: run make deps-test, or give" \
	  "PYTHON= an interpreter that does" >&2; exit 1; }

clean:
	rm -rf $(BUILD)
