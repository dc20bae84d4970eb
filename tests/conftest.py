"""Fixtures for tests/ (defined in support.py so that test modules can import helpers)."""

from support import browser, built_site, pinned_root, real_project, server, site  # noqa: F401
