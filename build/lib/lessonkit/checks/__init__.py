"""Checks over a whole project: verify, the mutation check and the living-lesson cross-checks."""
