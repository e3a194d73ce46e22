# rlock: `make run` builds the module and starts redis-server with it;
# `make test` builds and runs every test. Both install missing Debian
# packages first.

CARGO ?= cargo
PORT ?= 6379
# Matches `dir` in redis.conf.
RUN_DIR := target/redis
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps build run test bench lint clean

all: build

# Debian packages: redis-server for running and testing, libclang-dev for
# bindgen (redis-module's bindings), a C toolchain for its C shim.
deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	dpkg -s libclang-dev >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing build-essential"; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust 1.88 or newer (rustup.rs)"; exit 1; }

build: deps
	$(CARGO) build --release -p rlock

run: build
	@mkdir -p $(RUN_DIR)
	@echo "rlock: starting redis-server on redis.conf (port $(PORT), module target/release/librlock.so)"
	@echo "rlock: connect with   redis-cli -p $(PORT)"
	@echo "rlock: then try       RLOCK.ACQUIRE mylock me 30000"
	@echo "rlock: stop with Ctrl-C. Port taken? make run PORT=6380"
	exec redis-server redis.conf --port $(PORT)

test: deps
	$(CARGO) build --workspace
	$(CARGO) test --workspace

# Release builds, servers of its own (AOF off, then on), a markdown report
# on stdout, saved as BENCHMARKS.md. Takes about two minutes.
bench: deps
	$(CARGO) build --release -p rlock -p rlock-bench
	RLOCK_MODULE=$(abspath target/release/librlock.so) target/release/rlock-bench | tee BENCHMARKS.md

lint: deps
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
