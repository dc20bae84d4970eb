"""Low-level helpers with no knowledge of lessons: owned filesystem writes, the checked content-
keyed store, and the list of process-wide state.
"""
