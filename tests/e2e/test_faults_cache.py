"""Fault injection for configuration, paths and caches.

* every path-forming value, even one that bypassed lessonkit.config.files, stays inside the cache;
* a damaged cache entry of any kind, damaged in any way, is dropped and made again and the
  site is byte-identical to a clean build;
* a read-only or full cache (a real read-only or tiny tmpfs mount; skipped with the reason
  when mounting is not permitted) only costs time: one warning, same site;
* concurrent builds on one cache, and builds or verify runs killed with SIGKILL at random
  points, leave no partial entry, and the next build is byte-identical.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from support import COMMIT, ROOT, TmpSite, block

from lessonkit.config import files as config
from lessonkit.config import maps
from lessonkit.errors import LessonError
from lessonkit.source import providers
from lessonkit.util import fs as fsutil
from lessonkit.util import store

EPOCH = "1764460800"
KINDS = ["render", "highlight", "pages", "symbols", "mathml", "links", "pin"]
PAGE = (
    "# 页\n\n公式 $x^2 + y$ 在这里。\n\n"
    + block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")
    + "\n"
    + block("teaching-simplification", "Based-on: autograd/core.py::backward_pass", body="x = 1")
    + "\n"
    + block("experiment", "Purpose: 一个实验", body="print(6 * 7)")
)
STATIC_PAGE = PAGE.split("```experiment")[0]  # no experiment: nothing but the stores writes to the cache


def tree_digest(root: Path, skip=(".cache", "site")) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] in skip:
            continue
        out[rel.as_posix()] = (
            ("link:" + os.readlink(p))
            if p.is_symlink()
            else hashlib.sha256(p.read_bytes()).hexdigest()
            if p.is_file()
            else "dir"
        )
    return out


def site_digest(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(site.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def sdist(tmp_path_factory, pinned_root) -> Path:
    """An sdist-shaped archive of the pinned tree (the pin is rewritten to its sha256)."""
    out = tmp_path_factory.mktemp("sdist") / "autograd-1.9.1.tar.gz"
    with tarfile.open(out, "w:gz", compresslevel=1) as tf:
        tf.add(pinned_root, arcname="autograd-1.9.1")
    return out


def make_site(base: Path, pinned_root: Path, sdist: Path | None = None, page: str = PAGE) -> TmpSite:
    s = TmpSite(base, pinned_root)
    s.page("p.md", page)
    s.env["SOURCE_DATE_EPOCH"] = EPOCH
    if sdist is not None:  # provide the pin through the cache (so its marker is an entry too)
        toml = s.root / "sourcemap" / "pin.toml"
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        toml.write_text(re.sub(r'(?m)^sha256 = ".*"$', f'sha256 = "{digest}"', toml.read_text()))
        s.env.pop("AUTOGRAD_SOURCE")
        s.env["LESSONKIT_SDIST"] = str(sdist)
    return s


def build(s: TmpSite, out: Path, cache: Path | None = None, **env) -> subprocess.CompletedProcess:
    e = {**s.env, **env}
    if cache is not None:
        e["LESSONKIT_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=s.root,
        env=e,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def assert_entries_valid(cache: Path, skip=()) -> None:
    """Every store entry decodes (digest checked); no half-written file; empty staging."""
    assert not list(cache.rglob(".tmp-*")), list(cache.rglob(".tmp-*"))
    staging = cache / "pin" / ".staging"
    assert not staging.exists() or not any(staging.iterdir()), list(staging.iterdir())
    for kind in KINDS:
        folder = cache / kind
        for entry in folder.iterdir() if folder.is_dir() else []:
            if entry in skip or kind == "pin" and not entry.name.endswith(".provider"):
                continue  # the pinned tree and the archive: checked against the manifest on use
            assert store.decode_entry(kind, entry.name, entry.read_bytes(), cache) is not None, entry


# ---------------------------------------------------------------- paths: defence in depth

HOSTILE_PARTS = ["..", "../..", "/etc", "a/b", "", ".", "x\x00y", "../" + "x" * 10, "\\..", "a\nb"]


@pytest.mark.parametrize("part", HOSTILE_PARTS)
def test_owned_path_refuses_anything_not_strictly_inside(tmp_path, part):
    root = tmp_path / "cache"
    root.mkdir()
    (tmp_path / "victim").write_text("x")
    with pytest.raises(fsutil.NotOwned):
        fsutil.owned_path(root, part)
    with pytest.raises(fsutil.NotOwned):
        fsutil.remove_owned(root, "pin", part)
    assert (tmp_path / "victim").read_text() == "x"


def test_owned_path_refuses_links_on_the_way_and_removes_a_link_not_its_target(tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "f").write_text("keep")
    (root / "pin").symlink_to(outside)
    with pytest.raises(fsutil.NotOwned, match="refusing to follow a symlink"):
        fsutil.owned_path(root, "pin", "deep")
    with pytest.raises(fsutil.NotOwned):
        fsutil.remove_owned(root, "pin", "deep")
    assert fsutil.remove_owned(root, "pin")  # the link itself is inside: removed, target kept
    assert not (root / "pin").exists() and (outside / "deep" / "f").read_text() == "keep"
    with pytest.raises(fsutil.NotOwned):
        fsutil.owned_path(root)  # the owned folder itself is never a target


@pytest.mark.parametrize(
    "field,value",
    [
        ("commit", "../.."),
        ("commit", ".."),
        ("commit", "/"),
        ("sdist_filename", "../../keep-me.txt"),
        ("sdist_filename", ".."),
    ],
)
def test_hostile_pin_values_never_reach_the_filesystem_even_unchecked(
    tmp_path, real_project, pinned_root, sdist, monkeypatch, field, value
):
    """A Pin built around lessonkit.config.files (as a bug might) still cannot remove the project."""
    project = tmp_path / "proj"
    cache = project / ".cache"
    (cache / "pin").mkdir(parents=True)
    (project / "keep-me.txt").write_text("the project\n")
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    before = tree_digest(project, skip=(".cache",))
    bad = dataclasses.replace(real_project.pin, **{field: value})
    monkeypatch.delenv("AUTOGRAD_SOURCE", raising=False)
    monkeypatch.delenv("LESSONKIT_SOURCE", raising=False)
    monkeypatch.setenv("LESSONKIT_SDIST", str(ROOT / "nope.tar.gz") if field == "commit" else "")
    with pytest.raises(LessonError) as info:
        providers.provide(bad, cache)
    assert "\n" not in str(info.value) and "Traceback" not in str(info.value)
    assert tree_digest(project, skip=(".cache",)) == before


def test_stale_staging_of_a_dead_process_is_removed_and_a_live_one_kept(tmp_path):
    staging = tmp_path / "pin" / ".staging"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ns = fsutil.pid_namespace()
    (staging / f"x-{dead.pid}.1-ns{ns}-abcdefgh" / "autograd").mkdir(parents=True)  # exact format, dead owner
    (staging / f"tree-{fsutil.owner_tag()}-abcdefgh").mkdir()  # alive: this process
    (staging / f"tree-{dead.pid}.1-ns{int(ns) + 1}-abcdefgh").mkdir()  # another PID namespace: not provable
    (staging / f"x-{dead.pid}-abcdefgh").mkdir()  # an older format, young: not ours to judge
    (staging / "unknown-old").mkdir()
    os.utime(staging / "unknown-old", (0, 0))
    (staging / "unknown-new").mkdir()
    removed = fsutil.clean_stale(staging)
    assert sorted(removed) == sorted([f"x-{dead.pid}.1-ns{ns}-abcdefgh", "unknown-old"])
    assert sorted(os.listdir(staging)) == sorted(
        [
            f"tree-{fsutil.owner_tag()}-abcdefgh",
            f"tree-{dead.pid}.1-ns{int(ns) + 1}-abcdefgh",
            f"x-{dead.pid}-abcdefgh",
            "unknown-new",
        ]
    )


def test_empty_cache_variable_means_the_default_and_writes_nothing_into_the_project(tmp_path, pinned_root):
    s = make_site(tmp_path / "proj", pinned_root, page=STATIC_PAGE)
    before = tree_digest(s.root)
    r = build(s, tmp_path / "out", LESSONKIT_CACHE="")
    assert r.returncode == 0, r.stderr[-2000:]
    assert tree_digest(s.root) == before  # only .cache (and nothing at the project root) was written
    assert (s.root / ".cache" / "render").is_dir() and not (s.root / "render").exists()


def test_local_checkout_variable_and_its_legacy_name(tmp_path, real_project, pinned_root, monkeypatch):
    pin = real_project.pin
    monkeypatch.delenv("AUTOGRAD_SOURCE", raising=False)
    monkeypatch.setenv("LESSONKIT_SOURCE", str(pinned_root))
    assert providers._from_env(pin, tmp_path).provider == "local checkout (LESSONKIT_SOURCE)"
    monkeypatch.delenv("LESSONKIT_SOURCE")
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(pinned_root))
    assert pin.source_env == "AUTOGRAD_SOURCE"
    assert providers._from_env(pin, tmp_path).provider == "local checkout (AUTOGRAD_SOURCE)"
    assert providers._from_env(dataclasses.replace(pin, source_env=None), tmp_path) is None


def test_engine_code_names_no_upstream_project():
    """The pin code is generic: the legacy variable's name lives in pin.toml only."""
    for name in (
        "source/pin.py",
        "source/providers.py",
        "config/files.py",
        "util/fs.py",
        "util/store.py",
        "checks/verify.py",
        "site/links.py",
        "run/box/jail.py",
        "run/box/sandbox.py",
        "run/box/spec.py",
        "run/box/_boot.py",
        "run/runner.py",
        "run/boxrun.py",
    ):
        text = (ROOT / "lessonkit" / name).read_text(encoding="utf-8")
        assert "autograd" not in text.lower(), name


