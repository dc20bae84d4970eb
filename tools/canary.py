"""Zensical canary: build this course with Zensical and check what it wrote, as `nox -s build verify` does.

Material for MkDocs reaches end of life in 2027 and MkDocs 1.x is no longer developed. This
script copies the project into a temporary folder (the build writes site/ and this checkout's
site/ stays MkDocs'), builds the copy with `lessonkit build --engine zensical` (the pinned
Zensical of the test lock; the emitter is lessonkit/integrations/zensical/emit.py), then runs
`lessonkit verify --site site` on it. Both use the checkout's build cache (LESSONKIT_CACHE), so
the experiments' recorded runs are reused.

Prints the build's problems and verify's summary; exits 1 when either fails.
Usage: python tools/canary.py [--keep]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = [
    *("docs", "overrides", "experiments", "mini-autograd", "sourcemap", "lessonkit_ext", "templates", "hooks"),
    *("mkdocs.yml", "pyproject.toml"),
]


def main(argv: list[str]) -> int:
    try:
        zensical = version("zensical")
    except PackageNotFoundError:
        print("canary: zensical is not installed (nox -s canary installs the test lock, which pins it)")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="lessonkit-canary-"))
    try:
        for name in COPY:
            src = ROOT / name
            if src.exists():
                (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / name)
        env = dict(os.environ, LESSONKIT_CACHE=os.environ.get("LESSONKIT_CACHE", str(ROOT / ".cache")))
        print(f"# Zensical canary (zensical {zensical})\n")
        build = subprocess.run(
            [sys.executable, "-m", "lessonkit", "build", "--engine", "zensical"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        print("\n".join(f"build: {line}" for line in build.stderr.splitlines()[-40:]))
        if build.returncode:
            print(f"\nFAILED: lessonkit build --engine zensical exited with {build.returncode}")
            return 1
        verify = subprocess.run(
            [sys.executable, "-m", "lessonkit", "verify", "--site", "site"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
        print("\n".join(f"verify: {line}" for line in (verify.stdout + verify.stderr).splitlines()[-40:]))
        if verify.returncode:
            print(f"\nFAILED: lessonkit verify --site exited with {verify.returncode}")
            return 1
        print("\nbuilt by Zensical, every page verified")
        return 0
    finally:
        if "--keep" in argv:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
