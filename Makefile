# The README's commands. Each target installs missing Debian packages first,
# so a fresh Debian machine needs nothing but `make`.
BUILD ?= build
CONFIG ?= examples/drover.yaml
BUILD_TYPE ?= RelWithDebInfo

.PHONY: all deps build run test bench clean format

all: build

deps:
	@sh scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null
	@cmake --build $(BUILD) -j2

run: build
	$(BUILD)/bin/droverd -c $(CONFIG)

test: build
	cd $(BUILD) && ctest --output-on-failure

bench: build
	sh bench/run_all.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)
