// SPDX-License-Identifier: GPL-3.0-or-later
//
// blender-ipc: Flamenco job type "IPC 2D Bake and Render".
//
// One task bakes the IPC 2D simulation of the submitted .blend with farm/ipc_bake.py (headless,
// synchronous, quits cleanly, exits non-zero with the message when the bake fails) and writes
// <output dir>/<blend name>-baked.blend; the render tasks, which depend on it, render that baked
// file in chunks of frames. Install: copy this file into the `scripts` folder next to the
// flamenco-manager executable and restart the Manager (docs/farm.md).

const JOB_TYPE = {
    label: "IPC 2D Bake and Render",
    description: "Bake the blender-ipc simulation of the file, then render the baked frames",
    settings: [
        // Settings for artists to determine:
        { key: "frames", type: "string", required: true,
          eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
          description: "Frames to render. Examples: '47', '1-30', '3, 5-10, 47-327'" },
        { key: "bake_frames", type: "string", required: true,
          eval: "'%d-%d' % ((C.scene.ipc.frame_start, C.scene.ipc.frame_end) if C.scene.ipc.use_frame_range else (C.scene.frame_start, C.scene.frame_end))",
          description: "Frames to bake, 'START-END' (the add-on's bake range)" },
        { key: "chunk_size", type: "int32", default: 1, visible: "submission",
          description: "Number of frames to render in one Blender render task" },
        { key: "bake_script", type: "string", subtype: "file_path", required: true, visible: "submission",
          description: "farm/ipc_bake.py of blender-ipc, on storage the Workers can read" },
        { key: "addon_zip", type: "string", subtype: "file_path", default: "", visible: "submission",
          description: "The add-on zip to bake with; empty: the add-on installed on the Workers" },
        { key: "render_output_root", type: "string", subtype: "dir_path", required: true, visible: "submission",
          description: "Base directory of the output; the job name is appended to it" },
        { key: "render_output_path", type: "string", subtype: "file_path", editable: false,
          eval: "str(Path(abspath(settings.render_output_root), jobname, '######'))",
          description: "Where the frames are written (the baked .blend goes next to them)" },

        // Automatically evaluated settings:
        { key: "blendfile", type: "string", required: true, visible: "web",
          description: "Path of the Blend file to bake" },
        { key: "format", type: "string", required: true, visible: "web",
          eval: "C.scene.render.image_settings.file_format" },
    ]
};

function compileJob(job) {
    const settings = job.settings;
    const outputDir = path.dirname(settings.render_output_path);
    const bakedFile = path.join(outputDir, `${path.stem(settings.blendfile)}-baked.blend`);

    const bakeTask = authorBakeTask(settings, bakedFile);
    job.addTask(bakeTask);
    for (const renderTask of authorRenderTasks(settings, bakedFile)) {
        renderTask.addDependency(bakeTask); // renders read the baked file
        job.addTask(renderTask);
    }
}

// The bake range must be one span: a bake is one simulation from its first frame on.
function checkBakeFrames(frames) {
    const match = /^\s*(-?\d+)\s*-\s*(-?\d+)\s*$/.exec(frames);
    if (!match || Number(match[2]) <= Number(match[1])) {
        throw `bake_frames must be 'START-END' with END after START, not "${frames}"`;
    }
    return `${Number(match[1])}-${Number(match[2])}`;
}

function authorBakeTask(settings, bakedFile) {
    const args = [
        "--python-exit-code", "1",
        "--python", settings.bake_script,
        "--", // the rest is for ipc_bake.py
        "--output", bakedFile,
        "--frames", checkBakeFrames(settings.bake_frames),
    ];
    if (settings.addon_zip) {
        args.push("--addon", settings.addon_zip);
    }
    const task = author.Task("ipc-bake", "blender");
    task.addCommand(author.Command("blender-render", {
        exe: "{blender}",
        exeArgs: "{blenderArgs}",
        argsBefore: ["--factory-startup"],
        blendfile: settings.blendfile,
        args: args,
    }));
    return task;
}

function authorRenderTasks(settings, bakedFile) {
    const tasks = [];
    for (const chunk of frameChunker(settings.frames, settings.chunk_size)) {
        const task = author.Task(`render-${chunk}`, "blender");
        task.addCommand(author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: [],
            blendfile: bakedFile,
            args: [
                "--render-output", settings.render_output_path,
                "--render-format", settings.format,
                "--render-frame", chunk.replace("-", ".."), // Blender's range notation
            ],
        }));
        tasks.push(task);
    }
    return tasks;
}
