# Compiles the kernels `ubgen emit` wrote into $(SRC); run by the main
# Makefile after emitting, so the wildcard sees the current files.
SRCS := $(wildcard $(SRC)/*.c)
OBJS := $(SRCS:$(SRC)/%.c=$(OBJ)/%.o)

# Every kernel includes <immintrin.h> first (templates/prelude.h); gcc
# parsing it costs a kernel 0.12 s, so gcc gets a copy precompiled with the
# kernels' flags, found before the real header (a stale or foreign one is
# ignored by gcc, which then reads the header). clang reads the header.
# KCC_IS_GCC: the Makefile's test of CC
ifeq ($(KCC_IS_GCC),1)
PCH_DIR := $(OBJ)/pch-$(shell printf '%s' '$(CC) $(KFLAGS)' | cksum | cut -d' ' -f1)
PCH     := $(PCH_DIR)/immintrin.h.gch
PCH_INC := -I$(PCH_DIR)
endif

# Written by make, not by a shell: with 2,488 kernels a printf of them all
# passed Linux's 128 KiB limit on one argument (sh -c's command) in the
# valgrind build, whose paths are longer.
$(OBJ)/objects.list: $(OBJS)
	$(file >$@,$(OBJS))

$(OBJ)/%.o: $(SRC)/%.c | $(PCH)
	@mkdir -p $(@D)
	@$(CC) $(KFLAGS) $(PCH_INC) -Iruntime -c $< -o $@

$(PCH):
	@mkdir -p $(@D)
	$(CC) $(KFLAGS) -x c-header $$($(CC) -print-file-name=include/immintrin.h) -o $@
