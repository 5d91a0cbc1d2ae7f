"""pytest-hiccup: hiccup serve sessions as pytest fixtures, hiccup's verdict as the test's assertion.

The fixtures and markers live in `pytest_hiccup.plugin` (loaded by pytest through the `pytest11`
entry point); the control-API client they use is `pytest_hiccup.client`, importable on its own.
"""
from .client import HiccupError, HiccupServer, Scenario, Session, Verdict, Violation, find_binary

__all__ = ["HiccupError", "HiccupServer", "Scenario", "Session", "Verdict", "Violation", "find_binary"]
__version__ = "0.1.0"
