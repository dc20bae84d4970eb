"""Configuration read and checked before anything acts on it: the environment, pin.toml and the
manifest, the generated maps, site.toml, labels and the project's own files.
"""