# ---------------------------------------------------------------- the store, entry by entry

DAMAGES = {
    "truncate": lambda p, other: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "cut-40-bytes": lambda p, other: p.write_bytes(
        p.read_bytes()[:-40] if len(p.read_bytes()) > 120 else p.read_bytes()[:-1]
    ),
    "flip-a-byte": lambda p, other: p.write_bytes(_flip(p.read_bytes())),
    "empty": lambda p, other: p.write_bytes(b""),
    "directory": lambda p, other: (p.unlink(), p.mkdir(), (p / "x").write_text("x")),
    "wrong-digest": lambda p, other: p.write_bytes(
        re.sub(rb"^(\S+) [0-9a-f]{64}", rb"\1 " + b"0" * 64, p.read_bytes())
    ),
    "other-entry": lambda p, other: p.write_bytes(other.read_bytes()),
    "link-to-outside": lambda p, other: (p.unlink(), p.symlink_to(other)),
    "not-utf8": lambda p, other: p.write_bytes(p.read_bytes().split(b"\n", 1)[0] + b"\n\xff\xfe"),
}


def _flip(data: bytes) -> bytes:
    i = len(data) - 2 if len(data) > 2 else 0
    return data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :]


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_entry_is_dropped_and_made_again(tmp_path, damage, monkeypatch):
    monkeypatch.setattr(store, "_MEMORY", {})
    s = store.Store(tmp_path, "render")
    key, other_key = store.digest("k"), store.digest("other")
    s.put(key, "<div>值</div>" * 20)
    s.put(other_key, "<p>other</p>")
    outside = tmp_path / "outside"
    outside.write_bytes((tmp_path / "render" / key).read_bytes())  # a link to a copy of the right bytes
    other = outside if damage == "link-to-outside" else tmp_path / "render" / other_key
    DAMAGES[damage](tmp_path / "render" / key, other)
    monkeypatch.setattr(store, "_MEMORY", {})  # a new process
    again = store.Store(tmp_path, "render")
    assert again.get(key) is None and again.dropped == 1
    assert again.get_or_make(key, lambda: "fresh") == "fresh"
    assert store.decode_entry("render", key, (tmp_path / "render" / key).read_bytes(), tmp_path) == "fresh"
    assert not (tmp_path / "render" / key).is_symlink() and outside.exists()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, pinned_root, sdist):
    """One clean cold build (the reference site) and its filled cache."""
    base = tmp_path_factory.mktemp("reference")
    s = make_site(base / "proj", pinned_root, sdist)
    cache = base / "cache"
    r = build(s, base / "site", cache)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_entries_valid(cache)
    for kind in KINDS:
        assert any((cache / kind).iterdir()), f"the reference build stored nothing in {kind}/"
    return {"site": s, "out": base / "site", "digest": site_digest(base / "site"), "cache": cache}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_cache_entries_never_change_the_site(reference, tmp_path, damage):
    """One entry of every kind (render, highlight, pages, symbols, mathml, links, the pin's
    provider marker) damaged the same way: the next build drops them, makes them again and
    writes the same site byte for byte."""
    cache = tmp_path / "cache"
    shutil.copytree(reference["cache"], cache, symlinks=True)
    rng = random.Random(damage)
    damaged = []
    for kind in KINDS:
        entries = sorted(p for p in (cache / kind).iterdir() if p.is_file() and not p.name.startswith("."))
        if kind == "pin":
            entries = [p for p in entries if p.name.endswith(".provider")]
        target = rng.choice(entries)
        others = [p for p in entries if p != target] or sorted(p for p in (cache / "render").iterdir() if p != target)
        outside = tmp_path / f"outside-{kind}"
        outside.write_bytes(target.read_bytes())
        DAMAGES[damage](target, outside if damage == "link-to-outside" else rng.choice(others))
        damaged.append(target)
    r = build(reference["site"], tmp_path / "site", cache)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    assert site_digest(tmp_path / "site") == reference["digest"]
    # A damaged entry the build needed was made again; one it did not need (a filled page
    # makes its highlighted code unnecessary) stays until a read drops it.
    assert_entries_valid(cache, skip=set(damaged))
    store.forget_memory()  # what is on disk: this process may hold the same entries from other tests
    for target in damaged:
        kind = target.parent.name
        value = store.Store(cache, kind).get(target.name)
        assert value is None or store.decode_entry(kind, target.name, target.read_bytes(), cache) == value, target
    assert store.decode_entry("pin", f"{COMMIT}.provider", (cache / "pin" / f"{COMMIT}.provider").read_bytes(), cache)


