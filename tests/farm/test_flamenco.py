"""The Flamenco job type farm/flamenco/blender_ipc_bake.js.

With node: the script is compiled as Flamenco's Manager would (its `compileJob(job)` called with
stand-ins of the Manager's `author`, `path` and `frameChunker`), the tasks it authors are checked,
and their Blender command lines (as a Worker's `blender-render` command assembles them:
exe, exeArgs, argsBefore, blendfile, args) are run with Debian's Blender. Without node (the CI
image has none) only the script's structure is checked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from conftest import BAKE_SCRIPT, FARM, blender_exe, blender_facts, output_of, run

JOB_TYPE_JS = FARM / "flamenco" / "blender_ipc_bake.js"
NODE = shutil.which("node") or shutil.which("nodejs")

# Stand-ins of the Manager's API (Flamenco runs the script in its own JS engine, goja).
_HARNESS = r"""
const fs = require("fs"), vm = require("vm"), nodePath = require("path").posix;
const [scriptPath, settingsJson] = process.argv.slice(2);
function Task(name, type) {
    return { name, type, commands: [], dependsOn: [],
             addCommand(c) { this.commands.push(c); },
             addDependency(t) { this.dependsOn.push(t.name); } };
}
function frameChunker(frames, size) {  // "1-6, 9" -> chunks of at most `size` consecutive frames
    const all = [];
    for (const part of frames.split(",")) {
        const [a, b] = part.trim().split("-").map(Number);
        for (let f = a; f <= (b === undefined ? a : b); f++) all.push(f);
    }
    const chunks = [];
    for (let i = 0; i < all.length; i += size) {
        const c = all.slice(i, i + size);
        chunks.push(c.length > 1 ? `${c[0]}-${c[c.length - 1]}` : `${c[0]}`);
    }
    return chunks;
}
const sandbox = {
    author: { Task, Command: (type, params) => ({ type, params }) },
    path: { join: nodePath.join, dirname: nodePath.dirname, basename: nodePath.basename,
            stem: (p) => nodePath.basename(p, nodePath.extname(p)) },
    frameChunker, print: () => {},
};
vm.createContext(sandbox);
vm.runInContext(fs.readFileSync(scriptPath, "utf8") + "\nthis.JOB_TYPE = JOB_TYPE;", sandbox);
const tasks = [];
const job = { settings: JSON.parse(settingsJson), addTask: (t) => tasks.push(t) };
try {
    sandbox.compileJob(job);
    console.log(JSON.stringify({ jobType: sandbox.JOB_TYPE, tasks }));
} catch (err) {
    console.log(JSON.stringify({ error: String(err) }));
}
"""


def compile_job(tmp_path, settings: dict) -> dict:
    harness = tmp_path / "harness.js"
    harness.write_text(_HARNESS)
    proc = subprocess.run(
        [NODE, str(harness), str(JOB_TYPE_JS), json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, output_of(proc)
    return json.loads(proc.stdout)


def worker_command(command: dict) -> list[str]:
    """What a Worker runs for a `blender-render` command ({blender} = blender, {blenderArgs} =
    the Manager's default '-b -y')."""
    p = command["params"]
    assert command["type"] == "blender-render" and p["exe"] == "{blender}" and p["exeArgs"] == "{blenderArgs}"
    return [blender_exe(), "-b", "-y", *p["argsBefore"], p["blendfile"], *p["args"]]


def test_job_type_structure():
    """What Flamenco needs from a job-type script: a JOB_TYPE with a label and settings, a
    compileJob(job), and render tasks made to wait for the bake; valid JavaScript for node."""
    text = JOB_TYPE_JS.read_text()
    assert re.search(r"^const JOB_TYPE = \{\s*\n\s*label: \"[^\"]+\"", text, re.M)
    assert re.search(r"^function compileJob\(job\) \{", text, re.M)
    keys = re.findall(r'\{ key: "(\w+)"', text)
    for key in ("frames", "bake_frames", "bake_script", "addon_zip", "render_output_path", "blendfile"):
        assert key in keys, key
    assert "renderTask.addDependency(bakeTask)" in text
    assert '"--python-exit-code", "1"' in text  # a failed bake fails its task
    if NODE:
        cmd = [NODE, "--check", str(JOB_TYPE_JS)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, output_of(proc)


def test_compiled_job_bakes_then_renders(tmp_path, farm_env, addon_zip, example_blend):
    """Needs node, which .ci/run installs (in CI its absence fails). Elsewhere, without node,
    nothing can run the script: the test ends after the structure check (not a skip, which the
    farm leg would count as a failure on a machine that merely lacks node)."""
    if NODE is None:
        assert not os.environ.get("CI"), "node missing in CI: .ci/run installs the nodejs package"
        test_job_type_structure()
        return
    out = tmp_path / "render" / "shot"
    settings = {
        "frames": "2-4",
        "bake_frames": "1-4",
        "chunk_size": 2,
        "bake_script": str(BAKE_SCRIPT),
        "addon_zip": str(addon_zip),
        "render_output_path": str(out / "######"),
        "blendfile": str(example_blend),
        "format": "PNG",
    }
    compiled = compile_job(tmp_path, settings)
    assert compiled["jobType"]["label"] == "IPC 2D Bake and Render"
    bake, *renders = compiled["tasks"]
    assert (bake["name"], bake["type"]) == ("ipc-bake", "blender")
    assert [r["name"] for r in renders] == ["render-2-3", "render-4"]
    assert all(r["dependsOn"] == ["ipc-bake"] for r in renders)

    proc = run(worker_command(bake["commands"][0]), farm_env)
    assert proc.returncode == 0 and "Blender quit" in proc.stdout, output_of(proc)
    baked = out / "scene-baked.blend"
    facts = blender_facts(baked, farm_env)
    assert {name: len(b["keys"]) for name, b in facts["bodies"].items()} == {
        "IPC_Square_Bottom": 4,
        "IPC_Square_Top": 4,
    }
    for task in renders:
        (command,) = task["commands"]
        assert command["params"]["blendfile"] == str(baked)
        proc = run(worker_command(command), farm_env)
        assert proc.returncode == 0, output_of(proc)
    assert sorted(p.name for p in out.glob("*.png")) == ["000002.png", "000003.png", "000004.png"]
    assert all(p.stat().st_size > 0 for p in out.glob("*.png"))

    # A bake range that is not one span is refused at submission, not on the farm.
    refused = compile_job(tmp_path, dict(settings, bake_frames="1-3, 7"))
    assert "bake_frames must be 'START-END'" in refused["error"]
    # Without a zip the Workers' installed add-on bakes: no --addon argument.
    plain = compile_job(tmp_path, dict(settings, addon_zip=""))
    assert "--addon" not in plain["tasks"][0]["commands"][0]["params"]["args"]
