# libFuzzer targets (tests/fuzz/fuzz_*.c); included by tests/sanitize/sanitize.mk.
#   make fuzz                         build them into build/fuzz (clang through mpicc;
#                                     DARKNET=alexeyab: build/fuzz-alexeyab, on the fork's sources)
#   make fuzz-short                   each for FUZZ_SECONDS (20 s) from its seed corpus
#   make fuzz-long [FUZZ_SECONDS=600] longer, on demand (default 600 s each)
# The plugin and the Darknet sources that read cfgs, lists and labels
# (option_list.c, list.c, utils.c) are compiled with coverage, ASan and UBSan;
# the rest of libdarknet.a comes uninstrumented. New inputs go to
# build/fuzz/corpus/<target>, crashes to build/fuzz/artifacts/; the seeds in
# tests/fuzz/corpus/<target> are only read. tests/fuzz/run.sh runs them.
FUZZ := $(BUILD)/fuzz$(if $(filter alexeyab,$(DARKNET)),-alexeyab)
FUZZ_SECONDS ?= 20
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_CC := OMPI_CC=clang $(MPICC)
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all -Wno-typedef-redefinition
FUZZ_PLUGIN_OBJ := $(patsubst plugin/%.c,$(FUZZ)/plugin/%.o,$(PLUGIN_SRC))
FUZZ_DK_OBJ := $(addprefix $(FUZZ)/darknet/,option_list.o list.o utils.o)

# clang and its libFuzzer runtime (Debian's clang, libclang-rt-14-dev): make deps
# installs them; a checkout set up before they were listed gets them here.
.PHONY: fuzz-deps
fuzz-deps:
	@test -f "$$(clang -print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-x86_64.a" || ./scripts/deps.sh

# The flags the objects were built with (the top Makefile's %.settings rule).
$(FUZZ)/.settings: private TEXT := $(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(LDLIBS)

$(FUZZ)/plugin/%.o: plugin/%.c $(PLUGIN_HDR) $(DK)/.patched $(FUZZ)/.settings | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -std=gnu99 -fPIC $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# Darknet's sources appear when it is unpacked: on a fresh tree make fuzz
# comes first, and without this make finds no way to the .c files.
$(DK)/src/%.c: $(DK)/.patched ;

$(FUZZ)/darknet/%.o: $(DK)/src/%.c $(DK)/.patched $(FUZZ)/.settings | fuzz-deps
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -w $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ)/libdarknet_mn.a: $(FUZZ_PLUGIN_OBJ)
	ar rcs $@ $^

$(FUZZ)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_DK_OBJ) $(FUZZ)/libdarknet_mn.a $(LIBDK) | fuzz-deps
	$(FUZZ_CC) $(CPPFLAGS) -std=gnu99 -Wall -Wextra $(FUZZ_CFLAGS) -fsanitize=fuzzer $(filter-out %.h %.settings,$^) -o $@ $(LDLIBS)

# Kept: built through pattern rules, make would delete them as intermediate.
.SECONDARY: $(FUZZ_PLUGIN_OBJ) $(FUZZ_DK_OBJ) $(FUZZ)/libdarknet_mn.a

.PHONY: fuzz fuzz-short fuzz-long
fuzz: $(addprefix $(FUZZ)/,$(FUZZ_TARGETS))

fuzz-long: FUZZ_SECONDS = 600

fuzz-short fuzz-long: fuzz
	FUZZ=$(FUZZ) FUZZ_SECONDS=$(FUZZ_SECONDS) ./tests/fuzz/run.sh $(FUZZ_TARGETS)
