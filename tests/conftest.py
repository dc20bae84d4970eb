"""Fixtures for tests/ (defined in support.py so that test modules can import helpers)."""

from support import built_site, pinned_root, real_project, site  # noqa: F401
