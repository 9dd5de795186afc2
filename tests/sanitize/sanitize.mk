# Sanitizers; included by the top Makefile after tests/tests.mk.
#   make test-sanitize     the unit tests under ASan+UBSan (build/cpu-asan), 1-4 ranks
#   make test SANITIZE=1   the same (tests/run.sh hands over to tests/suites.sh sanitize)
#   make fuzz, fuzz-short, fuzz-long: tests/fuzz/fuzz.mk
.PHONY: test-sanitize sanitize-progs

# With SANITIZE=1, OBJ, PROG and TEST_BIN point into build/cpu-asan.
sanitize-progs: $(PROG) $(TEST_PROGS)

# DARKNET=alexeyab: the same on AlexeyAB's base (build/alexeyab-cpu-asan).
test-sanitize:
	$(MAKE) SANITIZE=1 sanitize-progs
	BUILD=$(BUILD) DK=$(DK) TEST_BIN=$(patsubst %-asan,%,$(OBJ))-asan/tests bash tests/suites.sh sanitize

include tests/fuzz/fuzz.mk
