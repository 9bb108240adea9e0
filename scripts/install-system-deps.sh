#!/usr/bin/env bash
# Debian packages the kernel/BPF part needs. Idempotent; does nothing when already present, and
# only warns (the kernel tests then skip, saying why) when it cannot install as non-root.
set -euo pipefail
need=()
command -v clang >/dev/null || need+=(clang llvm)
command -v bpftool >/dev/null || need+=(bpftool)
[[ -e /usr/include/bpf/libbpf.h ]] || need+=(libbpf-dev)
# The wheel's statically linked loader (make -C kernel package): libbpf.a, libelf.a, libz.a and
# libc.a come with libbpf-dev, libelf-dev, zlib1g-dev and libc6-dev; llvm-strip with llvm.
[[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
command -v llvm-strip >/dev/null || need+=(llvm)
command -v nft >/dev/null || need+=(nftables)
command -v ip >/dev/null || need+=(iproute2)
command -v tc >/dev/null || need+=(iproute2)
command -v ss >/dev/null || need+=(iproute2)                # test bed teardown: ss -K
command -v nsenter >/dev/null || need+=(util-linux)         # cleanup test: a deleted namespace
[[ -e /usr/include/libelf.h ]] || need+=(libelf-dev)
[[ -e /usr/include/zlib.h ]] || need+=(zlib1g-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
[[ -e /usr/include/jansson.h ]] || need+=(libjansson-dev)   # kernel/test/host_test.c
command -v ethtool >/dev/null || need+=(ethtool)            # test bed: offloads off on veths
command -v iperf3 >/dev/null || need+=(iperf3)              # kernel tests: an unmodified app
command -v mptcpize >/dev/null || need+=(mptcpize)         # MPTCP for that app (mptcpd project)
if ((${#need[@]} == 0)); then exit 0; fi
if [[ $(id -u) != 0 ]]; then
  echo "install-system-deps: not root; missing ${need[*]} (kernel tests will skip)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
