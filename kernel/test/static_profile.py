#!/usr/bin/env python3
"""Static profile of the pathpool BPF objects' per-ACK path (kernel/build/*.bpf.o).

For each object: the BPF instructions of cong_avoid and of every BPF-to-BPF function it can
reach (the global functions of pp_common.bpf.h / pp_cc_math.h), the number of call sites of
such functions (each call costs a call and a ``ret`` through the return thunk on CPUs with
SRSO "Safe RET"), helper/kfunc calls (map lookups, inlined by the verifier for arrays), and
the divisions. Counts are of the object file (``llvm-objdump -dr``), i.e. before the verifier
inlines array lookups; a count is an upper bound of what one ACK executes, not a trace.

    python3 kernel/test/static_profile.py [kernel/build/pp_lia.bpf.o ...]
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FUNC = re.compile(r"^[0-9a-f]+ <([A-Za-z_][\w.]*)>:$")
INSN = re.compile(r"^\s*(\d+):\s+(.*)$")
RELOC = re.compile(r"R_BPF_64_32\s+(\S+)")


def parse(obj: Path) -> dict[str, dict]:
    out = subprocess.run(["llvm-objdump", "-dr", "--no-show-raw-insn", str(obj)],
                         capture_output=True, text=True, check=True).stdout
    funcs: dict[str, dict] = {}
    cur = None
    last_call = None
    for line in out.splitlines():
        m = FUNC.match(line.strip())
        if m and not m.group(1).startswith("LBB"):
            cur = funcs.setdefault(m.group(1), {"insns": 0, "calls": [], "bpf_calls": 0, "div": 0})
            continue
        if cur is None:
            continue
        r = RELOC.search(line)
        if r and last_call is not None:
            cur["calls"].append(r.group(1))
            last_call = None
            continue
        m = INSN.match(line)
        if not m:
            continue
        text = m.group(2)
        cur["insns"] += 1
        last_call = None
        if text.startswith("call "):
            if text == "call -1":
                last_call = True     # BPF-to-BPF (or kfunc): the relocation names it
            else:
                cur["bpf_calls"] += 1
        if "/=" in text or "%=" in text:
            cur["div"] += 1
    return funcs


def closure(funcs: dict[str, dict], root: str) -> list[str]:
    seen, todo = [], [root]
    while todo:
        f = todo.pop()
        if f in seen or f not in funcs:
            continue
        seen.append(f)
        todo.extend(funcs[f]["calls"])
    return seen


def main(argv: list[str]) -> int:
    objs = [Path(a) for a in argv] or sorted(Path("kernel/build").glob("pp_*.bpf.o"))
    print(f"{'object':<22}{'cong_avoid':>11}{'+ callees':>10}{'call sites':>11}"
          f"{'BPF calls':>10}{'div':>5}  callees")
    for obj in objs:
        funcs = parse(obj)
        root = next((f for f in ("pp_cong_avoid", "mr_cong_avoid") if f in funcs), None)
        if root is None:
            continue
        reach = closure(funcs, root)
        callees = [f for f in reach if f != root]
        print(f"{obj.name:<22}{funcs[root]['insns']:>11}"
              f"{sum(funcs[f]['insns'] for f in callees):>10}"
              f"{sum(len(funcs[f]['calls']) for f in reach):>11}"
              f"{sum(funcs[f]['bpf_calls'] for f in reach):>10}"
              f"{sum(funcs[f]['div'] for f in reach):>5}  "
              + ", ".join(f"{f} {funcs[f]['insns']}" for f in callees))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
