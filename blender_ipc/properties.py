"""Property groups: ``Object.ipc`` (role, material, bake record) and ``Scene.ipc`` (settings).

Only data definitions live here; reading them into solver arrays is the adapter's job.
"""

import bpy
from bpy.props import (
    BoolProperty,
    BoolVectorProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)


def _frame_range_update(self, context):
    """Switched on: the custom range starts as the scene's (start, end), which is what was baked
    so far, unless it was set before."""
    scene = getattr(context, "scene", None)
    if self.use_frame_range and scene is not None and not self.is_property_set("frame_start"):
        self.frame_start, self.frame_end = scene.frame_start, scene.frame_end


class IPC_ObjectSettings(bpy.types.PropertyGroup):
    role: EnumProperty(
        name="Role",
        description="What the simulation does with this object: nothing, simulate it as an elastic "
        "body, or use it as an animated obstacle",
        default="NONE",
        items=[
            ("NONE", "None", "Ignored by the simulation"),
            ("BODY", "Deformable Body", "Flat mesh simulated as an elastic 2D body"),
            ("COLLIDER", "Collider", "Animated obstacle: its edges follow the object's motion"),
        ],
    )
    body_type: EnumProperty(
        name="Type",
        description="How a body moves: deformable (elastic, 2 unknowns per vertex), rigid "
        "(one rigid motion for the whole body, far cheaper) or stiff (one motion plus a few "
        "bending modes)",
        default="DEFORMABLE",
        items=[
            ("DEFORMABLE", "Deformable", "Elastic body: bends and squashes under its material"),
            ("RIGID", "Rigid", "Moves as one piece; the material's stiffness is not used"),
            (
                "STIFF",
                "Stiff",
                "Moves as one piece plus its lowest bending modes under its material: "
                "bends visibly at a fraction of a deformable body's cost",
            ),
        ],
    )
    modes: IntProperty(
        name="Modes",
        description="How many bending modes a stiff body has (its softest ways to bend, from its "
        "shape and material), plus the shapes the 6 softest take when they bend far: more bend "
        "more finely and cost more",
        default=6,
        min=1,
        max=32,
    )
    youngs_modulus: FloatProperty(
        name="Young's Modulus",
        description="Stiffness E [Pa]",
        default=1.0e5,
        min=1.0,
        soft_max=1e9,
    )
    poisson_ratio: FloatProperty(
        name="Poisson Ratio",
        description="How much the body bulges sideways when compressed (0.5: incompressible)",
        default=0.4,
        min=-0.99,
        max=0.499,
    )
    density: FloatProperty(name="Density", description="Mass per area [kg/m^2]", default=1000.0, min=1e-6)
    friction: FloatProperty(
        name="Friction",
        description="Coulomb friction coefficient while sliding (kinetic)",
        default=0.4,
        min=0.0,
        soft_max=2.0,
    )
    use_static_friction: BoolProperty(
        name="Static Friction",
        description="Use a separate, higher friction coefficient while a contact sticks "
        "(off: the same as Friction)",
        default=False,
    )
    static_friction: FloatProperty(
        name="Static Friction",
        description="Coulomb friction coefficient while a contact sticks: a contact starts to "
        "slide when its tangential force exceeds this times its normal force (at least Friction)",
        default=0.6,
        min=0.0,
        soft_max=2.0,
    )
    initial_velocity: FloatVectorProperty(
        name="Initial Velocity",
        description="Velocity of the body at the start frame, in the simulation plane "
        "(horizontal, vertical) [m/s]: throws it without keyframes. Baked from a later Start "
        "Frame, a body moved by its animation there carries on with the animation's velocity "
        "(the motion from the frame before), and this is added to it",
        size=2,
        default=(0.0, 0.0),
        subtype="VELOCITY",
        unit="VELOCITY",
    )
    initial_angular_velocity: FloatProperty(
        name="Initial Spin",
        description="Angular velocity of the body at the start frame about its centre [rad/s], "
        "counter-clockwise in the plane's view (front for XZ, top for XY). Added to the spin "
        "an animated body has at a later Start Frame",
        default=0.0,
        soft_min=-100.0,
        soft_max=100.0,
    )
    pin_group: StringProperty(
        name="Pinned Group", description="Vertex group whose vertices follow the object's own animation"
    )
    stiffness_group: StringProperty(
        name="Stiffness Group",
        description="Painted vertex group scaling Young's Modulus: each triangle's between Stiffness "
        "Min (weight 0) and Stiffness Max (weight 1), by the mean weight of its vertices",
    )
    stiffness_min: FloatProperty(
        name="Stiffness Min",
        description="Young's Modulus factor at weight 0",
        default=1.0,
        min=1e-3,
        soft_max=10.0,
    )
    stiffness_max: FloatProperty(
        name="Stiffness Max",
        description="Young's Modulus factor at weight 1",
        default=1.0,
        min=1e-3,
        soft_max=10.0,
    )
    collision_groups: BoolVectorProperty(
        name="Collision Groups",
        description="The groups it is in (as Rigid Body Collision Collections): it collides with "
        "the bodies and colliders sharing one of them",
        size=20,
        subtype="LAYER_MEMBER",
        default=(True,) + (False,) * 19,
    )
    pin_strength: EnumProperty(
        name="Pin Strength",
        description="How the Pinned Group follows the object's animation",
        default="HARD",
        items=[
            ("HARD", "Hard", "The pinned vertices follow the animation exactly"),
            (
                "PULL",
                "Pull",
                "The pinned vertices are pulled towards the animation by a spring (as Soft Body's goal)",
            ),
        ],
    )
    pin_stiffness: FloatProperty(
        name="Pull Stiffness",
        description="Stiffness of the spring pulling each pinned vertex to its animated place [N/m]",
        default=1000.0,
        min=0.0,
        soft_max=1e6,
    )
    pin_engaged: BoolProperty(
        name="Engaged",
        description="The pins hold (keyframe it: released at a frame the vertices go free; "
        "engaged again they are pulled back)",
        default=True,
    )
    # Bake record (written by the bake, read by the panel and Delete Bake).
    is_baked: BoolProperty(default=False, options={"HIDDEN"}, description="The object holds an IPC bake")
    bake_hash: StringProperty(
        options={"HIDDEN"}, description="Input signature of the bake (compared to mark it outdated)"
    )
    bake_frame_start: IntProperty(options={"HIDDEN"}, description="First baked frame")
    bake_frame_end: IntProperty(options={"HIDDEN"}, description="Last baked frame")
    bake_frame_goal: IntProperty(
        options={"HIDDEN"},
        description="End frame the bake was started for: after the last baked frame when the "
        "bake was stopped early (Stop and Keep, or a kept partial bake)",
    )
    bake_partial: BoolProperty(
        default=False, options={"HIDDEN"}, description="The bake stopped at a solver failure (frames kept)"
    )
    bake_message: StringProperty(options={"HIDDEN"}, description="Why the bake stopped early, if it did")


