#!/usr/bin/env python3
"""Build the add-on zip: ``python build_addon.py`` -> ``dist/blender_ipc-<version>.zip``.

The version is the one line of ``VERSION`` (the manifest and bl_info must repeat it).

Layout (one zip for both install routes)::

    blender_ipc/__init__.py              bl_info  -> legacy add-on (Blender 3.x, 4.x "Install
    blender_ipc/blender_manifest.toml                  legacy add-on"): extracted as a package
    blender_ipc/{adapter,reading,...}.py          manifest -> extension (Blender >= 4.2), which
    blender_ipc/solver/...   (copy of solver/)       accepts all files inside one top folder

scipy: the solver runs without it (numpy-only path; numpy ships with Blender). For an extension
build that bundles scipy, pass ``--wheels DIR``: every ``*.whl`` in DIR is copied to
``blender_ipc/wheels/`` and listed in the manifest's ``wheels = [...]`` (Blender installs them
on extension install; a legacy install ignores them and uses the numpy-only path).
"""

import argparse
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PACKAGE = "blender_ipc"


def _source_files(folder: Path):
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc"}:
            yield path


def read_version() -> str:
    """The release version: the one line of VERSION, which the manifest's ``version`` and
    bl_info's ``"version"`` must repeat (Blender reads both without running our code)."""
    version = (ROOT / "VERSION").read_text().strip()
    manifest = (ROOT / PACKAGE / "blender_manifest.toml").read_text()
    in_manifest = re.search(r'^version\s*=\s*"([^"]+)"', manifest, re.M).group(1)
    init = (ROOT / PACKAGE / "__init__.py").read_text()
    bl_version = ".".join(re.search(r'"version":\s*\((\d+),\s*(\d+),\s*(\d+)\)', init).groups())
    if not version == in_manifest == bl_version:
        raise SystemExit(
            f"version mismatch: VERSION {version}, {PACKAGE}/blender_manifest.toml {in_manifest}, "
            f"bl_info {bl_version}; write the same version in all three"
        )
    return version


def _manifest_with_wheels(wheels) -> str:
    text = (ROOT / PACKAGE / "blender_manifest.toml").read_text()
    if not wheels:
        return text
    listed = ",\n".join(f'  "./wheels/{w.name}"' for w in wheels)
    return text + f"\nwheels = [\n{listed},\n]\n"


def build(out_dir: Path = ROOT / "dist", wheels_dir: Path | None = None) -> Path:
    version = read_version()
    if (ROOT / PACKAGE / "solver").exists():
        raise SystemExit(
            f"{PACKAGE}/solver must not exist in the tree: the build embeds the one copy from solver/"
        )
    wheels = sorted(wheels_dir.glob("*.whl")) if wheels_dir else []
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{PACKAGE}-{version}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in _source_files(ROOT / PACKAGE):
            arc = f"{PACKAGE}/{path.relative_to(ROOT / PACKAGE).as_posix()}"
            if path.name == "blender_manifest.toml":
                zf.writestr(arc, _manifest_with_wheels(wheels))
            else:
                zf.write(path, arc)
        for path in _source_files(ROOT / "solver"):
            zf.write(path, f"{PACKAGE}/solver/{path.relative_to(ROOT / 'solver').as_posix()}")
        for wheel in wheels:
            zf.write(wheel, f"{PACKAGE}/wheels/{wheel.name}")
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder")
    parser.add_argument(
        "--wheels", type=Path, default=None, help="folder of .whl files to bundle for the extension install"
    )
    args = parser.parse_args(argv)
    print(build(args.out, args.wheels))


if __name__ == "__main__":
    sys.exit(main())
