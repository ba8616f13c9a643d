"""Links between the docs resolve: every relative link and image in the repository's markdown
files names a file that exists, and every #anchor names a heading of its target (GitHub's
anchors). References to docs from the code (``docs/x.md, "Section"``) name a file that exists
and a heading it (or a design note) has. The user's README stays short."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP_DIRS = {".git", ".venv", ".venv-np2", "out", "dist", "build", ".pytest_cache", ".hypothesis"}
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE = re.compile(r"```.*?```", re.S)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def markdown_files():
    for path in sorted(ROOT.rglob("*.md")):
        if not SKIP_DIRS & set(path.relative_to(ROOT).parts):
            yield path


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped (word
    characters, spaces and hyphens kept), spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, heading in HEADING.findall(CODE.sub("", path.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path):
    text = CODE.sub("", path.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    for target in LINK.findall(text):
        if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            yield target


def test_every_relative_link_resolves():
    broken = []
    for path in markdown_files():
        for target in links(path):
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}: ({target})"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: no heading with this anchor in {dest.relative_to(ROOT)}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_slug_follows_github():
    assert slug("When Newton stops: the step and the forces") == "when-newton-stops-the-step-and-the-forces"
    assert slug("Friction's static zone (`friction.py`)") == "frictions-static-zone-frictionpy"
    assert slug("Stop and Keep, Continue Bake") == "stop-and-keep-continue-bake"


CODE_REF = re.compile(r"(docs/[\w./-]+\.md)(?:[,\s]*\(?\s*\"([^\"]+)\")?")


def test_references_from_the_code_resolve():
    """``docs/solver.md, "Landing bodies"`` in a comment or docstring: the file exists and one
    of its headings (or, for the solver reference, one of the design notes' headings) starts
    with the quoted title."""
    notes = sorted((ROOT / "docs" / "design").glob("*.md"))
    broken = []
    for package in ("solver", "blender_ipc", "scripts", "bench"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = " ".join(path.read_text().replace("#", " ").split())
            for ref, title in CODE_REF.findall(text):
                doc = ROOT / ref
                if not doc.exists():
                    broken.append(f"{path.relative_to(ROOT)}: {ref} does not exist")
                    continue
                if not title:
                    continue
                files = [doc, *notes] if ref == "docs/solver.md" else [doc]
                headings = [h for f in files for _, h in HEADING.findall(CODE.sub("", f.read_text()))]
                if not any(h.lower().startswith(title.lower()) for h in headings):
                    broken.append(f'{path.relative_to(ROOT)}: {ref}, "{title}": no such heading')
    assert not broken, "\n".join(broken)


def test_user_pages_stay_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150
    assert len((ROOT / "docs" / "solver.md").read_text().splitlines()) <= 260


def test_each_design_note_has_its_sections():
    notes = sorted((ROOT / "docs" / "design").glob("[0-9][0-9]-*.md"))
    assert notes
    for note in notes:
        headings = [h for level, h in HEADING.findall(note.read_text()) if level == "##"]
        assert headings[:5] == ["Problem", "Rule", "Knobs", "Evidence", "Tests"], note.name


def test_design_notes_name_tests_that_exist():
    defined = {
        name
        for path in (ROOT / "tests").rglob("test_*.py")
        for name in re.findall(r"^def (test_\w+)", path.read_text(), re.M)
    }
    for note in sorted((ROOT / "docs" / "design").glob("[0-9][0-9]-*.md")):
        tests = note.read_text().split("\n## Tests\n", 1)[1]
        for path in re.findall(r"`(tests/[\w/]+\.py)`", tests):
            assert (ROOT / path).exists(), f"{note.name}: {path}"
        named = re.findall(r"`(test_\w+)`", tests)
        assert named, note.name
        assert not set(named) - defined, f"{note.name}: {sorted(set(named) - defined)}"
