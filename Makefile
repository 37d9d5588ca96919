# The README's commands. Each target installs missing Debian packages first,
# so a fresh Debian machine needs nothing but `make`.
BUILD ?= build
CONFIG ?= examples/drover.yaml
BUILD_TYPE ?= RelWithDebInfo

.PHONY: all deps build run test test-asan fuzz image-check bench clean format

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	@sh scripts/build.sh $(BUILD) $(BUILD_TYPE)

run: build
	$(BUILD)/bin/droverd -c $(CONFIG)

# In parallel: the integration tests mostly wait on sockets and processes
# (tests/CMakeLists.txt says which hold a lock); at nproc + 3 the suite kept
# two cores 77% busy (252 s of tests), at nproc + 4 80% (211 s, no test
# slower by more than the noise), so it runs four more than there are
# cores. ctest -L unit (or integration, slow, valgrind, fuzz, structure)
# runs one kind.
test: build
	cd $(BUILD) && ctest --output-on-failure -j$$(( $$(nproc) + 4 ))

# The whole suite under ASan + UBSan (build-asan/); any sanitizer report fails it.
test-asan: deps
	sh scripts/test-asan.sh

# Every libFuzzer target for FUZZ_SECS seconds each (clang, ASan + UBSan, build-fuzz/).
fuzz: deps
	sh scripts/fuzz.sh

# The Dockerfile's two stages in debootstrap'd Debian roots, without Docker (root).
image-check:
	sh scripts/image-check.sh

bench: build
	sh bench/run_all.sh

format:
	sh scripts/format_check.sh . --fix

clean:
	rm -rf $(BUILD)
