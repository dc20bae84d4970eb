"""Material's Chinese search segments with jieba, whose prefix dictionary lessonkit keeps sealed
in the build cache (``lessonkit.integrations.mkdocs.jiebacache``), never in the system's temporary
folder: whole builds of a throwaway site with the search plugin, over the real pin."""

from __future__ import annotations

import shutil

JIEBA_TEXT = "反向模式自动微分计算梯度"
JIEBA_CUT = "import jieba, json, logging\njieba.setLogLevel(logging.ERROR)\nprint(json.dumps(jieba.lcut({!r})))\n"


def test_a_rewritten_jieba_cache_in_tmpdir_does_not_change_the_search_index(tmp_path, pinned_root):
    """Material's search segments Chinese with jieba, whose prefix dictionary is cached as
    ``$TMPDIR/jieba.cache`` and loaded unchecked. A build keeps it in its own cache instead
    (``lessonkit.integrations.mkdocs.jiebacache``): a planted file there changes nothing."""
    import json
    import marshal
    import subprocess
    import sys

    from support import TmpSite

    s = TmpSite(tmp_path / "proj", pinned_root)
    yml = s.root / "mkdocs.yml"
    yml.write_text(yml.read_text().replace("plugins: []", "plugins:\n  - search:\n      lang: zh\n"))
    s.page("a.md", f"# 梯度\n\n{JIEBA_TEXT}。\n")
    plain, clean_tmp, planted = tmp_path / "plain-tmp", tmp_path / "clean-tmp", tmp_path / "planted-tmp"
    for d in (plain, clean_tmp, planted):
        d.mkdir()
    # one "word": the whole sentence (a prefix dictionary holds every prefix, with frequency 0)
    freq = {JIEBA_TEXT[:n]: 0 for n in range(1, len(JIEBA_TEXT))} | {JIEBA_TEXT: 10}
    (planted / "jieba.cache").write_bytes(marshal.dumps((freq, 10)))

    def cut(tmp):
        r = subprocess.run(
            [sys.executable, "-c", JIEBA_CUT.format(JIEBA_TEXT)],
            env={**s.env, "TMPDIR": str(tmp)},
            capture_output=True,
            text=True,
        )
        return json.loads(r.stdout)

    assert cut(planted) == [JIEBA_TEXT] != cut(plain), "the planted cache would change jieba's words"

    def index(tmp, name):
        r = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / name)],
            cwd=s.root,
            env={**s.env, "TMPDIR": str(tmp)},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        assert "prefix dict" not in r.stderr and "Loading model" not in r.stderr  # jieba's DEBUG lines
        return (tmp_path / name / "search" / "search_index.json").read_text(encoding="utf-8")

    clean = index(clean_tmp, "clean")
    texts = [d["text"] for d in json.loads(clean)["docs"]]
    assert any("\u200b".join(cut(plain)) in t for t in texts), texts  # the index holds jieba's words
    assert index(planted, "planted") == clean
    assert [p.name for p in (s.cache / "jieba").glob("*/*")] == ["prefix.sealed"]
    assert not list(clean_tmp.iterdir()), "the build left something in the system's temporary folder"

    # the sealed file in the build cache: a forgery (the planted words, a made-up seal) is not read,
    # and the next build writes the real one again
    [kept] = (s.cache / "jieba").glob("*/prefix.sealed")
    forged = b"lk-jieba-1 " + b"0" * 64 + b"\n" + marshal.dumps((freq, 10))
    kept.write_bytes(forged)
    assert index(clean_tmp, "forged") == clean
    assert kept.read_bytes() != forged and kept.read_bytes().startswith(b"lk-jieba-1 ")
    # sealed under another cache's key: not this cache's, not read either
    other = tmp_path / "other-cache"
    code = "import sys; from pathlib import Path; from lessonkit.integrations.mkdocs import jiebacache\n"
    code += "print(jiebacache.prepare(Path(sys.argv[1])))"
    r = subprocess.run([sys.executable, "-c", code, str(other)], env={**s.env, "TMPDIR": str(clean_tmp)},
                       capture_output=True, text=True)  # fmt: skip
    assert r.stdout == "True\n", r.stderr
    [foreign] = other.glob("jieba/*/prefix.sealed")
    head, _, data = foreign.read_bytes().partition(b"\n")
    kept.write_bytes(head + b"\n" + marshal.dumps((freq, 10)))
    assert index(clean_tmp, "foreign") == clean


def test_a_jieba_dictionary_prepared_ahead_is_the_one_the_build_reads(tmp_path, pinned_root):
    """The first command builds jieba's prefix dictionary in the background while the build starts
    (``jiebacache.prepare``, noxfile.py): it lands where the build looks, the build reads it instead of
    building its own, and the search index is the same as a build that made it itself."""
    import subprocess
    import sys

    from support import TmpSite

    s = TmpSite(tmp_path / "proj", pinned_root)
    yml = s.root / "mkdocs.yml"
    yml.write_text(yml.read_text().replace("plugins: []", "plugins:\n  - search:\n      lang: zh\n"))
    s.page("a.md", f"# 梯度\n\n{JIEBA_TEXT}。\n")
    (tmp_path / "tmp").mkdir()
    env = {**s.env, "TMPDIR": str(tmp_path / "tmp")}

    def build(name: str) -> str:
        r = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / name)],
            cwd=s.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        return (tmp_path / name / "search" / "search_index.json").read_text(encoding="utf-8")

    made_by_the_build = build("own")
    shutil.rmtree(s.cache / "jieba")
    code = "import sys; from pathlib import Path; from lessonkit.integrations.mkdocs import jiebacache\n"
    code += "print(jiebacache.prepare(Path(sys.argv[1])))"
    r = subprocess.run([sys.executable, "-c", code, str(s.cache)], env=env, capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (0, "True\n", "")
    [prepared] = (s.cache / "jieba").glob("*/prefix.sealed")
    before = prepared.stat()
    assert build("prepared") == made_by_the_build
    after = prepared.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "the build made its own"
    assert not list((tmp_path / "tmp").iterdir())
