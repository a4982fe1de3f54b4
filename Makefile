# slipway: the two commands a user needs are `make run` and `make test`.
JOBS ?= $(shell nproc)
DATA ?= $(CURDIR)/data
LISTEN ?= 127.0.0.1:6443

.PHONY: all deps build build-san run test unit e2e fuzz clean format

all: build

deps:
	./scripts/install-deps

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j$(JOBS)

# Tests run against the ASan+UBSan build.
build-san:
	cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DSW_SANITIZE=ON >/dev/null
	cmake --build build-san -j$(JOBS)

run: deps build
	./scripts/run-demo "$(DATA)" "$(LISTEN)"

test: deps build build-san
	cd build-san && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j$(JOBS)

unit: build-san
	cd build-san && ctest --output-on-failure -j$(JOBS) -R '^unit/'

e2e: build-san
	cd build-san && ctest --output-on-failure -R '^e2e/'

fuzz:
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSW_FUZZ=ON -DSW_SANITIZE=ON >/dev/null
	cmake --build build-fuzz -j$(JOBS)

format:
	clang-format -i $$(git ls-files 'src/*.[ch]' 'tests/*.[ch]' 'fuzz/*.c')

clean:
	rm -rf build build-san build-fuzz
