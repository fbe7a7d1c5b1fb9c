"""Shared fixtures of ccf's Python tests."""

import os
import subprocess

import pytest


@pytest.fixture
def tool():
    """Runs the ccf tool named by $CCF_TOOL (the build sets it); skips when it is not set."""
    path = os.environ.get("CCF_TOOL")
    if not path:
        pytest.skip("CCF_TOOL is not set: no ccf tool to test against")

    def run(*args, check=True):
        return subprocess.run([path, *map(str, args)], capture_output=True, check=check)

    return run
