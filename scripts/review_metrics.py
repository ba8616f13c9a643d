"""The review metrics of issue 30, for a before/after table: functions over 60 lines, functions
with more than 7 arguments, functions of McCabe complexity over 12 (ruff's C901), numeric module
constants, and the largest class (lines).

    python3 scripts/review_metrics.py [paths ...]      # default: solver blender_ipc

ruff is taken from the PATH or from .venv-np2/bin/ruff.
"""

import ast
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_files(paths):
    for p in paths:
        for dirpath, _, names in os.walk(os.path.join(ROOT, p)):
            yield from (os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".py"))


def _n_args(fn):
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    n = len([x for x in names if x not in ("self", "cls")])
    return n + (a.vararg is not None) + (a.kwarg is not None)


def _numeric_constant(node):
    if not isinstance(node, ast.Assign | ast.AnnAssign):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    value = node.value
    if isinstance(value, ast.UnaryOp):
        value = value.operand
    numeric = isinstance(value, ast.Constant) and type(value.value) in (int, float)
    return numeric and any(n.isupper() for n in names)


def file_metrics(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    rel = os.path.relpath(path, ROOT)
    long_fns, many_args, classes = [], [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > 60:
                long_fns.append(f"{rel}:{node.name} ({length} lines)")
            if _n_args(node) > 7:
                many_args.append(f"{rel}:{node.name} ({_n_args(node)} args)")
        elif isinstance(node, ast.ClassDef):
            classes.append((node.end_lineno - node.lineno + 1, f"{rel}:{node.name}"))
    constants = sum(_numeric_constant(n) for n in tree.body)
    return long_fns, many_args, constants, classes


def mccabe(paths):
    ruff = shutil.which("ruff") or os.path.join(ROOT, ".venv-np2", "bin", "ruff")
    cmd = [ruff, "check", "--isolated", "--select", "C901", "--config", "lint.mccabe.max-complexity=12"]
    cmd += ["--output-format", "concise", *paths]
    out = subprocess.run(
        cmd, check=False, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ)
    ).stdout
    return [line for line in out.splitlines() if "C901" in line]


def main(argv):
    paths = argv or ["solver", "blender_ipc"]
    long_fns, many_args, constants, classes = [], [], 0, []
    for f in python_files(paths):
        lf, ma, c, cl = file_metrics(f)
        long_fns += lf
        many_args += ma
        constants += c
        classes += cl
    complex_fns = mccabe(paths)
    size, name = max(classes)
    print("| metric | value |\n|---|---|")
    print(f"| functions > 60 lines | {len(long_fns)} |")
    print(f"| functions > 7 arguments | {len(many_args)} |")
    print(f"| McCabe > 12 | {len(complex_fns)} |")
    print(f"| numeric module constants | {constants} |")
    print(f"| largest class | {name} ({size} lines) |")
    for title, rows in (("> 60 lines", long_fns), ("> 7 args", many_args), ("McCabe > 12", complex_fns)):
        print(f"\n{title}:")
        print("\n".join(f"  {r}" for r in rows) or "  none")


if __name__ == "__main__":
    main(sys.argv[1:])
