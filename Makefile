# The two entry points: `make reproduce` (the main job) and `make test` (every test).
# Both install everything they need into .venv first; nothing is installed by hand.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: install system-deps test lint test-rust test-python reproduce bench kernel

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
	$(VENV)/bin/pathpool reproduce all --out report

bench: install
	$(VENV)/bin/pathpool bench
