"""The real tiny pipeline (built once per session by tests/test_dvc.py) for the fault tests that need it."""

from tests.test_dvc import pipeline_repo  # noqa: F401  (a fixture, shared by name)