# ---------------------------------------------------------------- a cache that cannot be written


def _mount(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}); "
            "the read-only and full-disk cases need root and mount permission"
        )


@pytest.fixture
def mountpoint(tmp_path):
    path = tmp_path / "mnt"
    yield path
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _static_reference(base: Path, pinned_root: Path) -> tuple[TmpSite, dict]:
    s = make_site(base / "proj", pinned_root, page=STATIC_PAGE)
    r = build(s, base / "ref", base / "refcache")
    assert r.returncode == 0, r.stderr[-3000:]
    return s, site_digest(base / "ref")


def test_read_only_cache_only_costs_time(tmp_path, pinned_root, mountpoint):
    s, ref = _static_reference(tmp_path, pinned_root)
    _mount(mountpoint, "ro,size=1m")
    r = build(s, tmp_path / "out", mountpoint)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    warnings = [l for l in r.stderr.splitlines() if "cannot write the cache" in l]
    assert warnings and len(warnings) <= len(KINDS) + 1, r.stderr[-3000:]  # one per cache folder (and mathfont/)
    assert "the build continues" in warnings[0]
    assert site_digest(tmp_path / "out") == ref


def test_a_file_where_the_cache_folder_should_be_only_costs_time(tmp_path, pinned_root):
    s, ref = _static_reference(tmp_path, pinned_root)
    cache = tmp_path / "cache"
    cache.mkdir()
    for kind in KINDS:
        (cache / kind).write_text("not a folder\n")
    r = build(s, tmp_path / "out", cache)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "the build continues" in r.stderr
    assert site_digest(tmp_path / "out") == ref


