"""Every message the add-on can show has an entry in docs/troubleshooting.md (the rule that
finds the messages is in doc_messages.py and CONTRIBUTING.md, "Messages")."""

import ast
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import doc_messages  # noqa: E402

sys.path.remove(str(HERE))

TROUBLESHOOTING = doc_messages.ROOT / "docs" / "troubleshooting.md"


def test_every_message_has_an_entry():
    found, _ = doc_messages.messages()
    text = doc_messages.doc_text(TROUBLESHOOTING).lower()
    missing = sorted(
        {
            f"{m.path}:{m.line}: {m.template}  [key: {m.key}]"
            for m in found
            if len(m.key) >= doc_messages.MIN_KEY and m.key.lower() not in text
        }
    )
    assert not missing, "messages without an entry in docs/troubleshooting.md:\n" + "\n".join(missing)


def test_every_message_function_is_still_there():
    # a renamed or moved function would silently drop its messages from the check
    _, functions = doc_messages.messages()
    assert functions == doc_messages.MESSAGE_FUNCTIONS


def test_the_rule_reaches_each_kind_of_site():
    found, _ = doc_messages.messages()
    keys = {m.key for m in found}
    assert "Leave Edit Mode (switch to Object Mode) before baking" in keys  # raise IPCError
    assert "scene: needs at least one body" in keys  # raise SolverInputError
    assert "Leave Edit Mode before deleting the bake" in keys  # self.report
    assert any("did not settle within Max Newton Iterations" in k for k in keys)  # returned


def test_subclasses_of_user_errors_count():
    # no message of the tree is raised through a subclass today: the rule is checked on its own
    tree = ast.parse(
        "class OtherFormat(SolverInputError): pass\n"
        "class Older(OtherFormat): pass\n"
        "class Internal(ValueError): pass\n"
        "def f():\n    raise Older('checkpoint: from an older solver')\n"
    )
    errors = doc_messages._user_error_classes({"x.py": tree})
    assert {"OtherFormat", "Older"} <= errors and "Internal" not in errors
    [(_, message)] = doc_messages._raise_messages(tree, errors)
    assert message.value.startswith("checkpoint")


def test_fragments_of_fstrings_and_conditionals():
    node = ast.parse('f"{a}: its mesh {b!r} is shared" if c else "plain"', mode="eval").body
    assert doc_messages._fragments(node) == [("", ": its mesh ", " is shared"), ("plain",)]
    message = doc_messages.Message("x.py", 1, ("", ": its mesh '", "' is shared by ", " objects"))
    assert message.key == "is shared by"
    assert message.template == "…: its mesh '…' is shared by … objects"
