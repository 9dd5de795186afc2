# darknet-mn: make deps | make | make test | make demo | make bench | make zoo
# GPU=1 CUDNN=1 NCCL=1 build the CUDA variant (into build/gpu, like Darknet's switches).
# DARKNET=alexeyab builds on AlexeyAB's fork instead of Debian's pjreddie Darknet:
# the snapshot in ../shared/third_party, or a clone named by ALEXEYAB_SRC=<dir>,
# patched with patches/alexeyab/, into build/alexeyab-cpu (or -gpu).
# DARKNET=hankai: hank-ai's Darknet V5 (C++, CMake; docs/hankai.md), the
# snapshot or HANKAI_SRC=<clone>, into build/hankai-cpu; make DARKNET=hankai
# darknet builds the fork alone. pjreddie's clone is DARKNET_SRC=<dir>: each
# base reads its own variable, so one kept for a base never reaches another.
# SANITIZE=1 builds the plugin, main and the unit tests with ASan+UBSan into
# build/cpu-asan (make test-sanitize: tests/sanitize/sanitize.mk).
GPU ?= 0
DARKNET ?= pjreddie
comma := ,
# Debian's packages and Darknet's source package first: scripts/deps.sh writes
# this file once they are here, and make, having remade an included file,
# reads this Makefile again, so that what follows (pkg-config's flags,
# whether oneDNN is there) is decided with the packages installed.
DEPS_STAMP := third_party/deps.mk
# The tests' own tools (MPICH, stock darknet, clang, valgrind ...) with the
# goals that run tests only: make and make demo install what they use.
# The demo's data (Fashion-MNIST, zlib, stb) with the goals that make it.
DEMO_DEPS := third_party/deps-demo.mk
TEST_DEPS := third_party/deps-test.mk
ifeq ($(filter clean distclean deps deps-test uninstall,$(MAKECMDGOALS)),)
include $(DEPS_STAMP)
ifneq ($(filter demo fashion%,$(MAKECMDGOALS)),)
include $(DEMO_DEPS)
endif
ifneq ($(filter test% fuzz% bench% zoo gpu-check sanitize%,$(MAKECMDGOALS)),)
include $(TEST_DEPS)
endif
endif
# Darknet's source package, fetched once (what rebuilds Darknet, unlike a re-run of deps.sh).
DL_STAMP := third_party/dl/.fetched
SANITIZE ?= 0
CUDNN ?= 0
NCCL ?= 0
BUILD ?= build
# The Darknets' own builds run on every core unless make was given -j (then
# they share its job slots through its jobserver).
FORK_JOBS = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(shell nproc))
NP ?= 2

