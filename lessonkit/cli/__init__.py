"""The ``lessonkit`` command line."""
