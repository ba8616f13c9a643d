"""The messages the add-on and the solver can show a user, read from the source with ``ast``.

The rule (CONTRIBUTING.md, "Messages"): a message is a string literal or f-string that is

1. the first argument of ``raise C(...)`` where C is a user-facing error class
   (:data:`USER_ERRORS`, or a class defined in the scanned code that derives from one), or in
   ``blender_ipc/`` also ``ValueError`` / ``RuntimeError`` (the add-on shows those too);
2. the second argument of a ``.report(level, message)`` call (Blender's operator reports);
3. returned by one of the message-composing functions in :data:`MESSAGE_FUNCTIONS`
   (both branches of a conditional expression count).

Scanned: every ``.py`` file under ``blender_ipc/`` and ``solver/`` except :data:`SKIPPED`
(the scene-JSON and command-line front ends and the example builders, which the add-on never
runs). A message's *key* is its longest literal fragment (the text between placeholders),
whitespace collapsed and trimmed of spaces, quotes and punctuation at both ends; a message whose
key is shorter than :data:`MIN_KEY` characters only wraps another message (``f"'{name}': {err}"``)
and needs no entry of its own. docs/troubleshooting.md must contain every key.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("blender_ipc", "solver")
SKIPPED = {"scene_io.py", "cli.py", "examples.py", "profiling.py", "__main__.py"}
USER_ERRORS = {"IPCError", "SolverInputError", "ConvergenceError"}
ADDON_ERRORS = {"ValueError", "RuntimeError"}
# (file name, function name): functions whose returned strings are messages shown to the user.
MESSAGE_FUNCTIONS = {
    ("messages.py", "solver_failure"),
    ("messages.py", "frame_crossing_warning"),
    ("messages.py", "rigid_strain_warning"),
    ("reading.py", "separation_report"),
    ("colliders.py", "lag_warning"),
    ("reading.py", "body_type_problem"),
    ("reading.py", "role_problem"),
    ("links.py", "link_problem"),
    ("links.py", "pin_problem"),
}
MIN_KEY = 12
_TRIM = " \t'\":;,.()-"


@dataclass(frozen=True)
class Message:
    path: str  # relative to the repository root
    line: int
    fragments: tuple[str, ...]  # the literal parts, in order

    @property
    def key(self) -> str:
        return max((normalize(f) for f in self.fragments), key=len, default="")

    @property
    def template(self) -> str:
        """The message with each placeholder shown as an ellipsis (for a new doc entry)."""
        return " ".join(self.fragments_with_holes.split())

    @property
    def fragments_with_holes(self) -> str:
        return "…".join(self.fragments)


def normalize(text: str) -> str:
    return " ".join(text.split()).strip(_TRIM)


def _fragments(node) -> list[tuple[str, ...]]:
    """The literal fragments of each message a node can evaluate to (none for a plain name)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value,)]
    if isinstance(node, ast.JoinedStr):
        parts, current = [], ""
        for value in node.values:
            if isinstance(value, ast.Constant):
                current += value.value
            else:
                parts.append(current)
                current = ""
        parts.append(current)
        return [tuple(parts)]
    if isinstance(node, ast.IfExp):
        return _fragments(node.body) + _fragments(node.orelse)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _fragments(node.left), _fragments(node.right)
        if left and right:
            return [a + b for a in left for b in right]
        return left + right
    return []


def _called_name(func) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def source_files():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name not in SKIPPED and "__pycache__" not in path.parts:
                yield path


def _user_error_classes(trees) -> set[str]:
    """USER_ERRORS and the classes of the scanned code derived from them (to a fixed point)."""
    names = set(USER_ERRORS)
    while True:
        more = {
            node.name
            for tree in trees.values()
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and any(_called_name(b) in names for b in node.bases)
        }
        if more <= names:
            return names
        names |= more


def _raise_messages(tree, errors):
    for node in ast.walk(tree):
        call = node.exc if isinstance(node, ast.Raise) else None
        if isinstance(call, ast.Call) and call.args and _called_name(call.func) in errors:
            yield node.lineno, call.args[0]


def _report_messages(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called_name(node.func) == "report" and len(node.args) >= 2:
            yield node.lineno, node.args[1]


def _returned_messages(path, tree, found):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (path.name, node.name) in MESSAGE_FUNCTIONS:
            found.add((path.name, node.name))
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and inner.value is not None:
                    yield inner.lineno, inner.value


def messages() -> tuple[list[Message], set[tuple[str, str]]]:
    """Every message of the rule above, and the MESSAGE_FUNCTIONS that were found."""
    trees = {path: ast.parse(path.read_text(), str(path)) for path in source_files()}
    solver_errors = _user_error_classes(trees)
    found_functions: set[tuple[str, str]] = set()
    out = []
    for path, tree in trees.items():
        addon = path.relative_to(ROOT).parts[0] == "blender_ipc"
        errors = solver_errors | ADDON_ERRORS if addon else solver_errors
        sites = [
            *_raise_messages(tree, errors),
            *_report_messages(tree),
            *_returned_messages(path, tree, found_functions),
        ]
        rel = path.relative_to(ROOT).as_posix()
        for line, node in sites:
            out.extend(Message(rel, line, fragments) for fragments in _fragments(node))
    return out, found_functions


def doc_text(path: Path) -> str:
    """A markdown file's text with whitespace collapsed, for substring checks of message keys."""
    return " ".join(re.sub(r"\\([_*`])", r"\1", path.read_text()).split())


if __name__ == "__main__":  # print every message's key and template (to write new doc entries)
    found, _ = messages()
    for m in sorted(found, key=lambda m: (m.path, m.line)):
        print(f"{m.path}:{m.line}: [{m.key}] {m.template}")
