# The two entry points: `make reproduce` (the main job) and `make test` (every test).
# Both install everything they need into .venv first; nothing is installed by hand.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: install system-deps test lint test-rust test-python reproduce reproduce-kernel bench kernel wheel wheel-only docs scenarios-md

# System packages (clang, bpftool, libbpf, nftables) for the kernel/BPF part; skipped when not root.
system-deps:
	@bash scripts/install-system-deps.sh

install: system-deps
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PIP) install -q -U pip
	$(PIP) install -q -e '.[dev]'

test: install lint kernel test-rust test-python

# Formatting and lints stay at zero findings: rustfmt, clippy (all targets, warnings are errors), ruff.
lint:
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release -- -D warnings
	$(VENV)/bin/ruff check python tests

# BPF congestion controls, their loader, the delay forwarder and the fixed-point host test
# (kernel/build/). Without clang/bpftool (not root) only the host test is built; the kernel
# tests then skip, saying why.
kernel:
	@if command -v clang >/dev/null && command -v bpftool >/dev/null && [ -e /sys/kernel/btf/vmlinux ]; \
	then $(MAKE) -s -C kernel all; \
	elif [ -e /usr/include/jansson.h ]; then $(MAKE) -s -C kernel host-test; fi

test-rust:
	cargo test --workspace --exclude pathpool-py --release

test-python:
	$(PY) -m pytest

reproduce: install
	$(VENV)/bin/pathpool reproduce all --seeds 30 --ci-target 0.05 --recovery-reading linux --out report

# The simulator and the real kernel side by side (root; real time, see
# python/pathpool/reproduce/README.md for the time it takes). Not part of `reproduce`: hours of
# real traffic are not a reasonable first command.
reproduce-kernel: install
	$(MAKE) -C kernel runtime
	$(VENV)/bin/pathpool reproduce all --backend both --seeds 30 --kernel-seeds 3 --recovery-reading linux --out report-kernel

bench: install
	$(VENV)/bin/pathpool bench

# The wheel users install: manylinux2014 (glibc 2.17), linked with zig from the ziglang package so
# that it does not depend on this machine's newer glibc; abi3, so one wheel for Python >= 3.11.
# Its own target directory keeps the zig-linked build from invalidating the editable one.
WHEEL_DIR ?= dist
wheel: install wheel-only

# The build alone (tests/package/test_wheel.py runs it inside `make test`, after install).
wheel-only:
	PATH=$(abspath $(VENV))/bin:$$PATH CARGO_TARGET_DIR=target/wheel $(VENV)/bin/maturin build --release \
		--zig --compatibility manylinux2014 -o $(WHEEL_DIR)

# The documentation site (mkdocs material + mkdocstrings) into target/site; tests/package/test_docs.py
# builds it the same way with --strict inside `make test`.
docs: install scenarios-md
	$(VENV)/bin/mkdocs build --strict

# SCENARIOS.md's field tables, regenerated from the validator's schema (config/schema.rs);
# tests/package/test_scenario_reference.py fails when the committed file is stale.
scenarios-md:
	$(PY) -m pathpool.sim.reference --write crates/pathpool-sim/SCENARIOS.md
