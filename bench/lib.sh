# Shared by htsim.sh, ab.sh and versus.sh (sourced, not run).

# bench_toml ROOT N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS OUT: scenarios/bench/bench.toml with
# N_FLOWS flows (a third per flow group), bottlenecks of RATE_GBPS with BUFFER_PKTS buffers,
# SECONDS simulated; exits 2 if bench.toml no longer has the shape the substitutions expect.
bench_toml() {
    local root=$1 n=$2 gbps=$3 secs=$4 buf=$5 out=$6
    local per=$((n / 3))
    sed -e "s/^count = 40$/count = $per/" -e "s/^rate = \"1Gbps\"$/rate = \"${gbps}Gbps\"/" \
        -e "s/^duration = \"30s\"$/duration = \"${secs}s\"/" -e "s/^buffer = \"1000pkt\"$/buffer = \"${buf}pkt\"/" \
        "$root/scenarios/bench/bench.toml" >"$out"
    local want
    for want in "count = $per" "rate = \"${gbps}Gbps\"" "duration = \"${secs}s\"" "buffer = \"${buf}pkt\""; do
        grep -qxF "$want" "$out" || { echo "scenarios/bench/bench.toml changed shape: no '$want'" >&2; exit 2; }
    done
}

# build_htsim HTSIM_CHECKOUT HERE OUT: htsim's library (g++ -O2, if missing) and
# HERE/htsim_bench.cpp linked against it, as OUT.
build_htsim() {
    local htsim=$1 here=$2 out=$3
    if [[ ! -f $htsim/sim/libhtsim.a ]]; then
        make -s -C "$htsim/sim" -j2 libhtsim.a CFLAGS="-Wall -std=c++11 -O2 -fPIE" >/dev/null
    fi
    g++ -O2 -std=c++11 -I"$htsim/sim" "$here/htsim_bench.cpp" "$htsim/sim/libhtsim.a" -o "$out"
}
