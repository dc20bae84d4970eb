"""Report which autograd an experiment imported.

Every experiment calls ``announce()`` first. Inside the site build the runner
sets ``AUTOGRAD_PINNED_ROOT`` and ``AUTOGRAD_PINNED_VERSION``; the imported
package must then come from that pinned tree. Outside the build (for example
in the downloadable bundle) the installed autograd is used and its version is
reported instead.
"""

import os
import sys
from importlib import metadata
from pathlib import Path

import autograd


def announce():
    here = Path(autograd.__file__).resolve()
    root = os.environ.get("AUTOGRAD_PINNED_ROOT")
    if root:
        root_path = Path(root).resolve()
        if root_path not in here.parents:
            sys.exit(f"autograd was imported from {here}, not from the pinned tree {root_path}")
        version = os.environ.get("AUTOGRAD_PINNED_VERSION", "?")
        print(f"[autograd {version} · pinned tree]")
    else:
        try:
            version = metadata.version("autograd")
        except metadata.PackageNotFoundError:
            version = "unknown"
        print(f"[autograd {version} · installed copy]")