def test_full_cache_only_costs_time(tmp_path, pinned_root, mountpoint):
    s, ref = _static_reference(tmp_path, pinned_root)
    _mount(mountpoint, "size=96k")
    r = build(s, tmp_path / "out", mountpoint)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    assert "No space left on device" in r.stderr and "the build continues" in r.stderr
    assert site_digest(tmp_path / "out") == ref
    assert_entries_valid(mountpoint)  # what did fit is whole; nothing half-written is left


def test_read_only_cache_with_an_experiment_only_costs_time(tmp_path, pinned_root, mountpoint):
    s = make_site(tmp_path / "proj", pinned_root)
    _mount(mountpoint, "ro,size=1m")
    r = build(s, tmp_path / "out", mountpoint)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]


# ---------------------------------------------------------------- concurrency and kill -9


def test_three_concurrent_cold_builds_on_one_cache(reference, tmp_path):
    s = reference["site"]
    cache = tmp_path / "cache"
    env = {**s.env, "LESSONKIT_CACHE": str(cache)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / f"o{i}")],
            cwd=s.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        for i in range(3)
    ]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        assert "Traceback" not in err
    for i in range(3):
        assert site_digest(tmp_path / f"o{i}") == reference["digest"], i
    assert_entries_valid(cache)


@pytest.mark.parametrize("command", ["build", "verify"])
def test_killed_cold_runs_leave_nothing_partial(reference, tmp_path, command):
    """SIGKILL at random points of cold runs (pin extraction, rendering, storing); then a
    normal build is byte-identical to the reference and every entry is whole."""
    s = reference["site"]
    cache = tmp_path / "cache"
    env = {**s.env, "LESSONKIT_CACHE": str(cache)}
    cmd = (
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "killed")]
        if command == "build"
        else [sys.executable, "-m", "lessonkit", "verify", "--no-map"]
    )
    before = tree_digest(s.root)
    rng = random.Random(command)
    for delay in sorted(rng.uniform(0.3, 4.0) for _ in range(4)):
        p = subprocess.Popen(
            cmd,
            cwd=s.root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        time.sleep(delay)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=60)
    r = build(s, tmp_path / "site", cache)
    assert r.returncode == 0, r.stderr[-3000:]
    assert site_digest(tmp_path / "site") == reference["digest"]
    assert_entries_valid(cache)
    assert tree_digest(s.root) == before  # the project is untouched


