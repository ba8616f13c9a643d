"""The Python examples of README.md and docs/solver.md run. A ```python block runs as it is,
in a fresh namespace; a block fenced ```python bpy needs Blender and is only compiled."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = ("README.md", "docs/solver.md", "docs/user_guide.md")
BLOCK = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.M | re.S)


def blocks(name):
    return [(info.strip(), code) for info, code in BLOCK.findall((ROOT / name).read_text())]


@pytest.mark.parametrize("name", FILES)
def test_python_examples_run(name, tmp_path, monkeypatch):
    found = blocks(name)
    assert all(info in ("", "bpy") for info, _ in found), [info for info, _ in found]
    monkeypatch.chdir(tmp_path)  # an example that writes files writes them here
    for i, (info, code) in enumerate(found):
        compiled = compile(code, f"{name} example {i + 1}", "exec")
        if info == "":
            exec(compiled, {"__name__": f"example_{i + 1}"})


def test_the_reference_has_a_runnable_example():
    assert any(info == "" for info, _ in blocks("docs/solver.md"))
