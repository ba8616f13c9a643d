"""The Open Job Description template run for real by `openjd run` (openjd-cli, the reference
runtime of AWS Deadline Cloud's job format): a two-variant friction wedge of the example scene,
baked by Debian's Blender through farm/ipc_bake.py, then three frames of each variant rendered
with Workbench. Checks the files the steps wrote with a separate Blender and a PNG reader."""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

import numpy as np
from conftest import BAKE_SCRIPT, FARM, RENDER_WIDTH, ROOT, blender_facts, output_of, run

sys.path.insert(0, str(ROOT / "scripts"))
import render_filmstrip  # the PNG reader and the body colours of the example camera

TEMPLATE = FARM / "openjd" / "bake_and_render.yaml"
FRAMES = (1, 3)
FRICTIONS = (0.1, 0.8)  # Friction=0.1, FrictionStep=0.7: variant k has 0.1 + (k - 1) * 0.7
BODIES = ("IPC_Square_Bottom", "IPC_Square_Top")


def openjd_exe() -> str:
    exe = Path(sys.executable).with_name("openjd")  # installed by the `farm` extra, next to python
    assert exe.exists(), f"{exe} missing: scripts/setup_env.sh np2 installs openjd-cli (the farm extra)"
    return str(exe)


def test_template_validates(farm_env):
    proc = run([openjd_exe(), "check", TEMPLATE], farm_env)
    assert proc.returncode == 0 and "passes validation" in proc.stdout, output_of(proc)


def test_bake_then_render_wedge(tmp_path, farm_env, addon_zip, example_blend):
    out = tmp_path / "farm out"  # a space in the path: the scripts must quote it
    params = {
        "BlendFile": example_blend,
        "OutputDir": out,
        "BakeScript": BAKE_SCRIPT,
        "AddonZip": addon_zip,
        "FrameStart": FRAMES[0],
        "FrameEnd": FRAMES[1],
        "Variants": len(FRICTIONS),
        "Friction": FRICTIONS[0],
        "FrictionStep": round(FRICTIONS[1] - FRICTIONS[0], 6),
    }
    cmd = [openjd_exe(), "run", TEMPLATE, "--step", "Render", "--run-dependencies"]
    for name, value in params.items():
        cmd += ["-p", f"{name}={value}"]
    proc = run(cmd, farm_env, cwd=tmp_path)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Session ended successfully" in log, output_of(proc)

    n_frames = FRAMES[1] - FRAMES[0] + 1
    n_tasks = len(FRICTIONS) * (1 + n_frames)  # a bake per variant, a render per variant and frame
    # Every Blender of every task quit by itself with exit code 0 (no hang, no kill).
    assert len(re.findall(r"exited with code: 0\b", log)) == n_tasks, log
    assert log.count("Blender quit") == n_tasks, log
    assert log.count("blender-ipc bake: OK") == len(FRICTIONS), log

    for variant, friction in enumerate(FRICTIONS, start=1):
        folder = out / f"variant_{variant}"
        facts = blender_facts(folder / "baked.blend", farm_env)
        check_bake(facts, friction, n_frames)
        check_renders(folder / "frames", facts["resolution"], n_frames)


def check_bake(facts, friction, n_frames):
    assert sorted(facts["bodies"]) == list(BODIES)
    g = -facts["gravity"][2]
    dt = 1.0 / facts["fps"] / 2  # the example scene's 2 substeps per frame
    for name in BODIES:
        body = facts["bodies"][name]
        assert body["friction"] == np.float32(friction), (name, body["friction"])
        assert len(body["keys"]) == n_frames, body["keys"]
        # The squares are 0.2 m apart and fall freely over these frames. Backward Euler (the
        # solver's integrator) from rest gives after n steps a drop of g dt^2 n (n + 1) / 2.
        for k, centroid in enumerate(body["centroids"]):
            n = 2 * k
            drop = body["centroids"][0][2] - centroid[2]
            assert abs(drop - g * dt * dt * n * (n + 1) / 2) < 1e-4, (name, k, drop)


def check_renders(frames_dir, resolution, n_frames):
    pngs = sorted(frames_dir.glob("frame_*.png"))
    assert [p.name for p in pngs] == [f"frame_{f:04d}.png" for f in range(FRAMES[0], FRAMES[1] + 1)]
    assert resolution[0] == RENDER_WIDTH
    for path in pngs:  # the header's width and height (IHDR, bytes 16-24) are the scene's
        assert list(struct.unpack(">II", path.read_bytes()[16:24])) == resolution, path
    images = [render_filmstrip.read_png(str(p)) for p in pngs]
    for path, image in zip(pngs, images, strict=True):
        # Both squares are in the picture in their Workbench colours (first two body colours).
        for color in render_filmstrip.BODY_COLORS[:2]:
            share = np.mean(np.all(np.abs(image.astype(int) - color) <= 8, axis=2))
            assert share > 0.05, (path, color, share)
    # The squares fell between the first and the last frame: the pictures differ.
    assert np.mean(np.any(images[0] != images[-1], axis=2)) > 0.005
