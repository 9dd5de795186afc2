# Unit tests (C programs under mpiexec) and end-to-end runs of ./darknet_mn.
TEST_BIN := $(OBJ)/tests
TESTS := test_comm test_equiv test_scatter test_syncbn test_bnavg test_map mn_shapes test_big test_replica test_gpu_select test_cfg test_cache test_gpu_logic test_guard test_loops test_rules test_queue test_stale test_dbuf
TEST_PROGS := $(addprefix $(TEST_BIN)/,$(TESTS)) $(TEST_BIN)/mn_wcmp $(TEST_BIN)/mn_hang_abort.so

$(TEST_BIN)/mn_hang_abort.so: tests/helpers/mn_hang_abort.c
	@mkdir -p $(dir $@)
	$(MPICC) -shared -fPIC -O2 -Wall $< -o $@

$(TEST_BIN)/mn_wcmp: tests/helpers/mn_wcmp.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall $< -o $@ -lm

# A unit test (tests/unit) or a helper on Darknet (tests/helpers: mn_shapes)
# linked with the plugin and Darknet.
define link_test
@mkdir -p $(dir $@)
$(MPICC) $(CPPFLAGS) $(CFLAGS) $< $(LIBMN) $(LIBDK) -o $@ $(LDLIBS)
endef
$(TEST_BIN)/%: tests/unit/%.c tests/unit/mn_test.h $(LIBMN) $(LIBDK)
	$(link_test)
$(TEST_BIN)/%: tests/helpers/%.c $(LIBMN) $(LIBDK)
	$(link_test)

# make test and each test-* target run the suites tests/suites.txt tags
# with the target's name (tests/suites.sh TAG; make test through tests/run.sh).
test: $(PROG) $(TEST_PROGS) $(BUILD)/tools/mn_fashion $(BUILD)/tools/mn_fashion_det
	BUILD=$(BUILD) TEST_BIN=$(TEST_BIN) ./tests/run.sh

# The GPU builds of both C bases, compiled and linked, and checked as make
# test checks the CPU build, and the GPU machine's bundle of all three
# (tests/gpu/gpu_builds.sh); .ci/run runs it.
.PHONY: test-gpu
test-gpu: $(BUILD)/tools/mn_fashion
	BUILD=$(BUILD) TEST_BIN=$(TEST_BIN) bash tests/suites.sh gpu