class IPC_ColliderStat(bpy.types.PropertyGroup):
    """How one collider followed its animation in the last bake (``name``: the object)."""

    lag: FloatProperty(
        name="Lag",
        description="Largest distance by which the collider stayed behind its animation, "
        "blocked by the bodies [m]",
        unit="LENGTH",
    )
    distance: FloatProperty(
        name="Distance as Animated",
        description="Smallest distance between the bodies and the collider at its animated "
        "position [m]; negative: the bodies overlap it by that much",
        unit="LENGTH",
    )
    near: BoolProperty(
        name="Near",
        description="The collider came within reach of the contact gap (else Distance is unset)",
    )
    lag_frames: StringProperty(
        name="Lag Frames",
        description="Frames in which the collider lagged behind its animation by more than the "
        "contact gap d\u0302, e.g. '37-61'",
    )
    overlap_frames: StringProperty(
        name="Overlap Frames",
        description="Frames in which the bodies overlap the collider at its animated position",
    )


class IPC_SceneSettings(bpy.types.PropertyGroup):
    plane: EnumProperty(
        name="Plane",
        description="World plane the flat meshes lie in and move in",
        default="XZ",
        items=[
            ("XZ", "XZ (front)", "Simulate in the XZ plane, gravity along -Z"),
            ("XY", "XY (top)", "Simulate in the XY plane"),
        ],
    )
    use_frame_range: BoolProperty(
        name="Custom Frame Range",
        description="Bake these frames instead of the scene's frame range (switching it on starts "
        "from the scene's range)",
        default=False,
        update=_frame_range_update,
    )
    frame_start: IntProperty(
        name="Start Frame",
        description="First frame of the bake: each body starts from its mesh as modelled, placed "
        "where its animation puts it at this frame, moving as its animation moves it there (after "
        "the scene's first frame: the motion from the frame before) plus its Initial Velocity and "
        "Spin; colliders and pins "
        "follow their animation from this frame on. Frames before it are not changed by the bake "
        "(the bodies show their meshes there)",
        default=1,
    )
    frame_end: IntProperty(
        name="End Frame",
        description="Last frame to bake (a finished bake can be continued to a later one)",
        default=100,
    )
    substeps: IntProperty(name="Substeps", description="Time steps per frame", default=4, min=1, soft_max=50)
    refine_crossing_frames: BoolProperty(
        name="Refine Crossing Frames",
        default=False,
        description="Compute a frame again with 2x, then 4x the substeps when the straight motion "
        "from the frame before passes one object through another (what motion blur shows)",
    )
    use_deactivation: BoolProperty(
        name="Deactivation",
        default=False,
        description="Let bodies that have stayed still for a while sleep, as Blender's Rigid Body "
        "Deactivation: a still pile is held where it is until something touches it or its forces "
        "change, and costs almost nothing per frame. A sleeping body misses motion slower than "
        "the Newton Tolerance (a slow creep)",
    )
    use_scene_gravity: BoolProperty(
        name="Scene Gravity", default=True, description="Use the scene's gravity projected to the plane"
    )
    gravity: FloatVectorProperty(
        name="Gravity",
        size=2,
        default=(0.0, -9.81),
        description="In-plane gravity [m/s^2] (horizontal, vertical)",
    )
    dhat_mode: EnumProperty(
        name="Contact Gap",
        description="How the contact gap d\u0302 (the distance at which contact forces start) is given",
        default="RELATIVE",
        items=[
            ("RELATIVE", "Relative", "Fraction of the bodies' bounding-box diagonal"),
            ("ABSOLUTE", "Absolute", "Distance in metres"),
        ],
    )
    dhat_relative: FloatProperty(
        name="d\u0302 (relative)",
        description="Contact gap as a fraction of the bodies' bounding-box diagonal",
        default=1e-3,
        min=1e-6,
        max=0.1,
        precision=5,
    )
    dhat: FloatProperty(
        name="d\u0302",
        description="Contact gap [m]: bodies push apart once closer than this",
        default=0.01,
        min=1e-7,
        precision=5,
        unit="LENGTH",
    )
    kappa_auto: BoolProperty(
        name="Automatic Stiffness",
        description="Choose the barrier stiffness from the materials and masses",
        default=True,
    )
    kappa: FloatProperty(
        name="Barrier Stiffness",
        description="Stiffness \u03ba of the contact barrier [Pa]",
        default=1e5,
        min=1e-6,
    )
    formulation: EnumProperty(
        name="Formulation",
        description="How the contact barrier sums over point-edge pairs",
        default="original",
        items=[
            ("original", "Original", "Sum over point-edge pairs"),
            ("convergent", "Convergent", "Point-point duplicates subtracted"),
        ],
    )
    eps_v: FloatProperty(
        name="Friction \u03b5v",
        default=1e-3,
        min=1e-8,
        precision=5,
        description=(
            "Slip speed below which friction holds [m/s]: a contact using a fraction c of its "
            "friction limit creeps at c times this speed"
        ),
    )
    friction_mollifier: EnumProperty(
        name="Friction Mollifier",
        description=(
            "How the friction force grows with the slip speed below Friction \u03b5v, where "
            "contacts hold (an advanced setting: it changes how sticking contacts creep, little else)"
        ),
        default="linear",
        items=[
            (
                "linear",
                "Linear",
                "In proportion to the slip speed, reaching the friction limit at \u03b5v: a contact "
                "using a fraction c of its limit creeps at c times \u03b5v. Newton converges fastest",
            ),
            (
                "ipc",
                "IPC",
                "The curve of the IPC papers and ipc-toolkit, 2y/\u03b5 - (y/\u03b5)\u00b2: twice as "
                "steep at rest, levelling off at \u03b5v. Results compare with the literature; "
                "takes more Newton iterations",
            ),
        ],
    )
    friction_updates: IntProperty(
        name="Friction Updates",
        default=0,
        min=0,
        max=3,
        description="Take friction again at each step's result, up to this many times per step: "
        "a body landing on a slope then stops where Coulomb's law stops it instead of sliding on "
        "through the landing. 0: friction from each step's start (fastest: 1 costs piles about "
        "50 % more Newton iterations)",
    )
    newton_tol: FloatProperty(
        name="Newton Tolerance",
        default=1e-2,
        min=1e-9,
        precision=5,
        description="Newton stops when every vertex moves less than this per step [m/s] "
        "and the forces balance (Force Tolerance)",
    )
    force_tol: FloatProperty(
        name="Force Tolerance",
        default=1e-3,
        min=1e-9,
        precision=5,
        description="Newton stops only when every body's net force and torque are below this "
        "fraction of its weight plus inertial force (1e-3: its motion is right to 0.1 % of g), "
        "and every vertex's net force below 10 times this fraction of the forces acting on it",
    )
    max_newton_iters: IntProperty(
        name="Max Newton Iterations",
        description="Newton iterations per time step before the step counts as not converged",
        default=100,
        min=1,
    )
    use_ground: BoolProperty(
        name="Ground", description="An infinite ground line below the bodies", default=False
    )
    ground_height: FloatProperty(
        name="Height", description="Height of the ground line in the plane [m]", default=0.0, unit="LENGTH"
    )
    ground_friction: FloatProperty(
        name="Ground Friction", description="Coulomb friction coefficient of the ground", default=0.4, min=0.0
    )
    keep_partial: BoolProperty(
        name="Keep Partial Bake",
        description="On a solver failure keep the frames baked so far",
        default=False,
    )
    state_every: IntProperty(
        name="Store State Every",
        description="Frames between the solver states stored with the bake in the .blend, from "
        "which Bake from Here restarts (fewer frames: faster restarts, a larger file)",
        default=10,
        min=1,
    )
    # Statistics of the last bake (shown in the panel).
    stat_bake_hash: StringProperty(
        options={"HIDDEN"}, description="Input hash of the last bake (its objects' bake_hash)"
    )
    stat_frames: IntProperty(options={"HIDDEN"}, description="Frames of the last bake")
    stat_wall_time: FloatProperty(options={"HIDDEN"}, description="Duration of the last bake [s]")
    stat_newton_iters: IntProperty(options={"HIDDEN"}, description="Newton iterations of the last bake")
    stat_min_distance: FloatProperty(
        options={"HIDDEN"},
        description="Smallest contact distance the solver kept during the last bake [m] "
        "(-1: nothing came within range); against the colliders where the solver could put "
        "them, see Collider Distance for where they are animated",
    )
    stat_message: StringProperty(options={"HIDDEN"}, description="Why the last bake stopped early, if it did")
    # Colliders that could not follow their animation (blocked by bodies that cannot give way).
    stat_collider_distance: FloatProperty(
        name="Collider Distance",
        options={"HIDDEN"},
        description="Smallest distance between the bodies and the colliders at their animated "
        "positions during the last bake [m]; negative: the baked bodies overlap a collider as "
        "animated by that much",
        unit="LENGTH",
    )
    stat_collider_near: BoolProperty(
        options={"HIDDEN"},
        description="A collider came within reach of the contact gap in the last bake "
        "(else Collider Distance is unset)",
    )
    stat_collider_lag: FloatProperty(
        options={"HIDDEN"},
        description="Largest distance by which a collider stayed behind its animation in the last bake [m]",
        unit="LENGTH",
    )
    stat_lag_frames: StringProperty(
        options={"HIDDEN"},
        description="Frames of the last bake in which a collider lagged behind its animation by "
        "more than the contact gap d\u0302, e.g. '37-61'",
    )
    stat_overlap_frames: StringProperty(
        options={"HIDDEN"},
        description="Frames of the last bake in which the bodies overlap a collider at its "
        "animated position, e.g. '50-61'",
    )
    stat_warning: StringProperty(
        options={"HIDDEN"},
        description="Warning of the last bake about colliders that could not follow their animation",
    )
    stat_strained: StringProperty(
        options={"HIDDEN"},
        description="Rigid bodies the last bake squashed or stretched beyond the strain they hold, "
        "the worst first, e.g. \"'Crate' up to 2.9 % (frames 96-102)\"",
    )
    stat_crossing_frames: StringProperty(
        options={"HIDDEN"},
        description="Frames of the last bake whose straight motion from the frame before passes "
        "one object through another, e.g. '12, 30-31'",
    )
    stat_crossing_warning: StringProperty(
        options={"HIDDEN"}, description="Warning of the last bake about frames whose motion crosses"
    )
    stat_motion_splits: IntProperty(
        options={"HIDDEN"}, description="Steps of the last bake the solver split because their motion crossed"
    )
    stat_failure_splits: IntProperty(
        options={"HIDDEN"},
        description="Times a step of the last bake did not converge and was solved again in two halves",
    )
    stat_refined_frames: IntProperty(
        options={"HIDDEN"}, description="Frames of the last bake computed again with more substeps"
    )
    stat_slept_bodies: IntProperty(
        options={"HIDDEN"}, description="Most bodies asleep at once in the last bake (Deactivation)"
    )
    stat_notes: StringProperty(
        options={"HIDDEN"}, description="What the solver changed in the scene, and why"
    )
    stat_states: IntProperty(options={"HIDDEN"}, description="Solver states stored with the last bake")
    stat_state_bytes: IntProperty(
        options={"HIDDEN"}, description="Size of one solver state stored with the last bake [bytes]"
    )
    stat_colliders: CollectionProperty(
        type=IPC_ColliderStat,
        options={"HIDDEN"},
        description="Per collider: lag, distance as animated and the frames affected in the last bake",
    )


CLASSES = (IPC_ObjectSettings, IPC_ColliderStat, IPC_SceneSettings)


def attach():
    bpy.types.Object.ipc = PointerProperty(type=IPC_ObjectSettings)
    bpy.types.Scene.ipc = PointerProperty(type=IPC_SceneSettings)


def detach():
    del bpy.types.Scene.ipc
    del bpy.types.Object.ipc