# ---------------------------------------------------------------- fuzzing the configuration readers

LINE = re.compile(r"^(?P<path>[^\s:][^:]*?)(?::(?P<line>\d+))?: (?P<msg>.+?) — (?P<hint>\S.*)$")


def _mutations(data: bytes, rng: random.Random, n: int):
    specials = [
        b"\x00",
        b"\xff",
        b"\xef\xbb\xbf",
        b"\r",
        b"\n",
        b'"',
        b"[",
        b"]",
        b"=",
        b"..",
        b"/",
        b"{",
        b"}",
        b"9" * 50,
        b"\\",
        b"\t",
        "\u2028".encode(),
        b"[[a]]",
        b"1e999",
        b"true",
    ]
    for _ in range(n):
        d = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(d) + 1)
            op = rng.randrange(4)
            if op == 0 and d:
                del d[i : i + rng.randint(1, 30)]
            elif op == 1:
                d[i:i] = rng.choice(specials)
            elif op == 2 and d:
                d[min(i, len(d) - 1)] = rng.randrange(256)
            else:
                d = d[:i]
        yield bytes(d)


READERS = {
    "pin.toml": lambda p: config.load_pin_fields(p, "sourcemap/pin.toml"),
    "manifest.sha256": lambda p: config.read_manifest(p, "sourcemap/manifest.sha256"),
    "excerpts.json": lambda p: maps.read_excerpt_map(p, "sourcemap/excerpts.json"),
    "roles.toml": lambda p: maps.read_roles(p, "sourcemap/roles.toml"),
}


@pytest.mark.parametrize("name", list(READERS))
def test_fuzzed_configuration_gives_a_value_or_located_lines(tmp_path, name):
    """Random damage to each configuration file: the reader returns a value or raises
    LessonError whose every line is `file[:line]: what — hint`; nothing else escapes."""
    original = (ROOT / "sourcemap" / name).read_bytes()
    if name == "excerpts.json":
        original = original[:6000].rsplit(b"\n  },", 1)[0] + b"\n  }\n ]\n}\n"  # a small valid map
    elif name == "manifest.sha256":
        original = b"\n".join(original.splitlines()[:40]) + b"\n"
    rng = random.Random(name)
    path = tmp_path / name
    outcomes = {"ok": 0, "error": 0}
    for data in _mutations(original, rng, 300):
        path.write_bytes(data)
        try:
            READERS[name](path)
            outcomes["ok"] += 1
        except LessonError as exc:
            outcomes["error"] += 1
            for line in str(exc).splitlines():
                assert LINE.match(line), (data[:200], line)
    assert outcomes["error"] > 50, outcomes


@pytest.mark.parametrize("text", ["<script>alert(1)</script>", "a\nb", "x" * 400, "", "local & \"quoted\""])
def test_provider_record_with_markup_or_junk_is_never_shown(tmp_path, real_project, sdist, monkeypatch, text):
    """Even with a valid digest (written through the store), a provider record that is not one
    line of plain text makes the cached tree be provided again: it never reaches a page."""
    pin = dataclasses.replace(real_project.pin, sdist_sha256=hashlib.sha256(sdist.read_bytes()).hexdigest())
    cache = tmp_path / "cache"
    for name in ("AUTOGRAD_SOURCE", "LESSONKIT_SOURCE", "LESSONKIT_GIT_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LESSONKIT_SDIST", str(sdist))
    monkeypatch.setattr(store, "_MEMORY", {})
    first = providers.provide(pin, cache)
    store.Store(cache, "pin").put(f"{pin.commit}.provider", text)
    monkeypatch.setattr(store, "_MEMORY", {})
    again = providers.provide(pin, cache)
    assert not again.cached
    assert again.provider == first.provider == "local archive LESSONKIT_SDIST (autograd-1.9.1.tar.gz)"
    monkeypatch.setattr(store, "_MEMORY", {})
    assert providers.provide(pin, cache).cached


