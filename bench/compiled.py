"""The compiled-path candidate, measured (issue #19): kmock's request-path modules built with
Cython, against the same tree in pure Python, in instructions per round trip (not part of
`make bench`).

    python bench/compiled.py [commit|metadata|produce ...] [--requests N] [--keep DIR]

Copies this tree's tracked files into a temporary directory, compiles MODULES there with
Cython (`cythonize`, the .py files unchanged: Python imports an extension module in preference
to the source beside it), then runs `bench/instructions.py --tree` on this tree and on the
copy for each API. Needs Cython and a C compiler (`pip install cython`; gcc and the Python
headers). The build takes several minutes on a 2-core machine.

Cython compiles unannotated Python as it is (`annotation_typing=False`: the annotations are
the project's, written for mypy, not C types), so what it removes is the interpreter's
dispatch in kmock's own functions; trio, the standard library, dataclasses' generated
`__init__`s and construct's compiled parsers (generated source, exec()ed at run time) stay
interpreted. bench/README.md ("Round 5: a compiled path, measured") has the result.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent

# The modules a commit, a Metadata and a produce round trip spend their bytecodes in
# (`bench/instructions.py --bytecodes`), kmock's own.
MODULES = [
    "protocol/primitives.py",
    "protocol/schema.py",
    "protocol/records.py",
    "protocol/frames.py",
    "protocol/releases.py",
    "coordinator/offsets.py",
    "coordinator/coordinator.py",
    "coordinator/records.py",
    "coordinator/writes.py",
    "coordinator/outcome.py",
    "broker/runtime.py",
    "broker/connection.py",
    "broker/handlers/offset_commit.py",
    "broker/handlers/metadata.py",
    "broker/handlers/produce.py",
    "broker/topics.py",
    "broker/metrics.py",
    "broker/security/enforce.py",
    "broker/coordinator_guard.py",
    "storage/log.py",
    "storage/segment.py",
]

_BUILD = """
import sys
from Cython.Build import cythonize
from setuptools import setup

sys.argv[1:] = ["build_ext", "--inplace", "-j", "2"]
setup(
    ext_modules=cythonize(
        {modules!r},
        language_level=3,
        nthreads=2,
        quiet=True,
        compiler_directives={{"annotation_typing": False, "binding": True}},
    )
)
"""


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / name.decode()
        if src.is_file():
            target = dest / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)


def _instructions(tree: Path, api: str, requests: int) -> int:
    out = subprocess.run(
        [
            sys.executable,
            str(BENCH_DIR / "instructions.py"),
            api,
            "--requests",
            str(requests),
            "--tree",
            str(tree),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # "commit: 599,898 instructions per round trip (/path)"
    return int(out.split(":", 1)[1].split("instructions")[0].strip().replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("apis", nargs="*", default=["commit", "metadata", "produce"])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--keep", type=Path, help="build the copy here and keep it")
    a = ap.parse_args()
    try:
        import Cython
    except ImportError:
        sys.exit("bench/compiled.py needs Cython: pip install cython")
    copy = a.keep or Path(tempfile.mkdtemp(prefix="kmock-compiled-"))
    _copy_tree(copy)
    modules = [m for m in MODULES if (copy / m).exists()]
    build = subprocess.run(
        [sys.executable, "-c", _BUILD.format(modules=modules)],
        cwd=copy,
        capture_output=True,
        text=True,
    )
    if build.returncode != 0:
        sys.exit(f"the Cython build failed:\n{build.stderr[-3000:]}")
    built = sorted(str(p.relative_to(copy)) for p in copy.rglob("*.so") if "build" not in p.parts)
    print(f"Cython {Cython.__version__}: {len(built)} of {len(modules)} modules compiled in {copy}")
    print("| round trip | pure Python | Cython | change |\n|---|---:|---:|---:|")
    for api in a.apis:
        pure = _instructions(ROOT, api, a.requests)
        compiled = _instructions(copy, api, a.requests)
        print(f"| {api} | {pure:,} | {compiled:,} | {(compiled - pure) / pure:+.1%} |")
    if a.keep is None:
        shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    main()