# BLAS=1: Darknet's CPU gemm is OpenBLAS's sgemm (patch 0009), the CPU build's
# default; BLAS=0 keeps the stock loops (into build/cpu-noblas). A GPU build
# trains with cuBLAS and takes BLAS=0 unless asked.
# DNNL=1: convolutional layers run through oneDNN (plugin/engine/mn_dnnl.c),
# the CPU build's default where libdnnl-dev is installed; DNNL=0 keeps
# Darknet's im2col + gemm (into build/cpu-nodnnl). Darknet itself is the same.
# CAIRO=1: the training chart, the timeline's picture and detector test's
# predictions.png are drawn with cairo, the default where pkg-config finds
# it (libcairo2-dev); CAIRO=0, for a cluster without it, draws none of them
# and says so, training the same (into build/cpu-nocairo). Darknet is the same.
CAIRO_DEFAULT := $(shell pkg-config --exists cairo 2>/dev/null && echo 1 || echo 0)
CAIRO ?= $(CAIRO_DEFAULT)
CAIRO_VARIANT := $(if $(filter-out $(CAIRO_DEFAULT),$(CAIRO)),$(if $(filter 1,$(CAIRO)),-cairo,-nocairo))
# CAIRO=1 without cairo, once deps.sh (which installs it) has run: one clear
# line rather than the compiler's missing cairo.h.
ifeq ($(CAIRO)$(CAIRO_DEFAULT),10)
ifneq ($(wildcard $(DEPS_STAMP)),)
ifeq ($(filter clean distclean deps deps-test,$(MAKECMDGOALS)),)
$(error CAIRO=1: pkg-config finds no cairo (apt-get install libcairo2-dev, or make CAIRO=0 to build without the PNGs))
endif
endif
endif
ifeq ($(GPU),1)
BLAS ?= 0
DNNL := 0
DK_VARIANT := gpu$(if $(filter 1,$(BLAS)),-blas)
VARIANT := $(DK_VARIANT)$(CAIRO_VARIANT)
else
BLAS ?= 1
# oneDNN where the compiler finds its header (CPATH, as a module load sets
# it) or DNNL_ROOT names its prefix.
DNNL_DEFAULT := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\n' | $(CC) $(if $(DNNL_ROOT),-I$(DNNL_ROOT)/include) -E -x c - > /dev/null 2>&1 && echo 1 || echo 0)
DNNL ?= $(DNNL_DEFAULT)
DK_VARIANT := cpu$(if $(filter 0,$(BLAS)),-noblas)
VARIANT := $(DK_VARIANT)$(if $(filter-out $(DNNL_DEFAULT),$(DNNL)),$(if $(filter 1,$(DNNL)),-dnnl,-nodnnl))$(CAIRO_VARIANT)
endif
# hank-ai's Darknet adds its own (scripts/deps.sh hankai: cmake, OpenCV,
# and 64-bit OpenBLAS where BLAS=1, hence a file for each), included alike:
# its flags below come from pkg-config and the prefixes it checked.
HK_DEPS := third_party/deps-hankai$(if $(filter 0,$(BLAS)),-noblas).mk
ifeq ($(DARKNET)$(filter clean distclean deps deps-test,$(MAKECMDGOALS)),hankai)
include $(HK_DEPS)
endif
# Where hank-ai's dependencies are missing once deps.sh has run (a module
# unloaded since, a prefix named wrong), the Makefile says so itself.
HK_CHECK := $(if $(filter clean distclean deps deps-test,$(MAKECMDGOALS)),,$(wildcard $(HK_DEPS)))
AB_SNAPSHOT ?= ../shared/third_party/darknet-alexeyab-59596d78.tar.xz
# hank-ai's snapshot is a git archive: its version is given here, not asked of git.
HK_SNAPSHOT ?= ../shared/third_party/darknet-hankai-f684e1d7.tar.xz
HK_SNAPSHOT_VERSION ?= v5.1-104-gf684e1d7
ifeq ($(DARKNET),alexeyab)
DK := third_party/darknet-alexeyab-$(DK_VARIANT)
OBJ := $(BUILD)/alexeyab-$(VARIANT)$(if $(filter 1,$(SANITIZE)),-asan)
PROG ?= $(OBJ)/darknet_mn
PATCHES := $(sort $(wildcard patches/alexeyab/*.patch))
ALEXEYAB_SRC ?=
SRC_VAR := ALEXEYAB_SRC
DK_CLONE := $(ALEXEYAB_SRC)
DK_SOURCE := $(if $(DK_CLONE),$(DK_CLONE)/src/parser.c,$(AB_SNAPSHOT))
else ifeq ($(DARKNET),pjreddie)
DK := third_party/darknet-$(DK_VARIANT)
OBJ := $(BUILD)/$(VARIANT)$(if $(filter 1,$(SANITIZE)),-asan)
PROG ?= $(if $(filter $(BUILD)/cpu,$(OBJ)),darknet_mn,$(OBJ)/darknet_mn)
PATCHES := $(sort $(wildcard patches/*.patch))
DARKNET_SRC ?=
SRC_VAR := DARKNET_SRC
DK_CLONE := $(DARKNET_SRC)
DK_SOURCE := $(if $(DK_CLONE),$(DK_CLONE)/src/parser.c,$(DL_STAMP))
else ifeq ($(DARKNET),hankai)
DK := third_party/darknet-hankai-$(DK_VARIANT)
OBJ := $(BUILD)/hankai-$(VARIANT)$(if $(filter 1,$(SANITIZE)),-asan)
PROG ?= $(OBJ)/darknet_mn
PATCHES := $(sort $(wildcard patches/hankai/*.patch))
HANKAI_SRC ?=
SRC_VAR := HANKAI_SRC
DK_CLONE := $(HANKAI_SRC)
DK_SOURCE := $(if $(DK_CLONE),$(DK_CLONE)/CMakeLists.txt,$(HK_SNAPSHOT))
else
$(error DARKNET=$(DARKNET): the bases are pjreddie (Debian's Darknet, the default), alexeyab and hankai)
endif
# The upstream commits darknet-mn's patches are made for: Debian's source
# package is pjreddie's; ../shared's snapshots are the forks'.
PJ_UPSTREAM := https://github.com/pjreddie/darknet commit 61c9d02ec461e30d55762ec7669d6a1d3c356fb2
AB_UPSTREAM := https://github.com/AlexeyAB/darknet commit 59596d7880f6504768df41d6daa586f5cb2b932f
HK_UPSTREAM := https://github.com/hank-ai/darknet commit f684e1d75d4594298c8e73acc727ba6cf2e81c60 (v5.1-104-gf684e1d7)
CUDA ?= /usr/local/cuda
# The GPU architectures every base and the plugin are built for (compute
# capability x 10): V100 70, T4 75, A100 80, RTX 30 and A10 86, L4 and
# RTX 40 89, H100 and H200 90; of those, what the installed nvcc can build
# (CUDA 13 has none below 75: a V100 needs CUDA 12). CUDA_ARCHS=90 builds
# one, in a quarter of the time. Machine code for each, and PTX for the
# newest, which a later GPU compiles at load.
CUDA_WANT_ARCHS := 70 75 80 86 89 90
CUDA_ARCHS ?= $(filter $(CUDA_WANT_ARCHS),$(patsubst compute_%,%,$(shell $(CUDA)/bin/nvcc --list-gpu-arch 2> /dev/null)))
CUDA_GENCODE = $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))

MPICC ?= mpicc
CFLAGS ?= -O3 -g
CFLAGS += -std=gnu99 -Wall -Wextra -Wno-unused-parameter -Werror=implicit-function-declaration -fPIC
ifeq ($(SANITIZE),1)
# Darknet's libdarknet.a stays uninstrumented; linking with these flags brings the runtimes.
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -g -O1
endif
# The plugin's layers, from the bottom (docs/design.md): each folder's files
# call only their own layer and those before it in this list. Training's
# parts are layers of their own above train/ (its public header alone).
PLUGIN_LAYERS := core engine base transport coll train $(addprefix train/,observe input optimizer checkpoint eval) cmd
# One plugin folder on the include path: each include names its layer
# ("transport/mn_shm.h").
CPPFLAGS += -Iplugin -I$(DK)/include -I$(DK)/src
LDLIBS := -lm -pthread
ifeq ($(CAIRO),1)
CPPFLAGS += -DMN_CAIRO $(shell pkg-config --cflags cairo)
LDLIBS += $(shell pkg-config --libs cairo)
endif
ifeq ($(BLAS),1)
CPPFLAGS += -DMN_BLAS
ifeq ($(DARKNET),hankai)
# One OpenBLAS in the process: the fork's, with 64-bit integers (the
# plugin calls only its thread count, whose header is the same; docs/hankai.md),
# its cblas.h for the fork and the plugin alike. OPENBLAS64_ROOT=<prefix>:
# include/cblas.h or include/openblas/cblas.h, and lib/libopenblas64.so or
# Spack's openblas+ilp64 lib/libopenblas.so (or lib64/); else Debian's
# libopenblas64-dev. deps.sh checks that it has 64-bit integers.
ifneq ($(OPENBLAS64_ROOT),)
HK_BLAS64_ROOT := $(abspath $(OPENBLAS64_ROOT))
HK_BLAS64_INC := $(patsubst %/cblas.h,%,$(firstword $(wildcard $(HK_BLAS64_ROOT)/include/cblas.h $(HK_BLAS64_ROOT)/include/openblas/cblas.h)))
HK_BLAS64_LIB := $(firstword $(wildcard $(foreach n,openblas64 openblas,$(foreach d,lib lib64,$(HK_BLAS64_ROOT)/$(d)/lib$(n).so))))
HK_BLAS64_LIBS := $(HK_BLAS64_LIB) -Wl,-rpath,$(patsubst %/,%,$(dir $(HK_BLAS64_LIB)))
HK_BLAS64_FOUND := $(and $(HK_BLAS64_INC),$(HK_BLAS64_LIB))
HK_BLAS64_WHERE := OPENBLAS64_ROOT=$(OPENBLAS64_ROOT) holds no include/cblas.h (or include/openblas/cblas.h) and lib/libopenblas64.so (or lib/libopenblas.so, or in lib64/)
else
HK_BLAS64_INC := $(patsubst %/cblas.h,%,$(wildcard /usr/include/$(shell $(CC) -print-multiarch 2>/dev/null)/openblas64-pthread/cblas.h))
HK_BLAS64_LIBS := -lopenblas64
HK_BLAS64_FOUND := $(HK_BLAS64_INC)
HK_BLAS64_WHERE := no 64-bit-integer OpenBLAS: name its prefix, OPENBLAS64_ROOT=<prefix> (Debian: apt-get install libopenblas64-dev)
endif
ifneq ($(HK_CHECK),)
ifeq ($(HK_BLAS64_FOUND),)
$(error hank-ai's Darknet with BLAS=1: $(HK_BLAS64_WHERE); or make BLAS=0 to build without OpenBLAS (its gemm loops, several times slower))
endif
endif
CPPFLAGS += -I$(HK_BLAS64_INC)
LDLIBS += $(HK_BLAS64_LIBS)
else
LDLIBS += -lopenblas
endif
endif
ifeq ($(DNNL),1)
CPPFLAGS += -DMN_DNNL
LDLIBS += -ldnnl -lgomp
endif
# What a CPU build goes without because it was not found, said as it links.
ifeq ($(GPU)$(DNNL_DEFAULT),00)
BUILD_NOTES += no oneDNN found (libdnnl-dev, or DNNL_ROOT=<prefix>): convolutions run on Darknet's im2col + gemm, as ./darknet_mn info says.
endif
ifeq ($(CAIRO_DEFAULT),0)
BUILD_NOTES += no cairo found (libcairo2-dev and pkg-config): no training chart, timeline picture or predictions.png.
endif
# OPENBLAS_ROOT=, DNNL_ROOT=<prefix>: a library installed apart (a release,
# a module, Spack). Its include and lib folders go where a module puts
# them, CPATH and LIBRARY_PATH, so that Darknet's own build (its gemm.c
# includes cblas.h) finds it too; the program finds it at run time.
ROOTS := $(strip $(OPENBLAS_ROOT) $(DNNL_ROOT))
ifneq ($(ROOTS),)
empty :=
space := $(empty) $(empty)
export CPATH := $(subst $(space),:,$(ROOTS:%=%/include))$(if $(CPATH),:$(CPATH))
export LIBRARY_PATH := $(subst $(space),:,$(foreach r,$(ROOTS),$(r)/lib $(r)/lib64))$(if $(LIBRARY_PATH),:$(LIBRARY_PATH))
LDLIBS += $(foreach r,$(ROOTS),-Wl$(comma)-rpath$(comma)$(r)/lib -Wl$(comma)-rpath$(comma)$(r)/lib64)
endif
ifeq ($(GPU),1)
CPPFLAGS += -DGPU -I$(CUDA)/include
LDLIBS += -L$(CUDA)/lib64 -lcudart -lcublas -lcurand -lstdc++
endif
ifeq ($(DARKNET),alexeyab)
# The fork has C++ sources (http_stream.cpp, image_opencv.cpp) and its own stb.
CPPFLAGS += -DMN_BASE_ALEXEYAB -I$(DK)/3rdparty/stb/include
LDLIBS += -lstdc++
ifeq ($(GPU),1)
# dark_cuda.c calls the driver API (cuCtxGetCurrent); the stub links where no driver is installed.
LDLIBS += -L$(CUDA)/lib64/stubs -lcuda
endif
endif
ifeq ($(DARKNET),hankai)
# The plugin's C sees the fork's types through mn_base_hankai.h; its adapter
# (C++17) is compiled with the fork's own defines (read from its
# compile_commands.json) and linked with its OpenCV and C++ runtime.
CPPFLAGS += -DMN_BASE_HANKAI -I$(DK)/src-lib
# No -lcuda on its GPU build: the adapter looks up the fork's one driver
# call at run time, so that a machine without a driver gets our message.
# OpenCV 4 as a module gives it, for the adapter, the link and the fork's
# CMake (OpenCV_ROOT) alike: OPENCV_ROOT=<prefix> (a module's prefix)
# through its opencv4.pc where it has one, else its include/opencv4 and
# the four modules the fork uses (OpenCV writes no .pc unless built with
# OPENCV_GENERATE_PKGCONFIG=ON), linked with its lib folder as run path;
# without OPENCV_ROOT, pkg-config's opencv4 (PKG_CONFIG_PATH; Debian's
# libopencv-dev). A static OpenCV (no libopencv_core.so beside its .pc)
# brings its .pc's private libraries too.
HK_OPENCV_ROOT := $(if $(OPENCV_ROOT),$(abspath $(OPENCV_ROOT)))
HK_OPENCV_PC := $(if $(HK_OPENCV_ROOT),$(firstword $(wildcard $(HK_OPENCV_ROOT)/lib/pkgconfig/opencv4.pc $(HK_OPENCV_ROOT)/lib64/pkgconfig/opencv4.pc)),opencv4)
ifneq ($(HK_OPENCV_PC),)
HK_OPENCV_LIBDIR := $(shell pkg-config --variable=libdir $(HK_OPENCV_PC) 2>/dev/null)
HK_OPENCV_CFLAGS := $(shell pkg-config --cflags $(HK_OPENCV_PC) 2>/dev/null)
HK_OPENCV_LIBS := $(shell pkg-config $(if $(wildcard $(HK_OPENCV_LIBDIR)/libopencv_core.so),,--static) --libs $(HK_OPENCV_PC) 2>/dev/null)
HK_OPENCV_PREFIX := $(or $(HK_OPENCV_ROOT),$(shell pkg-config --variable=prefix $(HK_OPENCV_PC) 2>/dev/null))
HK_OPENCV_WHERE := pkg-config finds no opencv4 (load your site's OpenCV module, which sets PKG_CONFIG_PATH, or name its prefix: OPENCV_ROOT=<prefix>)
else
HK_OPENCV_LIBDIR := $(patsubst %/libopencv_core.so,%,$(firstword $(wildcard $(HK_OPENCV_ROOT)/lib/libopencv_core.so $(HK_OPENCV_ROOT)/lib64/libopencv_core.so)))
HK_OPENCV_CFLAGS := $(if $(wildcard $(HK_OPENCV_ROOT)/include/opencv4/opencv2/core.hpp),-I$(HK_OPENCV_ROOT)/include/opencv4)
HK_OPENCV_LIBS := $(if $(HK_OPENCV_LIBDIR),-L$(HK_OPENCV_LIBDIR) -lopencv_highgui -lopencv_imgcodecs -lopencv_imgproc -lopencv_core)
HK_OPENCV_PREFIX := $(HK_OPENCV_ROOT)
HK_OPENCV_WHERE := OPENCV_ROOT=$(OPENCV_ROOT) holds neither lib/pkgconfig/opencv4.pc nor include/opencv4 with lib/libopencv_core.so (or lib64/ for either; a static OpenCV needs its .pc)
endif
HK_OPENCV_LIBS += $(if $(HK_OPENCV_ROOT),$(if $(HK_OPENCV_LIBDIR),-Wl$(comma)-rpath$(comma)$(HK_OPENCV_LIBDIR)))
ifneq ($(HK_CHECK),)
ifeq ($(and $(HK_OPENCV_CFLAGS),$(HK_OPENCV_LIBS)),)
$(error hank-ai's Darknet needs OpenCV 4: $(HK_OPENCV_WHERE))
endif
endif
# OPENCV_PREFIX=<dir>: darknet-mn links the static OpenCV there instead
# (scripts/opencv_static.sh, for the GPU machine's bundle, which cannot
# carry Debian's 325 MB); the fork is built as above.
ifneq ($(OPENCV_PREFIX),)
HK_OPENCV_LIBS := $(shell PKG_CONFIG_PATH=$(OPENCV_PREFIX)/lib/pkgconfig pkg-config --static --libs opencv4 2>/dev/null)
ifeq ($(HK_OPENCV_LIBS),)
$(error OPENCV_PREFIX=$(OPENCV_PREFIX): no opencv4.pc in its lib/pkgconfig (scripts/opencv_static.sh $(OPENCV_PREFIX) builds one))
endif
HK_OPENCV_CFLAGS := -I$(OPENCV_PREFIX)/include/opencv4
endif
LDLIBS += $(HK_OPENCV_LIBS) -lstdc++ $(if $(filter 1,$(GPU)),-ldl)
endif
ifeq ($(CUDNN),1)
CPPFLAGS += -DCUDNN
LDLIBS += -lcudnn
endif
ifeq ($(NCCL),1)
CPPFLAGS += -DMN_NCCL
LDLIBS += -lnccl
endif

PLUGIN_SRC := $(foreach l,$(filter-out base,$(PLUGIN_LAYERS)),$(wildcard plugin/$(l)/*.c))
# The one place a base is chosen: DARKNET= names its adapter's files (the
# C bases share their struct accessors and parameter lists; hank-ai's C++
# adapter, mn_base_hankai.cpp below, has its own), beside the walk of the
# parameters every base shares.
BASE_SRC_pjreddie := mn_base_pjreddie.c mn_base_net.c mn_base_params.c
BASE_SRC_alexeyab := mn_base_alexeyab.c mn_base_net.c mn_base_params.c
BASE_SRC_hankai :=
PLUGIN_SRC += $(addprefix plugin/base/,mn_net_params.c $(BASE_SRC_$(DARKNET)))
PLUGIN_HDR := plugin/darknet_mn.h $(foreach l,$(PLUGIN_LAYERS),$(wildcard plugin/$(l)/*.h))
PLUGIN_OBJ := $(patsubst plugin/%.c,$(OBJ)/plugin/%.o,$(PLUGIN_SRC))
ifeq ($(DARKNET),hankai)
PLUGIN_OBJ += $(OBJ)/plugin/base/mn_base_hankai.o
endif
ifeq ($(GPU),1)
# The device-side kernels (float16 casts, checks), for the same GPUs as Darknet's build.
NVCC ?= nvcc
ifeq ($(strip $(CUDA_ARCHS)),)
$(error no GPU architecture to build: CUDA_ARCHS is empty ($(CUDA)/bin/nvcc --list-gpu-arch lists none of $(CUDA_WANT_ARCHS)); set CUDA=<the CUDA toolkit> or CUDA_ARCHS=<e.g. 80 90>)
endif
NVFLAGS := -O3 -Xcompiler -fPIC $(CUDA_GENCODE)
PLUGIN_OBJ += $(OBJ)/plugin/transport/mn_kernels.o
endif
LIBMN := $(OBJ)/libdarknet_mn.a
LIBDK := $(DK)/libdarknet.a

.PHONY: all deps darknet test demo bench bench-hankai bench-engine bench-layers bench-loader bench-ranks bench-time-to-map clean distclean gpu-build
all: $(PROG)

# scripts/deps.sh installs (Debian/Ubuntu, as root or with sudo) or checks
# what a goal uses, with this build's choices; make deps-test: the tests' too.
DEPS_ENV = MPICC='$(MPICC)' BLAS=$(BLAS) DARKNET=$(DARKNET) DARKNET_SRC='$(DK_CLONE)' SRC_VAR=$(SRC_VAR) FASHION_IDX='$(FASHION_IDX)' \
           $(foreach v,DNNL CAIRO,$(if $(filter command line environment,$(origin $(v))),$(v)=$($(v))))
.PHONY: deps-test
deps:
	$(DEPS_ENV) ./scripts/deps.sh build $(filter hankai,$(DARKNET))
deps-test:
	$(DEPS_ENV) ./scripts/deps.sh test
$(DEPS_STAMP): scripts/deps.sh
	$(DEPS_ENV) ./scripts/deps.sh build
$(DEMO_DEPS): scripts/deps.sh
	$(DEPS_ENV) ./scripts/deps.sh demo
$(TEST_DEPS): scripts/deps.sh
	$(DEPS_ENV) ./scripts/deps.sh test
$(DL_STAMP):
	$(DEPS_ENV) ./scripts/deps.sh build

ifeq ($(DARKNET),alexeyab)
# The fork's sources (snapshot or the user's clone, never fetched), our patches
# in order; its Makefile builds its objects and its own ./darknet, and the
# library is every object but darknet.o (its main). CUDA 13 has no
# compute_50/52/61, the fork's default ARCH list: CUDA_ARCHS instead.
AB_ARCH ?= $(if $(filter 1,$(GPU)),$(CUDA_GENCODE))
CUDNN_HALF ?= 0
DK_SETTINGS := $(or $(DK_CLONE),$(AB_SNAPSHOT)) GPU=$(GPU) CUDNN=$(CUDNN) CUDNN_HALF=$(CUDNN_HALF) BLAS=$(BLAS) ARCH=$(AB_ARCH)
$(DK)/.patched: $(PATCHES) $(DK_SOURCE) $(DK).settings
	rm -rf $(DK) && mkdir -p $(DK)
	$(if $(DK_CLONE),tar -C $(DK_CLONE) --exclude=.git --exclude=obj -cf - . | tar -C $(DK) -xf -,\
	    tar -C $(DK) --strip-components=1 -xJf $(AB_SNAPSHOT))
	./scripts/apply_patches.sh $(DK) $(or $(DK_CLONE),$(AB_SNAPSHOT)) '$(AB_UPSTREAM)' $(PATCHES)
# Neither the snapshot nor a clone (a clone of darknet-mn has no ../shared).
$(AB_SNAPSHOT):
	@echo "darknet-mn: AlexeyAB's Darknet source is not here ($@): git clone https://github.com/AlexeyAB/darknet <dir>; git -C <dir> checkout $(word 3,$(AB_UPSTREAM)); then make DARKNET=alexeyab ALEXEYAB_SRC=<dir>" >&2; exit 1

# The fork's own ./darknet links -lcuda: where no driver is installed,
# CUDA's stub library stands in (the program runs against the driver's).
$(LIBDK): $(DK)/.patched
	mkdir -p $(DK)/obj
	$(if $(filter 1,$(GPU)),LIBRARY_PATH=$(CUDA)/lib64/stubs$${LIBRARY_PATH:+:$$LIBRARY_PATH}) $(MAKE) -C $(DK) -s $(FORK_JOBS) GPU=$(GPU) CUDNN=$(CUDNN) CUDNN_HALF=$(CUDNN_HALF) OPENCV=0 OPENMP=0 LIBSO=0 AVX=0 BLAS=$(BLAS) \
	    OPTS=-O3 ARCH='$(AB_ARCH)' darknet
	rm -f $@ && ar rcs $@ $$(ls $(DK)/obj/*.o | grep -v '/darknet\.o$$')
else ifeq ($(DARKNET),hankai)
# hank-ai's Darknet: the snapshot or the user's clone (without .git and its own
# build folder), our patches in order, then its CMake in $(HK_BUILD) (not
# "build": its CMake renames a folder of that name in its tree to old_build).
# deps.sh hankai installs cmake, OpenCV and 64-bit OpenBLAS first.
HK_BUILD := $(DK)/build-mn
# The version the fork prints: a clone's own git describe (git run in the
# copy would describe darknet-mn's repository), else the snapshot's.
ifneq ($(DK_CLONE),)
HK_VERSION := $(shell git -C $(DK_CLONE) describe --tags --dirty --long 2>/dev/null)
HK_BRANCH := $(shell git -C $(DK_CLONE) branch --show-current 2>/dev/null)
ifeq ($(HK_VERSION),)
$(error HANKAI_SRC=$(DK_CLONE): git describe --tags names no version there (a clone of hank-ai's Darknet with its tags is needed))
endif
else
HK_VERSION := $(HK_SNAPSHOT_VERSION)
endif
# CUDA_ARCHS as on the other bases: machine code for each, PTX for the newest.
empty :=
space := $(empty) $(empty)
HK_CUDA_ARCH ?= $(subst $(space),;,$(strip $(addsuffix -real,$(CUDA_ARCHS)) $(lastword $(CUDA_ARCHS))))
# Release with DARKNET_HOST_TUNED=OFF (patch 0002) and ENABLE_SSE_AND_AVX=OFF:
# -O3, no -march/-mtune=native, -mavx2, LTO, -Ofast or unsafe math (why:
# docs/hankai.md). No OpenMP (one thread a rank, as the other bases build;
# its pragmas then warn, hence -Wno-unknown-pragmas), no ONNX export;
# compile_commands.json for tests/e2e/run_hankai_build.sh.
HK_CMAKE := -DCMAKE_BUILD_TYPE=Release -DDARKNET_HOST_TUNED=OFF -DENABLE_SSE_AND_AVX=OFF \
            -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=TRUE -DCMAKE_CXX_FLAGS=-Wno-unknown-pragmas -DDARKNET_TRY_ONNX=OFF -DDARKNET_TRY_ROCM=OFF \
            -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DDARKNET_VERSION_STRING=$(HK_VERSION) -DDARKNET_BRANCH_NAME=$(HK_BRANCH)
ifeq ($(GPU),1)
# The fork skips OpenBLAS when it finds CUDA.
HK_CMAKE += -DDARKNET_TRY_CUDA=ON -DCMAKE_CUDA_COMPILER=$(CUDA)/bin/nvcc "-DDARKNET_CUDA_ARCHITECTURES=$(HK_CUDA_ARCH)"
# CUDNN=0: CUDA without cuDNN (patch 0017's cache option; the fork took it wherever found).
HK_CMAKE += -DDARKNET_TRY_CUDNN=$(if $(filter 1,$(CUDNN)),ON,OFF)
else
HK_CMAKE += -DDARKNET_TRY_CUDA=OFF $(if $(filter 0,$(BLAS)),-DDARKNET_TRY_OPENBLAS=OFF)
ifeq ($(BLAS),1)
# The fork includes <cblas-openblas64.h>, a name only Debian's alternatives
# give: a header of that name in its build folder includes the cblas.h
# chosen above, and FindBLAS, which looks for libopenblas64 alone, is given
# OPENBLAS64_ROOT's library.
HK_BLAS64_SHIM := $(abspath $(HK_BUILD))/mn-include
HK_CMAKE += -DCMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES=$(HK_BLAS64_SHIM) $(if $(OPENBLAS64_ROOT),-DBLAS_openblas64_LIBRARY=$(HK_BLAS64_LIB))
endif
endif
# The OpenCV chosen above (its prefix, from OPENCV_ROOT or its opencv4.pc).
HK_CMAKE += $(if $(HK_OPENCV_PREFIX),-DOpenCV_ROOT=$(HK_OPENCV_PREFIX))
DK_SETTINGS := $(or $(DK_CLONE),$(HK_SNAPSHOT)) $(HK_CMAKE)
# The fork's find_path and find_library calls (cuDNN's, FindBLAS's) search
# where a module's CPATH and LIBRARY_PATH point. Not among its settings: a
# module loaded later, for anything, would rebuild the fork from nothing.
HK_CMAKE_RUN = CMAKE_INCLUDE_PATH="$$CPATH" CMAKE_LIBRARY_PATH="$$LIBRARY_PATH" cmake
# The adapter: the fork's headers want its configure (darknet_version.h),
# its -D flags and, with BLAS=1, its <cblas-openblas64.h>.
MPICXX ?= mpicxx
HK_CXXFLAGS := -std=gnu++17 -O3 -g -fPIC -Wall -Wextra -Wno-unused-parameter $(patsubst -I%,-isystem %,$(HK_OPENCV_CFLAGS)) \
               $(if $(HK_BLAS64_SHIM),-isystem $(HK_BLAS64_SHIM))
LIBDK := $(HK_BUILD)/src-lib/libdarknet.a
$(HK_DEPS): scripts/deps.sh
	$(DEPS_ENV) ./scripts/deps.sh build hankai
$(DK)/.patched: $(PATCHES) $(DK_SOURCE) $(DK).settings | $(HK_DEPS)
	rm -rf $(DK) && mkdir -p $(DK)
	$(if $(DK_CLONE),tar -C $(DK_CLONE) --exclude=./.git --exclude=./build -cf - . | tar -C $(DK) -xf -,\
	    tar -C $(DK) --strip-components=1 -xJf $(HK_SNAPSHOT))
	./scripts/apply_patches.sh $(DK) $(or $(DK_CLONE),$(HK_SNAPSHOT)) '$(HK_UPSTREAM)' $(PATCHES)
$(HK_SNAPSHOT):
	@echo "darknet-mn: hank-ai's Darknet source is not here ($@): git clone https://github.com/hank-ai/darknet <dir>; git -C <dir> checkout $(word 3,$(HK_UPSTREAM)); then make DARKNET=hankai HANKAI_SRC=<dir>" >&2; exit 1

# libdarknet.a (patch 0003), the fork's CLI (src-cli/darknet) and its first
# example (src-examples/darknet_01_inference_images).
# Configured first, on its own (make DARKNET=hankai GPU=1 ... $(HK_BUILD)/.configured
# configures a GPU build where no build is wanted); with BLAS=1 the fork
# must have found the 64-bit OpenBLAS, whose library darknet-mn links.
$(HK_BUILD)/.configured: $(DK)/.patched
	$(if $(HK_BLAS64_SHIM),mkdir -p $(HK_BLAS64_SHIM) && printf '#include "%s/cblas.h"\n' $(HK_BLAS64_INC) > $(HK_BLAS64_SHIM)/cblas-openblas64.h)
	$(HK_CMAKE_RUN) -S $(DK) -B $(HK_BUILD) --log-level=ERROR $(HK_CMAKE)
	[ -z "$(HK_BLAS64_SHIM)" ] || grep -q DARKNET_USE_OPENBLAS $(HK_BUILD)/compile_commands.json || \
	    { echo "darknet-mn: hank-ai's CMake (FindBLAS) found no 64-bit OpenBLAS library beside $(HK_BLAS64_INC)/cblas.h: see $(HK_BUILD)/CMakeFiles/CMakeError.log, or make BLAS=0" >&2; exit 1; }
	touch $@
$(LIBDK): $(HK_BUILD)/.configured
	$(MAKE) -C $(HK_BUILD) -s $(FORK_JOBS) darknetstatic darknetcli darknet_01_inference_images
# The fork's CLI from the same patched tree and flags but with OpenMP (its
# CMake finds it when not disabled): the fork's own CPU training, the peer
# of make bench-hankai, as darknet-stock-omp is of make bench.
HK_OMP := $(BUILD)/hankai-omp/src-cli/darknet
$(HK_OMP): $(LIBDK)
	$(HK_CMAKE_RUN) -S $(DK) -B $(BUILD)/hankai-omp --log-level=ERROR $(filter-out -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=TRUE,$(HK_CMAKE))
	grep -q '^OpenMP_CXX_FLAGS:.*openmp' $(BUILD)/hankai-omp/CMakeCache.txt   # found, or the comparison is void
	$(MAKE) -C $(BUILD)/hankai-omp -s $(FORK_JOBS) darknetcli
# Its CLI linked again with this build's OpenCV (OPENCV_PREFIX's static
# one; its CMake links all 60 of Debian's shared modules): the speed row's
# peer in the GPU machine's bundle (scripts/gpu_speed.sh), its GPU build
# on the GPU and its CPU build in the bundle's rehearsal.
HK_CLI := $(OBJ)/darknet-fork
HK_CLI_LIBS := $(if $(filter 1,$(GPU)),-L$(CUDA)/lib64 -lcudart -lcublas -lcublasLt -lcurand $(if $(filter 1,$(CUDNN)),-lcudnn) \
               -L$(CUDA)/lib64/stubs -lcuda,$(if $(filter 1,$(BLAS)),$(HK_BLAS64_LIBS)))
$(HK_CLI): $(LIBDK) $(OBJ)/.settings
	$(CXX) -O3 -rdynamic $(HK_BUILD)/src-cli/CMakeFiles/darknetcli.dir/darknet_cli.cpp.o $(LIBDK) -o $@ \
	    $(HK_CLI_LIBS) $(HK_OPENCV_LIBS) -lpthread -ldl
else
# Unpack Debian's source package (pjreddie's commit; Debian's own patches
# touch only its packaging, OpenCV and paths) or copy the user's clone of
# pjreddie/darknet (DARKNET_SRC), and apply our patches in order.
PJ_ARCH := $(if $(filter 1,$(GPU)),$(CUDA_GENCODE))
DK_SETTINGS := $(if $(DK_CLONE),$(DK_CLONE) )GPU=$(GPU) CUDNN=$(CUDNN) BLAS=$(BLAS)$(if $(PJ_ARCH), ARCH=$(PJ_ARCH))
$(DK)/.patched: $(PATCHES) $(DK_SOURCE) $(DK).settings
	rm -rf $(DK) && mkdir -p $(DK)
	$(if $(DK_CLONE),tar -C $(DK_CLONE) --exclude=./.git --exclude=./obj -cf - . | tar -C $(DK) -xf -,\
	    rmdir $(DK) && dpkg-source -q -x $$(ls third_party/dl/darknet_*.dsc | head -1) $(DK) >/dev/null)
	./scripts/apply_patches.sh $(DK) '$(or $(DK_CLONE),the source package in third_party/dl)' '$(PJ_UPSTREAM)' $(PATCHES)

$(LIBDK): $(DK)/.patched
	$(MAKE) -C $(DK) -s $(FORK_JOBS) GPU=$(GPU) CUDNN=$(CUDNN) BLAS=$(BLAS) OPENCV=0 OPENMP=0 $(if $(PJ_ARCH),ARCH='$(PJ_ARCH)') obj libdarknet.a darknet
endif
darknet: $(LIBDK)

# A build never mixes objects made under other settings. Each of these files
# holds the settings its folder was built with and is rewritten (so newer than
# what was built) only when they change: Darknet's source and switches for
# $(DK), which is then unpacked and built anew; the compiler, flags and
# libraries for $(OBJ), whose objects and programs all depend on it. So a
# change of engine, BLAS, sanitizer or base, or a library that appeared since
# (pkg-config's answer, oneDNN's header), rebuilds what it touches.
OBJ_SETTINGS := $(MPICC) $(CPPFLAGS) $(CFLAGS) $(LDLIBS) $(NVFLAGS)
ifeq ($(DARKNET),hankai)
OBJ_SETTINGS += $(HK_CXXFLAGS)
endif
$(OBJ)/.settings: private TEXT := $(OBJ_SETTINGS)
# The patch list too: a patch removed (no file newer) must unpack the tree anew.
$(DK).settings: private TEXT := $(DK_SETTINGS) patches: $(notdir $(PATCHES))
%.settings: FORCE
	@mkdir -p $(@D)
	@echo '$(TEXT)' | cmp -s - $@ || echo '$(TEXT)' > $@
FORCE:

$(OBJ)/plugin/%.o: plugin/%.c $(PLUGIN_HDR) $(DK)/.patched $(OBJ)/.settings
	@mkdir -p $(dir $@)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The layer engine's per-element loops: nothing here handles floating-point
# traps, and without them GCC may compute both arms of leaky's select and so
# vectorize it (the values are the same).
$(OBJ)/plugin/engine/mn_bn.o $(OBJ)/plugin/engine/mn_loops.o: private CFLAGS += -fno-trapping-math

ifeq ($(DARKNET),hankai)
$(PLUGIN_OBJ) $(OBJ)/main.o: $(LIBDK)
$(OBJ)/plugin/base/mn_base_hankai.o: plugin/base/mn_base_hankai.cpp $(PLUGIN_HDR) $(DK)/.patched $(OBJ)/.settings
	@mkdir -p $(dir $@)
	$(MPICXX) $$(grep -m1 -o '"command": "[^ ]*\( -D[^ ]*\)*' $(HK_BUILD)/compile_commands.json | grep -o ' -D.*') \
	    $(CPPFLAGS) $(HK_CXXFLAGS) -c $< -o $@
endif

$(OBJ)/plugin/transport/mn_kernels.o: plugin/transport/mn_kernels.cu plugin/transport/mn_pack.h $(OBJ)/.settings
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -Iplugin -c $< -o $@

$(LIBMN): $(PLUGIN_OBJ)
	rm -f $@ && ar rcs $@ $^   # from scratch: a moved or renamed source leaves no stale member

$(OBJ)/main.o: main.c plugin/darknet_mn.h $(DK)/.patched $(OBJ)/.settings
	@mkdir -p $(dir $@)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(PROG): $(OBJ)/main.o $(LIBMN) $(LIBDK) $(OBJ)/.settings
	$(MPICC) $(CFLAGS) $(filter-out %.settings,$^) -o $@ $(LDLIBS)
	$(if $(BUILD_NOTES),@echo 'darknet-mn: $(subst ','\'',$(BUILD_NOTES))')

print-layers:
	@echo $(subst $(eval) ,$(comma),$(PLUGIN_LAYERS))
# tests/static/boundary.py --link's arguments for this build: Darknet's library it
# links, then its plugin library and main.o, whose calls into Darknet it checks.
print-link:
	@echo $(LIBDK) $(LIBMN) $(OBJ)/main.o

# The CUDA build only compiles and links on a machine without a GPU.
gpu-build:
	$(MAKE) GPU=1 CUDNN=1 NCCL=1

# The GPU test plan on a machine with a GPU (docs/gpu-check.md): this
# base's GPU build, then scripts/gpu_check.sh (docs/gpu-check.md).
GPU_CHECK_PROG := $(BUILD)/$(if $(filter pjreddie,$(DARKNET)),,$(DARKNET)-)gpu/darknet_mn
.PHONY: gpu-check
gpu-check:
	$(MAKE) GPU=1 CUDNN=1 NCCL=1 DARKNET=$(DARKNET) $(BUILD)/tools/mn_fashion
	$(MAKE) GPU=0 DARKNET=pjreddie $(BUILD)/cpu/tests/mn_wcmp
	$(MAKE) GPU=0 DARKNET=pjreddie $(BUILD)/cpu/tests/mn_shapes
	$(MAKE) GPU=1 CUDNN=1 NCCL=1 DARKNET=$(DARKNET) $(GPU_CHECK_PROG)
	BUILD=$(BUILD) DARKNET=$(DARKNET) PROG=$(GPU_CHECK_PROG) ./scripts/gpu_check.sh

include tools/fashion.mk
include tools/fashion_det.mk
$(BUILD)/tools/mn_fashion: $(DL_STAMP)
include tests/tests.mk
include tests/sanitize/sanitize.mk
include bench/sim/sim.mk

# make install PREFIX=<dir>: the program of the build the same variables
# choose as for make (DARKNET=, GPU=1 ...), the batch script, mn_rerun.sh
# and module files for Lmod and Tcl environment modules, which put
# PREFIX/bin on PATH and name PREFIX to the batch script (scripts/install.sh;
# DESTDIR stages it). A PREFIX holds one build: another build's install
# there is refused before anything is built. make uninstall PREFIX=<dir>
# removes what the install wrote.
PREFIX ?= /usr/local
MODULEFILES ?= $(PREFIX)/share/modulefiles
# The module's version: darknet-mn's and the build's name (0.1.0-cpu, 0.1.0-gpu ...).
MODULE_VERSION ?= $(shell sed -n 's/^\#define MN_VERSION "\(.*\)"$$/\1/p' plugin/core/mn_status.h)-$(notdir $(OBJ))
INSTALL_ENV = PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' MODULEFILES='$(MODULEFILES)' MODULE_VERSION='$(MODULE_VERSION)'
ifneq ($(filter install,$(MAKECMDGOALS)),)
INSTALL_REFUSED := $(shell $(INSTALL_ENV) ./scripts/install.sh check $(notdir $(OBJ)) 2>&1)
ifneq ($(INSTALL_REFUSED),)
$(error $(INSTALL_REFUSED))
endif
endif
.PHONY: install uninstall
install: $(PROG)
	$(INSTALL_ENV) ./scripts/install.sh install $(PROG) $(notdir $(OBJ))
uninstall:
	$(INSTALL_ENV) ./scripts/install.sh uninstall

clean:
	rm -rf $(BUILD) darknet_mn
distclean: clean
	rm -rf third_party/darknet-cpu* third_party/darknet-gpu* third_party/darknet-alexeyab-* third_party/darknet-hankai-* third_party/darknet-stock third_party/darknet-stock-omp third_party/opencv-static*

# Stock Darknet from the same source package, unpatched, its own flags
# (-Ofast): the baseline of make bench; darknet-stock-omp with OpenMP.
STOCK := third_party/darknet-stock/darknet third_party/darknet-stock-omp/darknet
$(STOCK): $(DL_STAMP)
	rm -rf $(@D) && dpkg-source -q -x $$(ls third_party/dl/darknet_*.dsc | head -1) $(@D) >/dev/null
	$(MAKE) -C $(@D) -s $(FORK_JOBS) OPENCV=0 OPENMP=$(if $(findstring -omp,$(@D)),1,0) obj darknet

# AlexeyAB's Darknet as its users build it for a CPU: the snapshot, unpatched,
# with OpenMP (the peer of bench/time_to_map.sh).
AB_STOCK := third_party/darknet-alexeyab-stock-omp/darknet
$(AB_STOCK): $(AB_SNAPSHOT)
	rm -rf $(@D) && mkdir -p $(@D)/obj && tar -C $(@D) --strip-components=1 -xJf $(AB_SNAPSHOT)
	$(MAKE) -C $(@D) -s $(FORK_JOBS) OPENCV=0 OPENMP=1 darknet

# AlexeyAB's Darknet for a GPU, unpatched, with the flags darknet-mn builds
# the fork with (CUDNN_HALF=0, no OpenMP, no OpenCV; CUDA_ARCHS): the peer of
# the GPU speed row (scripts/gpu_speed.sh, packed by scripts/gpu_bundle.sh).
AB_STOCK_GPU := third_party/darknet-alexeyab-stock-gpu/darknet
$(AB_STOCK_GPU): $(AB_SNAPSHOT)
	rm -rf $(@D) && mkdir -p $(@D)/obj && tar -C $(@D) --strip-components=1 -xJf $(AB_SNAPSHOT)
	LIBRARY_PATH=$(CUDA)/lib64/stubs$${LIBRARY_PATH:+:$$LIBRARY_PATH} $(MAKE) -C $(@D) -s $(FORK_JOBS) GPU=1 CUDNN=1 \
	    CUDNN_HALF=0 OPENCV=0 OPENMP=0 LIBSO=0 AVX=0 OPTS=-O3 ARCH='$(CUDA_GENCODE)' darknet

# AlexeyAB's base alone (make test runs it too, through tests/run.sh).
.PHONY: test-alexeyab
test-alexeyab:
	BUILD=$(BUILD) bash tests/suites.sh alexeyab

# hank-ai's base: the fork built and checked, darknet-mn on it (its oneDNN
# engine against the fork's im2col + gemm too), its zoo rows.
# Not in make test, which keeps to the two C bases and its 15 minutes: the
# fork needs OpenCV (a large install) and a C++ build of its own; .ci/run runs
# this after make test.
# Cluster behaviour, root: the build as a user without root on Debian and
# on a system without dpkg and apt (hank-ai's base too, its OpenCV and
# OpenBLAS in prefixes as modules give them), the backup folder's lock and its lease,
# the build and runs with MPICH, mn_rerun.sh on the two-host mpiexec testbed
# (scripts/testbed.sh: a host's ranks killed, gone, silent; the exit
# statuses; host lists) and the Slurm testbed (scripts/slurm.sh: srun,
# batch jobs losing a node, rank 0's node, a silent node, the time limit),
# tests/e2e/run_stop.sh's two sections of seconds-long runs (term-long,
# fewer), and make install's module files loaded with Lmod and Tcl
# environment modules, a batch job on the Slurm testbed running the
# installed program. Apart from make test for its 15 minutes; CI runs it.
.PHONY: test-cluster
test-cluster: $(PROG) $(TEST_BIN)/mn_wcmp $(TEST_BIN)/mn_shapes $(BUILD)/tools/mn_fashion
	BUILD=$(BUILD) TEST_BIN=$(TEST_BIN) bash tests/suites.sh cluster

# The model zoo's rows on both C bases (stock cfgs trained or refused, N x b
# = 1 x N*b on real cfgs; tests/e2e/run_zoo.sh) and the demo
# detectors' learning on both (tests/e2e/run_learn.sh): apart
# from make test for its 15 minutes; CI runs them after make test.
.PHONY: test-zoo
test-zoo: $(PROG) $(TEST_BIN)/mn_wcmp $(BUILD)/tools/mn_fashion $(BUILD)/tools/mn_fashion_det
	BUILD=$(BUILD) TEST_BIN=$(TEST_BIN) bash tests/suites.sh zoo

.PHONY: test-hankai
test-hankai: $(BUILD)/tools/mn_fashion
	BUILD=$(BUILD) bash tests/suites.sh hankai
# Its CUDA build (GPU=1 CUDNN=1; compiles and links).
.PHONY: cuda-archs test-hankai-gpu
# The GPU architectures a GPU build targets here (CUDA_ARCHS, above).
cuda-archs:
	@echo $(CUDA_ARCHS)
test-hankai-gpu:
	BUILD=$(BUILD) bash tests/suites.sh hankai-gpu

bench: $(PROG) $(STOCK) $(BUILD)/fashion/.stamp $(FASHION_DET_OUT)/.stamp
	./bench/run.sh

# Minutes to a working detector against stock pjreddie and AlexeyAB's own
# ./darknet, on a quiet machine: bench/results/time-to-map.txt.
bench-time-to-map:
	./bench/time_to_map.sh

# darknet-mn on hank-ai's base against the fork's own CPU training (OpenMP,
# 2 threads), same cfg, data and global batch: bench/results/hankai-speed.txt.
bench-hankai:
	./bench/hankai.sh

# Where one rank's step goes, layer by layer, against one thread of the
# core's sgemm timed in the same runs (bench step -layers): bench/results/step-layers.txt.
bench-layers: $(PROG)
	./bench/layers.sh
# 2 ranks of real detector training against twice one rank's bench step:
# bench/results/ranks-vs-step.txt.
bench-ranks: $(PROG) $(FASHION_DET_OUT)/.stamp
	./bench/ranks.sh
# How much of a 2-rank detector training goes to loading images, under perf:
# bench/results/loader-share.txt.
bench-loader: $(PROG) $(FASHION_DET_OUT)/.stamp
	./bench/loader.sh
# The gemm calls of a training image, timed through this build's gemm (bench/engine.sh).
$(OBJ)/bench_gemm: bench/gemm_shapes.c $(LIBDK)
	$(MPICC) $(CPPFLAGS) $(CFLAGS) $< $(LIBDK) -o $@ $(LDLIBS)
# The engine's gains (BLAS, the image cache) against BLAS=0 and cache_mb=0: bench/results/engine-*.txt.
bench-engine: $(PROG) $(OBJ)/bench_gemm $(BUILD)/fashion/.stamp $(FASHION_DET_OUT)/.stamp
	$(MAKE) BLAS=0 $(BUILD)/cpu-noblas/darknet_mn $(BUILD)/cpu-noblas/bench_gemm
	./bench/engine.sh

# Every stock cfg of both bases trained on 2 ranks, or refused with a reason (docs/zoo.md);
# make zoo DARKNET=hankai: hank-ai's cfgs alone (its build takes minutes of its own).
.PHONY: zoo
zoo: $(PROG) $(BUILD)/fashion/.stamp $(FASHION_DET_OUT)/.stamp
	BUILD=$(BUILD) ZOO_BASE=$(filter hankai,$(DARKNET)) ./scripts/zoo.sh

# The launcher beside the wrapper: mpicc.mpich -> mpiexec.mpich,
# /opt/mpi/bin/mpicc -> /opt/mpi/bin/mpiexec.
MPIEXEC ?= $(subst mpicc,mpiexec,$(MPICC))
demo: $(PROG) $(BUILD)/fashion/.stamp $(FASHION_DET_OUT)/.stamp
	DARKNET=$(DARKNET) PROG=$(PROG) MPIEXEC='$(MPIEXEC)' ./scripts/demo.sh
