# The Fashion-MNIST detection set (tools/mn_fashion_det.c); included by the
# top Makefile. Needs zlib1g-dev and libstb-dev.
FASHION_DET_OUT ?= $(BUILD)/fashion-det
FASHION_DET_ARGS ?= --train 2000 --valid 200 --seed 1 --net 128

$(BUILD)/tools/mn_fashion_det: tools/mn_fashion_det.c
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -Wall -Wextra -I/usr/include/stb -o $@ $< -lz -lm

$(FASHION_DET_OUT)/.stamp: $(BUILD)/tools/mn_fashion_det $(FASHION_FILES)
	$(BUILD)/tools/mn_fashion_det $(FASHION_IDX) $(FASHION_DET_OUT) $(FASHION_DET_ARGS)
	@touch $@

.PHONY: fashion-det-data
fashion-det-data: $(FASHION_DET_OUT)/.stamp
