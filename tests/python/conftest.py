# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of the pytest tests of the module rnotify and of rnotify-ctl:
daemons from tests/process/rntest.py (imported, not copied) and the
clients attached to them; clienttest.py has the helpers.

Run by meson (tests/python/meson.build), which sets RNOTIFYD (the daemon),
RNOTIFY_CTL (rnotify-ctl as built) and PYTHONPATH (the module as built).
By hand: meson test -C build python --verbose."""

import os
import random
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "process"))

import rntest  # noqa: E402  (tests/process, found through sys.path)
from clienttest import Nodes  # noqa: E402

RNOTIFYD = os.environ.get("RNOTIFYD")
# rntest takes the daemon from its runner's argv: give it ours.
rntest.RNOTIFYD = RNOTIFYD


def pytest_configure(config):
    # One line at the top of the run, so that a failure can be replayed.
    print(f"\nrandom choices: {rntest.SEED_ENV}={rntest.SEED} replays them")


def pytest_unconfigure(config):
    shutil.rmtree(rntest.TMP, ignore_errors=True)


@pytest.fixture(scope="session")
def rnotify():
    """The module; a test that cannot have a daemon is skipped, not
    passed."""
    if not RNOTIFYD or not os.access(RNOTIFYD, os.X_OK):
        pytest.skip("no rnotifyd to run (RNOTIFYD unset): run through "
                    "meson test")
    import rnotify as module
    return module


@pytest.fixture
def rng(request):
    """The test's random generator, from the run's seed and its name."""
    seed = f"{rntest.SEED}-{request.node.name}"
    print(f"random choices: {rntest.SEED_ENV}={rntest.SEED} replays them "
          f"(generator seed {seed!r})")
    return random.Random(seed)


@pytest.fixture(scope="module")
def nodes(rnotify):
    n = Nodes(rnotify, "py")
    yield n
    n.stop()


@pytest.fixture
def clients(nodes):
    """nodes, whose clients of this test are detached after it."""
    yield nodes
    nodes.detach_all()
