"""Version numbers come from one place: VERSION. pyproject.toml derives it; the add-on's manifest
and bl_info must repeat it as literals (Blender reads them without running our code), and so
must the solver's ``__version__`` and the newest release of CHANGELOG.md."""

import ast
import re
import sys
from pathlib import Path

import tomllib

import solver

ROOT = Path(__file__).resolve().parents[2]
VERSION = (ROOT / "VERSION").read_text().strip()


def test_version_is_one_semantic_version_line():
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION
    assert (ROOT / "VERSION").read_text() == VERSION + "\n"


def test_pyproject_derives_the_version_from_the_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"file": "VERSION"}


def test_manifest_bl_info_and_solver_repeat_it():
    manifest = tomllib.loads((ROOT / "blender_ipc" / "blender_manifest.toml").read_text())
    assert manifest["version"] == VERSION
    tree = ast.parse((ROOT / "blender_ipc" / "__init__.py").read_text())
    (bl_info,) = (
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["bl_info"]
    )
    assert ".".join(map(str, bl_info["version"])) == VERSION
    assert solver.__version__ == VERSION


def test_build_reads_the_same_version():
    sys.path.insert(0, str(ROOT))
    try:
        import build_addon
    finally:
        sys.path.remove(str(ROOT))
    assert build_addon.read_version() == VERSION


def test_changelog_newest_release_is_the_version():
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == VERSION


def test_docs_name_the_current_zip():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for named in re.findall(r"blender_ipc-(\d+\.\d+\.\d+)\.zip", path.read_text()):
            assert named == VERSION, f"{path.relative_to(ROOT)} names blender_ipc-{named}.zip"
