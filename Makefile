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
	$(VENV)/bin/pathpool reproduce all -n 30 --ci-target 0.05 --recovery-reading linux --out report

# The simulator and the real kernel side by side, as report/kernel/ was made (root; real time,
# hours: docs/reproduce.md gives the time it takes). Not part of `reproduce`.
# Kernel: 5 repetitions per cell; the simulator 30 seeds, more where a published quantity's 95%
# CI is wider than 5% of its mean; the agreement table sets the kernel beside the simulator run
# as the test bed runs each scenario (--agreement-reading linux, the default).
KERNEL_REPORT = --only 'table2_s*' --only fig2 --only n1_5 --only n1_15 --only table3 --only table4 \
	--only table5 --only 'balia/fig3' --kernel-x 4 -n 30 --ci-target 0.05 --kernel-seeds 5 \
	--recovery-reading linux
reproduce-kernel: install
	$(MAKE) -C kernel runtime
	$(VENV)/bin/pathpool reproduce all --backend both $(KERNEL_REPORT) --out report-kernel

bench: install
	$(VENV)/bin/pathpool bench

# The wheel users install: manylinux2014 (glibc 2.17), linked with zig from the ziglang package so
# that it does not depend on this machine's newer glibc; abi3, so one wheel for Python >= 3.11.
# Its own target directory keeps the zig-linked build from invalidating the editable one.
WHEEL_DIR ?= dist
wheel: install wheel-only

# The build alone (tests/package/test_wheel.py runs it inside `make test`, after install).
# The kernel part goes in first, as package data (python/pathpool/kernel/bin, not committed):
# the BPF objects compiled here once as CO-RE objects and the loader and delay forwarder linked
# statically against libbpf, libelf and zlib (scripts/install-system-deps.sh), so that
# `sudo pathpool kernel load` needs nothing but the kernel. WHEEL_KERNEL=0 leaves it out.
WHEEL_KERNEL ?= 1
KERNEL_BIN := python/pathpool/kernel/bin
wheel-only:
	rm -rf $(KERNEL_BIN)
	@if [ "$(WHEEL_KERNEL)" != 0 ]; then \
		for t in clang bpftool llvm-strip; do command -v $$t >/dev/null || { echo "make wheel-only: \
	the kernel part needs $$t (scripts/install-system-deps.sh); WHEEL_KERNEL=0 builds a wheel \
	without it" >&2; exit 2; }; done; \
		$(MAKE) -s -C kernel package DEST=$(abspath $(KERNEL_BIN)); fi
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
