"""The wheel a user installs carries everything it needs.

Builds the wheel exactly as `make wheel` does (manylinux2014 via zig), installs it into a fresh
virtualenv and runs the commands a new user runs first, from an empty directory outside the
repository. The third-party dependencies are borrowed from the test's own environment through a
.pth file (installing numpy, scipy, pandas... again would only test PyPI); pathpool itself comes
from the wheel alone, which the test checks.

Every documented example runs the same way: each fenced ``sh`` or ``python`` block of README.md
and docs/**/*.md, and the code cells of each docs/**/*.ipynb notebook, in a fresh empty directory
with the wheel's virtualenv first on PATH, so an example that only works in a checkout fails
here. A block whose first line is a comment ``# not run: REASON`` (root, hours of run time, a
checkout's make, a synopsis with placeholders...) is skipped with that reason in the report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Fence languages that are run, and how.
DOC_LANGUAGES = {"sh": "sh", "bash": "sh", "shell": "sh", "console": "sh", "python": "python", "py": "python",
                 "pycon": "python"}
#: First line of a block that is not run; the rest of the line says why.
NOT_RUN = "# not run:"
#: Longest one documented example may take; documentation examples use short runs.
DOC_BLOCK_TIMEOUT_S = 300
#: Commands that change the machine or need a checkout: a block using one must say `# not run:`.
#: The test may run as root, so such a block is refused unrun, not tried.
SYSTEM_COMMAND = re.compile(
    r"^\s*(?:sudo|apt|apt-get|ip|tc|modprobe|sysctl|make|mptcpize|pip|pip3)\b"
    r"|^\s*pathpool\s+(?:kernel|testbed)\b|--backend\s+(?:linux|both)\b|\.venv/",
    re.MULTILINE,
)


@dataclass(frozen=True)
class DocBlock:
    """One runnable example of the documentation."""

    path: str  # relative to the repository
    line: int  # of the opening fence (1-based); 1 for a notebook
    language: str  # "sh" or "python"
    code: str
    skip: str | None  # the reason given after "# not run:", or None

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")


def _skip_reason(code: str) -> str | None:
    first = next((ln.strip() for ln in code.splitlines() if ln.strip()), "")
    if first.lower().startswith(NOT_RUN):
        return first[len(NOT_RUN):].strip() or "no reason given"
    return None


def _markdown_blocks(text: str, rel: str) -> list[DocBlock]:
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m["fence"], m["lang"].lower(), i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence[0] * len(fence)):
            body.append(lines[i].removeprefix(m["indent"]))
            i += 1
        i += 1
        if lang in DOC_LANGUAGES:
            code = "\n".join(body) + "\n"
            blocks.append(DocBlock(rel, start + 1, DOC_LANGUAGES[lang], code, _skip_reason(code)))
    return blocks


def _notebook_block(path: Path, rel: str) -> DocBlock:
    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells]
    # A notebook's magics and shell escapes are no Python; the tutorial is meant to have none.
    code = "\n\n".join(sources) + "\n"
    return DocBlock(rel, 1, "python", code, _skip_reason(sources[0]) if sources else "no code cells")


def doc_blocks(root: Path = ROOT) -> list[DocBlock]:
    """The runnable examples of README.md and docs/ (markdown pages and notebooks), in file order."""
    out: list[DocBlock] = []
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    for page in pages:
        if page.is_file():
            out += _markdown_blocks(page.read_text(encoding="utf-8"), page.relative_to(root).as_posix())
    for nb in sorted((root / "docs").rglob("*.ipynb")):
        out.append(_notebook_block(nb, nb.relative_to(root).as_posix()))
    return out


def _script(block: DocBlock) -> str:
    """The block as a program: prompts (``$ ``, ``>>> ``/``... ``) stripped and their output dropped."""
    lines = block.code.splitlines()
    prompts = ("$ ",) if block.language == "sh" else (">>> ", "... ")
    if any(ln.startswith(prompts) for ln in lines):
        lines = [ln[4:] if ln.startswith((">>> ", "... ")) else ln[2:] for ln in lines if ln.startswith(prompts)]
    return "\n".join(lines) + "\n"


def _sh(cmd: list[str], cwd: Path, env: dict | None = None, timeout: int = 1200) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} -> {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


#: The wheel's kernel part is built only where its toolchain is (root: scripts/install-system-
#: deps.sh); elsewhere the wheel is built without it (WHEEL_KERNEL=0) and that part is not checked.
KERNEL_PART = all(shutil.which(t) for t in ("clang", "bpftool", "llvm-strip")) and \
    Path("/sys/kernel/btf/vmlinux").exists() and Path("/usr/include/bpf/libbpf.h").exists()


@pytest.fixture(scope="module")
def wheel(repo_root, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _sh(["make", "-s", "wheel-only", f"WHEEL_DIR={out}", f"VENV={Path(sys.prefix)}",
         f"WHEEL_KERNEL={int(KERNEL_PART)}"], cwd=repo_root)
    [whl] = out.glob("pathpool-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    _sh([sys.executable, "-m", "venv", str(venv)], cwd=venv)
    py = venv / "bin" / "python"
    site = Path(_sh([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=venv).stdout.strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _sh([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=venv)
    return venv / "bin"


@pytest.mark.slow
def test_wheel_contents_and_platform(wheel):
    assert "manylinux_2_17_x86_64" in wheel.name and "abi3" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("pathpool/scenarios/rsf2020/fig4_bandwidth.toml", "pathpool/scenarios/bench/bench.toml",
                   "pathpool/scenarios/pluntke2011/published.csv", "pathpool/reproduce/published/rsf2020_table2.csv",
                   "pathpool/SCENARIOS.md", "pathpool/py.typed"):
        assert needed in names, needed
    if KERNEL_PART:   # tests/kernel/test_wheel_kernel.py runs it
        for needed in ("pp_loader", "pp_delayfwd", "pp_lia.bpf.o", "pp_minreno.bpf.o"):
            assert f"pathpool/kernel/bin/{needed}" in names, needed
    assert any(n.endswith("licenses/LICENSE-MIT") for n in names)
    assert any(n.endswith("licenses/LICENSE-APACHE") for n in names)


def _user_env(installed: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{installed}:{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.mark.slow
def test_new_user_commands_from_an_empty_directory(installed, tmp_path):
    work = tmp_path / "empty"
    work.mkdir()
    env = _user_env(installed)
    where = _sh([str(installed / "python"), "-c", "import pathpool; print(pathpool.__file__)"], cwd=work, env=env)
    assert where.stdout.startswith(str(installed.parent)), where.stdout  # the wheel's copy, not the checkout's
    pp = str(installed / "pathpool")

    r = _sh([pp, "scenarios", "list"], cwd=work, env=env)
    assert "rsf2020/fig4_bandwidth" in r.stdout.split()

    r = _sh([pp, "reproduce", "khalili", "-n", "1", "--time-scale", "0.05"], cwd=work, env=env)
    rep = work / "report-khalili"
    assert (rep / "index.html").is_file() and (rep / "README.md").is_file()
    timing = json.loads((rep / "results" / "timing.json").read_text())
    assert timing["jobs"] > 0

    r = _sh([pp, "bench", "--json"], cwd=work, env=env)
    doc = json.loads(r.stdout)
    assert doc["scenario"] == "bench" and doc["runs"][0]["data_packets"] > 0

    r = _sh([pp, "ratecontrol", "stream", "--duration", "20", "-o", "stream"], cwd=work, env=env)
    summary = json.loads((work / "stream" / "summary.json").read_text())
    assert summary["mptcp"]["goodput_pps"] > 0

    r = _sh([pp, "run", "examples/two_paths", "--seeds", "1", "-o", "run", "-q"], cwd=work, env=env)
    assert (work / "run" / "flows.parquet").is_file()
    # Besides what was asked for, only the hidden write locks of the result sets (pathpool.atomic).
    assert sorted(p.name for p in work.iterdir() if not p.name.startswith(".")) == ["report-khalili", "run", "stream"]
    assert all(p.name.endswith(".lock") for p in work.iterdir() if p.name.startswith("."))


def test_doc_blocks_are_read_with_their_skip_reasons(tmp_path):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "README.md").write_text(
        "# t\n\n```sh\npathpool --version\n```\n\n```toml\nname = 1\n```\n\n"
        "- item\n\n  ```python\n  import pathpool\n  ```\n\n"
        "````sh\n# not run: needs root\nsudo pathpool kernel load\n```\nstill inside\n````\n")
    (tmp_path / "docs" / "sub" / "page.md").write_text("```console\n$ pathpool scenarios list\nexamples/two_paths\n```\n")
    nb = {"cells": [{"cell_type": "markdown", "source": ["# x"]}, {"cell_type": "code", "source": ["a = 1\n"]},
                    {"cell_type": "code", "source": ["print(a)"]}]}
    (tmp_path / "docs" / "t.ipynb").write_text(json.dumps(nb))
    blocks = doc_blocks(tmp_path)
    assert [(b.id, b.language, b.skip) for b in blocks] == [
        ("README.md:3", "sh", None), ("README.md:13", "python", None), ("README.md:17", "sh", "needs root"),
        ("docs/sub/page.md:1", "sh", None), ("docs/t.ipynb:1", "python", None)]
    assert blocks[1].code == "import pathpool\n"
    assert "still inside" in blocks[2].code
    assert _script(blocks[3]) == "pathpool scenarios list\n"
    assert blocks[4].code == "a = 1\n\n\nprint(a)\n"
    for risky in ("sudo x", "make reproduce", "ip mptcp limits set subflows 8", "  apt-get install clang",
                  "pathpool kernel load", "pip install pathpool-*.whl", "pathpool run s --backend linux",
                  ". .venv/bin/activate"):
        assert SYSTEM_COMMAND.search(risky), risky
    for fine in ("pathpool run examples/two_paths -o r", "pathpool testbeds", "echo make"):
        assert not SYSTEM_COMMAND.search(fine), fine


@pytest.mark.slow
@pytest.mark.parametrize("block", doc_blocks(), ids=lambda b: b.id)
def test_documented_example_runs_from_the_wheel(installed, block, tmp_path):
    if block.skip:
        pytest.skip(f"{block.id}: not run: {block.skip}")
    if block.language == "sh" and (m := SYSTEM_COMMAND.search(_script(block))):
        pytest.fail(f"{block.id}: {m.group(0).strip()!r} changes the machine or needs a checkout; start the block "
                    f"with '{NOT_RUN} REASON' (not run, to be safe)")
    work = tmp_path / "empty"
    work.mkdir()
    script = tmp_path / ("block.sh" if block.language == "sh" else "block.py")
    script.write_text(_script(block), encoding="utf-8")
    cmd = (["bash", "-e", "-o", "pipefail", str(script)] if block.language == "sh"
           else [str(installed / "python"), str(script)])
    r = subprocess.run(cmd, cwd=work, env=_user_env(installed), capture_output=True, text=True,
                       timeout=DOC_BLOCK_TIMEOUT_S, check=False)
    assert r.returncode == 0, (f"{block.id} ({block.language}) failed with exit {r.returncode} in an empty directory "
                               f"with the installed wheel:\n{block.code}\n--- stdout\n{r.stdout[-2000:]}\n"
                               f"--- stderr\n{r.stderr[-3000:]}")
