# The communicators on simulated clusters (bench/sim/, docs/benchmarks.md
# "Simulated clusters (SimGrid SMPI)"): bench/sim/mn_sim.c with the plugin's
# core, transport and coll layers, built by SimGrid's smpicc (Debian 12's
# libsimgrid-dev), run by smpirun. No Darknet is linked; its headers are
# read (mn_base.h), hence the patched tree.
#   make bench-sim   installs libsimgrid-dev, builds, runs bench/sim/run.sh
#                    (SIM_SET=quick, the default, or full)
#   make test-sim    tests/e2e/run_sim.sh: 16 simulated ranks, every mean exact
SMPICC ?= smpicc
SIM_SET ?= quick
SIM_BIN := $(BUILD)/sim/mn_sim
SIM_SRC := bench/sim/mn_sim.c $(wildcard plugin/core/*.c plugin/transport/*.c plugin/coll/*.c)
SIM_HDR := $(wildcard plugin/core/*.h plugin/transport/*.h plugin/coll/*.h) plugin/base/mn_base.h

.PHONY: bench-sim test-sim sim-deps
# libsimgrid-dev where this machine may install it (root, or sudo without a password), else the one line saying so.
sim-deps:
	@command -v $(SMPICC) > /dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] || sudo -n true 2> /dev/null; then s=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	    $$s apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$s apt-get install -y -qq libsimgrid-dev > /dev/null; \
	  else echo "bench-sim: no $(SMPICC): install SimGrid (Debian: apt-get install libsimgrid-dev)" >&2; exit 1; fi; }

# smpicc compiles every source with SMPI's mpi.h (no Open MPI object can be reused).
$(SIM_BIN): $(SIM_SRC) $(SIM_HDR) $(DK)/.patched | sim-deps
	@mkdir -p $(dir $@)
	$(SMPICC) -O2 -std=gnu99 -Wall -Wextra -Wno-unused-parameter -Iplugin \
	  -I$(DK)/include $(SIM_SRC) -o $@ -lm -pthread

bench-sim: $(SIM_BIN)
	SIM_BIN=$(SIM_BIN) SIM_SET=$(SIM_SET) ./bench/sim/run.sh

test-sim: $(SIM_BIN)
	BUILD=$(BUILD) bash tests/suites.sh sim
