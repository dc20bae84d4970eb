"""The MkDocs integration: hooks, incremental serve and the theme's template cache."""
