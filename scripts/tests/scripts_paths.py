"""Paths for the tests of scripts/ (run: /usr/bin/python3 -m pytest -q scripts/tests); not named conftest.py, which analysis/tests has."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)
REPO = os.path.dirname(SCRIPTS)
BIN = os.path.join(REPO, "build", "vpsim")
sys.path.insert(0, SCRIPTS)
