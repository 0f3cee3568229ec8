# Compiles the kernels `ubgen emit` wrote into $(SRC); run by the main
# Makefile after emitting, so the wildcard sees the current files.
SRCS := $(wildcard $(SRC)/*.c)
OBJS := $(SRCS:$(SRC)/%.c=$(OBJ)/%.o)

$(OBJ)/objects.list: $(OBJS)
	@printf '%s\n' $(OBJS) > $@

$(OBJ)/%.o: $(SRC)/%.c
	@mkdir -p $(@D)
	@$(CC) $(KFLAGS) -Iruntime -c $< -o $@
