"""The pinned source: its providers (sdist, git, checkout), exact Python symbol ranges, excerpt
resolution and inline line references.
"""
