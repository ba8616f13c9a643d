"""Smoke test of bench/run.py: it runs on a tiny configuration and prints
well-formed markdown tables (no timing asserts: the bench only reports)."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench", "run.py")

SUMMARY = [
    "scene",
    "vertices",
    "steps",
    "wall s",
    "CPU s",
    "s/step",
    "Newton mean",
    "Newton median",
    "Newton max",
    "solves",
    "non-solve ms/iter",
    "solve ms/iter",
    "non-solve/solve",
    "peak MiB",
    "converged",
]
STAGES = [
    "scene",
    "elast",
    "barrier",
    "fric",
    "inert+pen",
    "broad",
    "CCD",
    "solve",
    "regime",
    "exact CG",
    "line srch",
    "setup",
    "other",
]


def _table(lines, header):
    """Rows (lists of cells) of the markdown table whose header is `header`."""
    head = "| " + " | ".join(header) + " |"
    assert head in lines, f"no table with header {head!r} in output"
    i = lines.index(head)
    assert lines[i + 1] == "|" + "|".join("---" for _ in header) + "|"
    rows = []
    for line in lines[i + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == len(header), line
        rows.append(cells)
    return rows


def test_bench_tiny_run_prints_tables(tmp_path):
    out_json = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, BENCH, "S1", "--steps", "5", "--json", str(out_json)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()

    (row,) = _table(lines, SUMMARY)
    cell = dict(zip(SUMMARY, row, strict=True))
    assert cell["scene"] == "S1"
    assert int(cell["steps"]) == 5
    assert int(cell["vertices"]) == 20  # two 3x3-vertex squares + the 2-vertex ceiling
    for name in (
        "wall s",
        "CPU s",
        "s/step",
        "Newton mean",
        "Newton median",
        "non-solve ms/iter",
        "solve ms/iter",
        "peak MiB",
    ):
        assert float(cell[name]) >= 0.0, name
    assert int(cell["Newton max"]) >= 0
    assert int(cell["solves"]) >= 5  # at least one assembled system per step
    assert cell["converged"] == "yes"
    assert abs(float(cell["s/step"]) * 5 - float(cell["wall s"])) <= 0.01 + 0.05 * float(cell["wall s"])

    (srow,) = _table(lines, STAGES)
    assert srow[0] == "S1"
    percents = []
    for c in srow[1:]:
        seconds, pct = c.split(" (")
        assert float(seconds) >= 0.0
        percents.append(float(pct.rstrip("%)")))
    assert 95 <= sum(percents) <= 105  # stages + 'other' account for the whole run

    # one progress line per step on stderr
    progress = [line for line in proc.stderr.splitlines() if line.startswith("[S1] step ")]
    assert len(progress) == 5

    data = json.loads(out_json.read_text())
    assert [d["scene"] for d in data] == ["S1"]
    assert data[0]["steps"] == 5 and data[0]["all_converged"] is True
    assert abs(sum(data[0]["stages_s"].values()) - data[0]["wall_s"]) <= 1e-6 + 1e-3 * data[0]["wall_s"]


def test_bench_rejects_unknown_scene():
    proc = subprocess.run(
        [sys.executable, BENCH, "S9", "--steps", "1"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode != 0
    assert "unknown scene" in proc.stderr and "S9" in proc.stderr


def test_bench_repeat_reports_the_median_run(tmp_path):
    out_json = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            BENCH,
            "S1",
            "--steps",
            "2",
            "--repeat",
            "3",
            "--no-progress",
            "--json",
            str(out_json),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(out_json.read_text())
    walls = r["repeat_wall_s"]
    assert len(walls) == 3 and walls == sorted(walls) and r["wall_s"] == walls[1]
    assert "median of 3 runs" in proc.stdout
    bad = subprocess.run(
        [sys.executable, BENCH, "S1", "--repeat", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(tmp_path),
        check=False,
    )
    assert bad.returncode != 0 and "--repeat" in bad.stderr
