#!/usr/bin/env bash
# Do two builds of the simulator give byte-identical results? Hashes every (scenario, seed)
# run of scenarios/**/*.toml after 3 simulated seconds, and a few (loss, reordering, many
# flows) after 30 s, with examples/digest.rs of the current tree, and compares them with the
# lines a reference build printed (`bench/same-results.sh --save FILE` writes them).
# Usage: bench/same-results.sh [--save] FILE
set -euo pipefail
cd "$(dirname "$0")/.."
save=0
if [[ ${1:-} == --save ]]; then save=1; shift; fi
ref=${1:?usage: bench/same-results.sh [--save] FILE}
cargo build -q --release -p pathpool-sim --example digest
bin=target/release/examples/digest
mapfile -t all < <(find scenarios -name '*.toml' | sort)
long=(scenarios/examples/*.toml scenarios/pluntke2011/*.toml
      scenarios/rsf2020/table2_s3_homogeneous_10pct.toml scenarios/balia2016/table3_friendliness.toml)
out=$({ "$bin" 3 "${all[@]}"; "$bin" 30 "${long[@]}"; })
if (( save )); then
    printf '%s\n' "$out" >"$ref"
    echo "saved $(wc -l <"$ref") digests to $ref"
elif diff <(printf '%s\n' "$out") "$ref"; then
    echo "identical: $(grep -c digest "$ref") runs"
else
    echo "results differ from $ref" >&2
    exit 1
fi
