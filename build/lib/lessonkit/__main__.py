"""``python -m lessonkit``: the command line (:mod:`lessonkit.cli.main`)."""

from lessonkit.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
