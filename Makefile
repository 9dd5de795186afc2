# darknet-mn: make deps | make | make test | make demo | make bench
# GPU=1 CUDNN=1 NCCL=1 build the CUDA variant (into build/gpu, like Darknet's switches).
# SANITIZE=1 builds the plugin, main and the unit tests with ASan+UBSan into
# build/cpu-asan (make test-sanitize: tests/sanitize.mk).
GPU ?= 0
SANITIZE ?= 0
CUDNN ?= 0
NCCL ?= 0
BUILD ?= build
NP ?= 2

ifeq ($(GPU),1)
VARIANT := gpu
else
VARIANT := cpu
endif
DK := third_party/darknet-$(VARIANT)
OBJ := $(BUILD)/$(VARIANT)$(if $(filter 1,$(SANITIZE)),-asan)
PROG ?= $(if $(filter 1,$(GPU) $(SANITIZE)),$(OBJ)/darknet_mn,darknet_mn)
# Written by scripts/deps.sh once Debian's packages and Darknet's source are here.
DEPS_STAMP := third_party/dl/.fetched
PATCHES := $(sort $(wildcard patches/*.patch))
CUDA ?= /usr/local/cuda

MPICC ?= mpicc
CFLAGS ?= -O3 -g
CFLAGS += -std=gnu99 -Wall -Wextra -Wno-unused-parameter -fPIC
ifeq ($(SANITIZE),1)
# Darknet's libdarknet.a stays uninstrumented; linking with these flags brings the runtimes.
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -g -O1
endif
CPPFLAGS += -Iplugin -I$(DK)/include -I$(DK)/src
# cairo draws the training chart and detector test's predictions.png.
CPPFLAGS += $(shell pkg-config --cflags cairo)
LDLIBS := -lm -pthread $(shell pkg-config --libs cairo)
ifeq ($(GPU),1)
CPPFLAGS += -DGPU -I$(CUDA)/include
LDLIBS += -L$(CUDA)/lib64 -lcudart -lcublas -lcurand -lstdc++
endif
ifeq ($(CUDNN),1)
CPPFLAGS += -DCUDNN
LDLIBS += -lcudnn
endif
ifeq ($(NCCL),1)
CPPFLAGS += -DMN_NCCL
LDLIBS += -lnccl
endif

PLUGIN_SRC := $(wildcard plugin/*.c)
PLUGIN_OBJ := $(patsubst plugin/%.c,$(OBJ)/plugin/%.o,$(PLUGIN_SRC))
ifeq ($(GPU),1)
# The device-side kernels (float16 casts, checks), for the same GPUs as Darknet's build.
NVCC ?= nvcc
NVFLAGS := -O3 -Xcompiler -fPIC -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
           -gencode arch=compute_86,code=sm_86 -gencode arch=compute_90,code=[sm_90,compute_90]
PLUGIN_OBJ += $(OBJ)/plugin/mn_kernels.o
endif
LIBMN := $(OBJ)/libdarknet_mn.a
LIBDK := $(DK)/libdarknet.a

.PHONY: all deps darknet test demo bench clean distclean gpu-build
all: $(PROG)

deps:
	./scripts/deps.sh
$(DEPS_STAMP):
	./scripts/deps.sh

# Unpack Debian's source package and apply our patches in order.
$(DK)/.patched: $(PATCHES) $(DEPS_STAMP)
	rm -rf $(DK) && mkdir -p third_party
	dpkg-source -q -x $$(ls third_party/dl/darknet_*.dsc | head -1) $(DK) >/dev/null
	set -e; for p in $(PATCHES); do patch -s -p1 -d $(DK) < $$p; done
	touch $@

$(LIBDK): $(DK)/.patched
	$(MAKE) -C $(DK) -s GPU=$(GPU) CUDNN=$(CUDNN) OPENCV=0 OPENMP=0 obj libdarknet.a darknet
darknet: $(LIBDK)

$(OBJ)/plugin/%.o: plugin/%.c $(wildcard plugin/*.h) $(DK)/.patched
	@mkdir -p $(dir $@)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(OBJ)/plugin/mn_kernels.o: plugin/mn_kernels.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

$(LIBMN): $(PLUGIN_OBJ)
	ar rcs $@ $^

$(OBJ)/main.o: main.c plugin/darknet_mn.h $(DK)/.patched
	@mkdir -p $(dir $@)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(PROG): $(OBJ)/main.o $(LIBMN) $(LIBDK)
	$(MPICC) $(CFLAGS) $^ -o $@ $(LDLIBS)

# The CUDA build only compiles and links on a machine without a GPU.
gpu-build:
	$(MAKE) GPU=1 CUDNN=1 NCCL=1

include tools/fashion.mk
include tools/fashion_det.mk
$(BUILD)/tools/mn_fashion: $(DEPS_STAMP)
include tests/tests.mk
include tests/sanitize.mk

clean:
	rm -rf $(BUILD) darknet_mn
distclean: clean
	rm -rf third_party/darknet-cpu third_party/darknet-gpu third_party/darknet-stock third_party/darknet-stock-omp

# Stock Darknet from the same source package, unpatched, its own flags
# (-Ofast): the baseline of make bench; darknet-stock-omp with OpenMP.
STOCK := third_party/darknet-stock/darknet third_party/darknet-stock-omp/darknet
$(STOCK): $(DEPS_STAMP)
	rm -rf $(@D) && dpkg-source -q -x $$(ls third_party/dl/darknet_*.dsc | head -1) $(@D) >/dev/null
	$(MAKE) -C $(@D) -s OPENCV=0 OPENMP=$(if $(findstring -omp,$(@D)),1,0) obj darknet

bench: $(PROG) $(STOCK) $(BUILD)/fashion/.stamp $(FASHION_DET_OUT)/.stamp
	./bench/run.sh

demo: $(PROG) $(BUILD)/fashion/.stamp $(FASHION_DET_OUT)/.stamp
	./scripts/demo.sh