def test_cache_folders_that_are_links_are_not_written_through(tmp_path, pinned_root):
    """A cache folder replaced by a link to somewhere else: nothing is read from or written
    there; one warning per folder; the same site."""
    s, ref = _static_reference(tmp_path, pinned_root)
    cache = tmp_path / "cache"
    cache.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    for kind in KINDS:
        if kind != "pin":
            (cache / kind).symlink_to(outside)
    r = build(s, tmp_path / "out", cache)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "is not usable" in r.stderr
    assert sorted(os.listdir(outside)) == ["keep.txt"]
    assert site_digest(tmp_path / "out") == ref


# ---------------------------------------------------------------- the sdist sha256 the build publishes


def test_a_cached_tree_does_not_publish_a_wrong_sdist_sha256(tmp_path, pinned_root, sdist):
    """pin.toml's `[sdist] sha256` appears on the site (the acceptance page, `[[lessonkit:sdist-sha256]]`):
    it is compared with the archive's own whenever the tree comes from the cache as well, through
    what was recorded when the tree was extracted; an edited value fails the build at its line."""
    s = make_site(tmp_path / "proj", pinned_root, sdist)
    cache = tmp_path / "cache"
    r = build(s, tmp_path / "site", cache)
    assert r.returncode == 0, r.stderr[-3000:]
    accepted = (tmp_path / "site" / "attachments" / "acceptance" / "index.html").read_text(encoding="utf-8")
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert f"<code>{digest}</code>, equal to the release archive's own" in accepted
    toml = s.root / "sourcemap" / "pin.toml"
    good = toml.read_text()
    toml.write_text(good.replace(digest, "0" * 64))
    line = next(n for n, text in enumerate(good.splitlines(), 1) if text.startswith("sha256 = "))
    s.env.pop("LESSONKIT_SDIST")  # only the cached tree (and its record) is at hand
    r = build(s, tmp_path / "site-2", cache)
    assert r.returncode != 0
    assert (
        f"sourcemap/pin.toml:{line}: [sdist] sha256 0000000000000000… is not the sha256 of the archive the "
        f"cached tree was extracted from ({digest[:16]}…) — give the release archive's own sha256 "
        "(the one its package index lists); the build publishes this value" in r.stderr
    ), r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    toml.write_text(good)
    r = build(s, tmp_path / "site-3", cache)
    assert r.returncode == 0, r.stderr[-3000:]


def test_an_archive_at_hand_is_compared_with_the_pin_for_any_provider(tmp_path, real_project, sdist, monkeypatch):
    """A tree from a local checkout publishes the pin's sha256 too: the cached archive, when there
    is one, must be that archive; without any, the acceptance page says it was not compared."""
    from lessonkit.source.providers import check_sdist, provide

    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    pin = dataclasses.replace(real_project.pin, sdist_sha256=digest)
    cache = tmp_path / "cache"
    monkeypatch.delenv("LESSONKIT_SDIST", raising=False)
    monkeypatch.setenv("AUTOGRAD_SOURCE", str(real_project.tree.root))
    assert (provide(pin, cache).sdist_checked, check_sdist(pin, cache)) == (False, False)  # nothing at hand
    (cache / "pin").mkdir(parents=True, exist_ok=True)
    shutil.copy(sdist, cache / "pin" / pin.sdist_filename)
    assert provide(pin, cache).sdist_checked
    with pytest.raises(LessonError) as exc:
        provide(dataclasses.replace(pin, sdist_sha256="f" * 64), cache)
    assert exc.value.problem.message == (
        f"[sdist] sha256 ffffffffffffffff… is not the sha256 of the cached {pin.sdist_filename} ({digest[:16]}…)"
    )
    assert not check_sdist(dataclasses.replace(pin, sdist_sha256="none"), cache)
