"""Example scenes built in the current .blend file."""

import bpy
import numpy as np

SIDE = 0.45
TOP_CENTRE = (0.0, 0.0)  # (x, z)
BOTTOM_CENTRE = (0.045, -0.495)  # top centre shifted by (0.045, -0.495)
CEILING_START, CEILING_STOP, CEILING_SPEED = 0.27, -0.7, 0.5  # [m], [m], [m/s] downwards
GROUND = -1.0


def _grid_square(name, side, n_seg, centre_xz):
    """n_seg x n_seg quads in the XZ plane (local y = 0), object located at the centre."""
    t = np.linspace(-side / 2, side / 2, n_seg + 1)
    xs, zs = np.meshgrid(t, t)
    verts = np.column_stack([xs.ravel(), np.zeros(xs.size), zs.ravel()])
    i, j = np.meshgrid(np.arange(n_seg), np.arange(n_seg))
    a = (j * (n_seg + 1) + i).ravel()
    quads = np.column_stack([a, a + 1, a + n_seg + 2, a + n_seg + 1])
    return _mesh_object(name, verts, quads, (centre_xz[0], 0.0, centre_xz[1]))


def _mesh_object(name, verts, faces, location, edges=()):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in verts], list(edges), [tuple(map(int, f)) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    return obj


def _set_body(obj):
    s = obj.ipc
    s.role = "BODY"
    s.youngs_modulus, s.poisson_ratio, s.density, s.friction = 1e5, 0.4, 1000.0, 0.4


def _animate_ceiling(obj, scene, fps):
    """Linear descent at CEILING_SPEED from the start frame until CEILING_STOP, then rest."""
    start = scene.frame_start
    stop = start + (CEILING_START - CEILING_STOP) / CEILING_SPEED * fps
    for frame, z in ((start, CEILING_START), (stop, CEILING_STOP)):
        obj.location.z = z
        obj.keyframe_insert("location", index=2, frame=frame)
    from .adapter import fcurves_of

    for fc in fcurves_of(obj):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
        fc.update()
    obj.location.z = CEILING_START


def build_compressing_squares(context, n_seg=8, fps=25, substeps=4, n_frames=61):
    """Two squares (side 0.45 m) in the XZ plane squeezed by a frictionless ceiling that descends
    at 0.5 m/s from z=0.27 to z=-0.7, above a ground line at z=-1. Time step 1/(fps*substeps)
    (0.01 s by default). Returns (top, bottom, ceiling)."""
    scene = context.scene
    collection = scene.collection
    scene.render.fps, scene.render.fps_base = fps, 1.0
    scene.frame_start, scene.frame_end = 1, n_frames
    scene.frame_set(scene.frame_start)
    scene.use_gravity, scene.gravity = True, (0.0, 0.0, -9.81)

    top = _grid_square("IPC_Square_Top", SIDE, n_seg, TOP_CENTRE)
    bottom = _grid_square("IPC_Square_Bottom", SIDE, n_seg, BOTTOM_CENTRE)
    # Ceiling: an 8 m wide slab whose lower edge is the contact surface; wide
    # enough that the square squeezed out sideways stays under it.
    ceiling = _mesh_object(
        "IPC_Ceiling",
        [(-4, 0, 0), (4, 0, 0), (4, 0, 0.1), (-4, 0, 0.1)],
        [(0, 1, 2, 3)],
        (0.0, 0.0, CEILING_START),
    )
    ground = _mesh_object(
        "IPC_Ground_Visual",
        [(-4, 0, -0.1), (4, 0, -0.1), (4, 0, 0), (-4, 0, 0)],
        [(0, 1, 2, 3)],
        (0, 0, GROUND),
    )
    for obj in (top, bottom, ceiling, ground):
        collection.objects.link(obj)
    for obj in (top, bottom):
        _set_body(obj)
    ceiling.ipc.role, ceiling.ipc.friction = "COLLIDER", 0.0
    _animate_ceiling(ceiling, scene, fps)

    s = scene.ipc
    s.plane, s.use_frame_range, s.substeps = "XZ", False, substeps
    s.use_scene_gravity = True
    s.dhat_mode, s.dhat = "ABSOLUTE", 0.01
    s.kappa_auto, s.kappa, s.formulation = False, 1e5, "original"
    s.eps_v, s.newton_tol = 1e-3, 1e-2
    s.use_ground, s.ground_height, s.ground_friction = True, GROUND, 0.4

    context.view_layer.update()  # syncs the view layer with the newly linked objects
    for obj in context.view_layer.objects:
        obj.select_set(obj in (top, bottom))
    context.view_layer.objects.active = top
    return top, bottom, ceiling


def _grid_rect(name, length, width, n_long, n_wide, corner_xz):
    """n_long x n_wide quads, length along X and width along Z, its lower-left corner at
    corner_xz (the object's origin at its centre)."""
    xs, zs = np.meshgrid(
        np.linspace(-length / 2, length / 2, n_long + 1), np.linspace(-width / 2, width / 2, n_wide + 1)
    )
    verts = np.column_stack([xs.ravel(), np.zeros(xs.size), zs.ravel()])
    i, j = np.meshgrid(np.arange(n_long), np.arange(n_wide))
    a = (j * (n_long + 1) + i).ravel()
    quads = np.column_stack([a, a + 1, a + n_long + 2, a + n_long + 1])
    centre = (corner_xz[0] + length / 2, 0.0, corner_xz[1] + width / 2)
    return _mesh_object(name, verts, quads, centre)


def _link_empty(context, name, location, kind, object1, object2=None):
    empty = bpy.data.objects.new(name, None)
    empty.location = location
    empty.empty_display_size = 0.03
    context.scene.collection.objects.link(empty)
    s = empty.ipc_link
    s.kind, s.object1, s.object2 = kind, object1, object2
    return empty


CHAIN_LINK, CHAIN_OVERLAP, CHAIN_WIDTH = 0.3, 0.05, 0.06  # [m]


def _timeline(scene, fps, n_frames):
    """Frames 1..n_frames at fps, at the first frame, with Earth's gravity."""
    scene.render.fps, scene.render.fps_base = fps, 1.0
    scene.frame_start, scene.frame_end = 1, n_frames
    scene.frame_set(scene.frame_start)
    scene.use_gravity, scene.gravity = True, (0.0, 0.0, -9.81)


def _select_bodies(context, bodies, substeps):
    """The scene's settings (XZ plane, scene gravity, no ground) and the bodies selected, the
    first active."""
    s = context.scene.ipc
    s.plane, s.use_frame_range, s.substeps = "XZ", False, substeps
    s.use_scene_gravity, s.use_ground = True, False
    context.view_layer.update()
    for obj in context.view_layer.objects:
        obj.select_set(obj in bodies)
    context.view_layer.objects.active = bodies[0]


def build_chain_in_wind(context, n_links=5, fps=24, substeps=4, n_frames=73):
    """A chain of soft links hinged to a fixed pivot at its left end, starting level, swinging
    down under gravity while a wind from the left blows it into a wall. Each link overlaps the
    next by CHAIN_OVERLAP; a Pin at the middle of each overlap holds them (linked bodies do not
    collide with each other). Returns (links, wall, wind)."""
    scene = context.scene
    _timeline(scene, fps, n_frames)
    pitch = CHAIN_LINK - CHAIN_OVERLAP
    chain = []
    for k in range(n_links):
        obj = _grid_rect(f"IPC_Chain_{k + 1}", CHAIN_LINK, CHAIN_WIDTH, 10, 2, (k * pitch, -CHAIN_WIDTH / 2))
        scene.collection.objects.link(obj)
        _set_body(obj)
        obj.ipc.youngs_modulus, obj.ipc.density = 2e5, 500.0
        chain.append(obj)
    _link_empty(context, "IPC_Pivot", (CHAIN_OVERLAP / 2, 0.0, 0.0), "PIN", chain[0])
    for k in range(1, n_links):
        x = k * pitch + CHAIN_OVERLAP / 2
        _link_empty(context, f"IPC_Hinge_{k}", (x, 0.0, 0.0), "PIN", chain[k - 1], chain[k])
    reach = n_links * pitch + CHAIN_OVERLAP
    # a wall below the level chain, in the arc of its outer links: it swings down into it
    wall = _mesh_object(
        "IPC_Wall",
        [(0, 0, -1.4), (0.1, 0, -1.4), (0.1, 0, 0), (0, 0, 0)],
        [(0, 1, 2, 3)],
        (0.55 * reach, 0, -0.45),
    )
    scene.collection.objects.link(wall)
    wall.ipc.role, wall.ipc.friction = "COLLIDER", 0.3
    bpy.ops.object.effector_add(type="WIND", location=(-0.3, 0.0, -0.4), rotation=(0.0, np.pi / 2, 0.0))
    wind = context.active_object
    wind.name = "IPC_Wind"
    wind.field.strength, wind.field.flow = 6.0, 0.5

    _select_bodies(context, chain, substeps)
    return chain, wall, wind


BOX_WIDTH, BOX_HEIGHT, BOX_WALL = 1.0, 0.45, 0.05  # [m] inside width and height, wall thickness
# (preset, shape, size [m], centre (x, z)): rigid props resting in the box at the start
PROPS = (
    ("WOOD_PROP", "square", 0.16, (-0.38, 0.09)),
    ("METAL_PROP", "disc", 0.07, (-0.17, 0.08)),
    ("STONE", "square", 0.12, (0.0, 0.07)),
    ("PLASTIC_PROP", "disc", 0.08, (0.18, 0.09)),
    ("WOOD_PROP", "square", 0.14, (0.38, 0.08)),
    ("PLASTIC_PROP", "square", 0.1, (-0.3, 0.27)),
    ("METAL_PROP", "disc", 0.06, (-0.08, 0.24)),
    ("WOOD_PROP", "square", 0.12, (0.12, 0.27)),
    ("STONE", "disc", 0.07, (0.33, 0.26)),
)
# (preset, radius [m], centre (x, z), spin [rad/s]): soft characters dropped from above
CHARACTERS = (
    ("JELLY", 0.13, (-0.25, 0.7), 2.0),
    ("PLUSH", 0.11, (0.05, 0.95), -4.0),
    ("RUBBER", 0.1, (0.3, 1.2), 3.0),
)


def _flat_object(name, v, tris, centre_xz):
    """A mesh object in the XZ plane from 2D vertices v (n, 2) about its centre and triangles."""
    verts = np.column_stack([v[:, 0], np.zeros(len(v)), v[:, 1]])
    return _mesh_object(name, verts, tris, (centre_xz[0], 0.0, centre_xz[1]))


def _open_box():
    """The box: one U-shaped face (open at the top), its floor's inside at z = 0."""
    w, h, t = BOX_WIDTH / 2, BOX_HEIGHT, BOX_WALL
    outline = [(-w - t, -t), (w + t, -t), (w + t, h), (w, h), (w, 0), (-w, 0), (-w, h), (-w - t, h)]
    verts = [(x, 0.0, z) for x, z in outline]
    return _mesh_object("IPC_Box", verts, [tuple(range(len(verts)))], (0.0, 0.0, 0.0))


def build_props_in_box(context, fps=24, substeps=2, n_frames=37):
    """Soft characters (three round blobs: jelly, plush, rubber) dropped into an open box of rigid
    props (wooden, plastic and metal blocks and discs, stones), each body set by a preset. The box
    is a collider, its floor's inside at z = 0. Returns (bodies, box): characters first."""
    from . import presets
    from .solver.examples import disc_mesh, square_mesh

    scene = context.scene
    _timeline(scene, fps, n_frames)
    bodies = []
    for k, (preset, radius, centre, spin) in enumerate(CHARACTERS):
        v, t = disc_mesh(radius, 4, n_boundary=32)
        obj = _flat_object(f"IPC_Character_{k + 1}", v, t, centre)
        scene.collection.objects.link(obj)
        obj.ipc.role = "BODY"
        presets.apply(obj.ipc, preset)
        obj.ipc.initial_angular_velocity = spin
        bodies.append(obj)
    for k, (preset, shape, size, centre) in enumerate(PROPS):
        v, t = square_mesh(size, 2) if shape == "square" else disc_mesh(size, 1, n_boundary=12)
        obj = _flat_object(f"IPC_Prop_{k + 1}", v, t, centre)
        scene.collection.objects.link(obj)
        obj.ipc.role = "BODY"
        presets.apply(obj.ipc, preset)
        bodies.append(obj)
    box = _open_box()
    scene.collection.objects.link(box)
    box.ipc.role, box.ipc.friction = "COLLIDER", 0.5

    _select_bodies(context, bodies, substeps)
    return bodies, box
