# Fashion-MNIST data preparation for the demo; included by the top Makefile.
# Needs zlib1g-dev.
BUILD ?= build
FASHION_IDX ?= /usr/share/datasets/fashion-mnist
FASHION_OUT ?= $(BUILD)/fashion
FASHION_FILES = $(addprefix $(FASHION_IDX)/,train-images-idx3-ubyte.gz \
	train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)

$(BUILD)/tools/mn_fashion: tools/mn_fashion.c
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -Wall -Wextra -o $@ $< -lz

# The tool writes .stamp last and skips work when it is current; touch so
# make sees the stamp newer than the tool even when nothing was redone.
$(FASHION_OUT)/.stamp: $(BUILD)/tools/mn_fashion $(FASHION_FILES)
	$(BUILD)/tools/mn_fashion $(FASHION_IDX) $(FASHION_OUT)
	@touch $@

.PHONY: fashion-data
fashion-data: $(FASHION_OUT)/.stamp
