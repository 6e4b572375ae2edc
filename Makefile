# Thin front over CMake. The two commands of README.md are `make demo` and
# `make check`; both install missing Debian packages first.
BUILD      ?= build
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
CTEST_ARGS ?=

.PHONY: all deps build demo check check-asan check-tsan check-clang check-debug bench install fuzz coverage format clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DGMUX_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

demo: build
	@$(BUILD)/tools/gmux/gmux demo --plot-dir $(BUILD)

# CTEST_ARGS reaches ctest through the environment as given (make does not
# expand it), split at blanks, never read as shell code: a regex needs no
# quotes (CTEST_ARGS="-R (a|b)$"), and quotes around one word are dropped
# (CTEST_ARGS="-R 'a|b'"); no word can hold a blank.
override CTEST_ARGS := $(value CTEST_ARGS)
export CTEST_ARGS
check: build
	@cd $(BUILD) && set -f && set -- && for w in $$CTEST_ARGS; do \
	    case $$w in \'*\'|\"*\") w=$${w#?}; w=$${w%?};; esac; set -- "$$@" "$$w"; done && \
	    ctest --output-on-failure -j$(JOBS) "$$@"

# Sanitizer and clang builds run the same tests in their own build folders,
# with assert() checks on (GMUX_ASSERTS: no -DNDEBUG); `make build` and
# `make check` keep CMake's RelWithDebInfo flags, NDEBUG included.
check-asan:
	@$(MAKE) --no-print-directory check BUILD=build-asan CMAKE_ARGS="-DGMUX_SANITIZE=address -DGMUX_ASSERTS=ON $(CMAKE_ARGS)"

check-tsan:
	@$(MAKE) --no-print-directory check BUILD=build-tsan CMAKE_ARGS="-DGMUX_SANITIZE=thread -DGMUX_ASSERTS=ON $(CMAKE_ARGS)"

check-clang:
	@scripts/install-deps.sh --dev
	@CC=clang $(MAKE) --no-print-directory check BUILD=build-clang CMAKE_ARGS="-DGMUX_ASSERTS=ON $(CMAKE_ARGS)"

# Debug (-O0 -g) with -Werror and asserts: gcc's -Wformat-truncation and
# -Wmaybe-uninitialized see other code unoptimised than at -O2 (two tests
# warned only there), and the tests run unoptimised. CUDA targets are in it,
# their device code compiled with -G (cmake/GmuxCompiler.cmake). Not in
# .ci/run (its time budget); run it by hand.
check-debug:
	@$(MAKE) --no-print-directory check BUILD=build-debug CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Debug -DGMUX_ASSERTS=ON $(CMAKE_ARGS)"

# libFuzzer harnesses (clang); run one with e.g. build-fuzz/tests/common/fuzz_parse -max_total_time=60
fuzz:
	@scripts/install-deps.sh --dev
	@CC=clang cmake -S . -B build-fuzz -DGMUX_FUZZ=ON -DGMUX_ASSERTS=ON -DGMUX_WERROR=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build build-fuzz -j$(JOBS) --target fuzzers

# Line and branch coverage of the tests (clang, llvm-cov) in build-cov/: a
# summary per source file (coverage.txt), per folder (coverage-modules.txt) and
# an HTML report (html/index.html). CTEST_ARGS picks the tests, as for check.
coverage:
	@scripts/install-deps.sh --dev
	@BUILD=build-cov JOBS=$(JOBS) CMAKE_ARGS="$(CMAKE_ARGS)" scripts/coverage.sh

bench: build
	@BUILD=$(BUILD) bench/run.sh

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf build build-asan build-tsan build-clang build-debug build-fuzz build-cov
