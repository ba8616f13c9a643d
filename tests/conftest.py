"""Hypothesis profiles for every pytest leg.

* ``ci`` (the default when the environment sets CI, as ``.ci/run`` does):
  derandomized, so a CI run draws the same examples on every machine and
  every run, and without the example database, so a green run never depends
  on what ``.hypothesis/`` holds.  A failure prints its reproduction blob.
* ``dev`` (the default otherwise): random examples on every run, remembered
  failures replayed from ``.hypothesis/``: local runs keep exploring.

``HYPOTHESIS_PROFILE=ci|dev`` picks one explicitly; ``--hypothesis-seed=N``
replays one random run of the dev profile.  Tests set their own
max_examples and deadline; the profile decides where examples come from.
"""

import os

from hypothesis import settings

try:  # every solver test's half-plane queries check what plane_near clears (solver/model.py)
    from solver import model
except ImportError:  # a leg that runs the add-on only
    model = None
else:
    model.CHECK_PLANE_NEAR = True

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev", print_blob=True)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def pytest_report_header(config):
    s = settings.default
    return (
        f"hypothesis profile '{PROFILE}': derandomize={s.derandomize}, "
        f"example database {'off' if s.database is None else 'on'}"
    )
