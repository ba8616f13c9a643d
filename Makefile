# blender-ipc: the two commands of the README, plus helpers.
#
#   make demo    set up .venv (bpy 5.0.1 wheel), build the add-on zip, bake the compressing-squares
#                scene through the add-on, write out/compressing_squares.blend, out/filmstrip.png,
#                out/summary.txt; `make demo SCENE=chain`: a chain swinging on a hinge into a wall in
#                the wind (out/chain_in_wind.blend, out/chain_in_wind_filmstrip.png); SCENE=props:
#                soft characters falling into a box of rigid props (out/props_in_box*)
#   make test    set up .venv-np2 / .venv / Debian blender as needed and run every test leg, lint
#                first (see scripts/run_tests.sh); `make test LEGS="solver-np2"` runs a subset
#   make lint    ruff check + ruff format --check (ruff pinned in pyproject.toml, from .venv-np2)
#
# All are idempotent: a second run reuses the virtual environments.

SHELL := /bin/bash
# One BLAS thread: the solver's many small dense solves get slower, not faster, with
# OpenBLAS threads on a busy 2-core machine (tests/stress/FINDINGS.md P1).
export OPENBLAS_NUM_THREADS ?= 1
PYTHON ?= python3
N_SEG ?= 8
SCENE ?= squares
LEGS ?=

.PHONY: help demo test lint setup setup-np2 setup-bpy setup-blender addon screenshots docs-images clean distclean

help:
	@sed -n '3,11p' Makefile | sed 's/^# \{0,1\}//'

demo: setup-bpy addon
	.venv/bin/python -u scripts/demo.py --scene $(SCENE) --n-seg $(N_SEG)

test:
	scripts/run_tests.sh $(LEGS)

# Both commands run even when the first fails; either failing fails the target.
lint: setup-np2
	rc=0; .venv-np2/bin/ruff check . || rc=1; .venv-np2/bin/ruff format --check . || rc=1; exit $$rc

setup: setup-np2 setup-bpy setup-blender

setup-np2:
	scripts/setup_env.sh np2

setup-bpy:
	scripts/setup_env.sh bpy

setup-blender:
	scripts/setup_env.sh blender

# The add-on zip (dist/blender_ipc-<version>.zip, solver embedded). build_addon.py uses only the stdlib.
addon:
	$(PYTHON) build_addon.py

# The README screenshots of the panel (docs/images/gui_*.png): Blender's GUI under Xvfb.
screenshots:
	scripts/screenshots.sh

# Refresh the README pictures from a demo run.
docs-images: demo
	mkdir -p docs/images
	cp out/filmstrip.png docs/images/demo.png
	cp out/compressing_squares.gif docs/images/demo.gif

clean:
	rm -rf out dist build .pytest_cache .hypothesis

distclean: clean
	rm -rf .venv .venv-np2
