"""The page pipeline: parse annotation blocks, render them, the Python-Markdown extensions (blocks
and math), SVG figures and recorded tables.
"""
