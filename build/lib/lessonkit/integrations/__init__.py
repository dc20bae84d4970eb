"""Adapters to site generators."""
