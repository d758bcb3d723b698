# Sluice: `make run` starts the gateway on the embedded default; `make test` runs every test.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_GEN  := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")

.PHONY: all build deps run test unit integration e2e asan bench fuzz tidy format clean console deb dist test-deploy test-image-source

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja $(BUILD)/Makefile:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo

# The web console (console/, TypeScript) built into console/dist, which the sluice binary embeds.
CONSOLE_SRC := $(shell find console/src -type f 2>/dev/null) console/index.html console/package.json console/tsconfig.json console/vite.config.ts
console/node_modules/.package-lock.json: console/package-lock.json
	cd console && npm ci --no-audit --no-fund --loglevel=error
console/dist/index.html: console/node_modules/.package-lock.json $(CONSOLE_SRC)
	cd console && npm run build
console: deps console/dist/index.html

build: deps console $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Only what it runs: the gateway, with the console embedded; the tests and benchmarks that
# `make build` and `make test` build are left out (on a clean clone that is most of the build).
run: deps console $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target sluice
	./$(BUILD)/sluice serve $(if $(CONFIG),-c $(CONFIG))

test: build
	bash tests/run.sh $(BUILD)

asan: deps console
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	SLUICE_SANITIZED=1 bash tests/run.sh $(ASAN_BUILD)

bench: build
	SLUICE_BENCH_DEPS=1 bash scripts/install-deps.sh
	bash bench/run.sh

# libFuzzer harnesses (clang, ASan + UBSan), 60 s each; `tests/run.sh` runs them 10 s each.
fuzz:
	bash tests/fuzz/run.sh 60

# clang-tidy cannot read gcc's precompiled headers: give it a compile database without them.
tidy: deps
	cmake -S . -B build-tidy $(CMAKE_GEN) -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DSLUICE_UNITY=OFF -DSLUICE_BENCH=OFF >/dev/null
	run-clang-tidy -quiet -p build-tidy -j $(JOBS) '$(or $(FILES),src/.*[^l]\.cpp$$)' 2>&1 | grep -E 'warning:|error:' | grep -v _impl.cpp || echo "clang-tidy: no findings"

format:
	clang-format -i $(shell git ls-files 'src/*.cpp' 'src/*.hpp' 'tests/*.cpp')

# Release artifacts: `make deb` writes build/sluice_VERSION_ARCH.deb (CPack; Depends computed by
# dpkg-shlibdeps); `make dist` adds build/dist/ with the binary tarball, a CycloneDX SBOM of every
# linked shared library and SHA256SUMS. Both build only the gateway.
deb: deps console $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target sluice
	cd $(BUILD) && cpack -G DEB

dist: deb
	bash scripts/dist.sh $(BUILD)

# The slow deployment checks, after `make test` in CI: the packages built and checked.
test-deploy: dist
	bash tests/deploy/run.sh $(BUILD)

# The image's default build (DEB_FROM=source: the gateway and its console compiled in the build
# stage) checked as test-deploy checks the image; about 20 minutes on 2 cores, so CI, which
# checks the same Dockerfile from the .deb, leaves it out.
test-image-source: deps
	SLUICE_IMAGE_DEB_FROM=source SLUICE_DEPLOY_ONLY=tests/deploy/release/image.test.mjs bash tests/deploy/run.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
