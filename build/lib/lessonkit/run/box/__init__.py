"""The box one experiment runs in: the sandbox, its launcher, the sweeper of dead builds' boxes and
the checked tree every box holds.
"""
