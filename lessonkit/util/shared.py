"""Everything lessonkit keeps for the life of the process, and why each may outlive a build.

A build's state (project, stores, runner, problems, generated pages, the page being rendered)
lives in its :class:`lessonkit.build.Build`, which the MkDocs adapter
(:mod:`lessonkit.integrations.mkdocs.hooks`) keeps with the configuration it was made for; ``mkdocs serve``
gives every rebuild a new configuration and so a new Build. What follows is the complete list of
the rest: ``tests/engine/test_process_state.py`` scans every module of the package (names that code
rebinds or changes in place, memoised functions, context variables, module-level objects with
state) and fails when this list and the package disagree, either way.

The kinds of entry:

* ``cache`` — keyed by the content it was made from, so it is safe to share across serve
  rebuilds and across projects: a changed input has another key, and an entry can never be
  found for inputs it was not made from;
* ``process`` — a fact about this process, this machine or the installed tools (the same
  for every build the process runs), or a "once per process" memo of a warning or a check;
* ``session`` — what MkDocs told this process at startup (one object, see the adapter);
* ``fixed`` — built once at import and never changed afterwards.

Not lessonkit's own, and so not in the list: the interpreter's module table. A project's block
kind and attachment modules (``sourcemap/kinds.toml``, ``sourcemap/attachments.toml``) are
imported once per process and project folder, like any module, so a ``serve`` session keeps the
version of such a module it first imported (restart serve after editing one); MkDocs likewise
keeps each hooks file it loaded.
"""

from __future__ import annotations

KINDS = ("cache", "process", "session", "fixed")

STATE: tuple[tuple[str, tuple[str, str]], ...] = (
    # ---------------------------------------------------------------- content-keyed caches
    (
        "lessonkit.util.store._MEMORY",
        (
            "cache",
            "The memory layer of every Store: (cache folder, kind, key) -> value, what this process read "
            "from or wrote to that cache (most keys are the SHA-256 of every input, lessonkit's own source "
            "included; a pin or site record is a fact about its own cache); bounded, emptied when full.",
        ),
    ),
    (
        "lessonkit.source.pyindex.SourceFile._shared",
        (
            "cache",
            "Parsed files by (path, SHA-256 of their bytes): a file's ast and symbol table survive serve "
            "rebuilds until its bytes change; bounded, emptied when full.",
        ),
    ),
    (
        "lessonkit.project._PARSED",
        (
            "cache",
            "Parsed pages by (path, text, line offset, the kinds' identities, badges): everything "
            "parse_page reads; the entry keeps the kind objects, so that their ids stay theirs, and every "
            "caller gets its own lists. Kind modules live as long as the process (below). Bounded, "
            "emptied when full: a serve rebuild parses only the pages that changed.",
        ),
    ),
    (
        "lessonkit.site.active._RISKY",
        (
            "cache",
            "Whether a set of attribute names may run, load or restyle, by the names: a pure function of "
            "its key, memoised for the site check's mutated copies of a page; bounded, emptied when full.",
        ),
    ),
    (
        "lessonkit.integrations.mkdocs.guest.SKIP",
        (
            "fixed",
            "The page context of a guest site's page that is no lessonkit page: built once at import and "
            "never changed (the Markdown extension leaves such a page as it is).",
        ),
    ),
    (
        "lessonkit.run.box.tree._BYTECODE",
        (
            "cache",
            "Checked-hash bytecode of pinned modules by (SHA-256 of the source, its path in a jail): a pure "
            "function of its key, compiled once per process instead of once per serve rebuild; bounded, "
            "emptied when full.",
        ),
    ),
    (
        "lessonkit.checks.shown._serialized",
        (
            "cache",
            "A block's markup as the HTML parser serializes it, memoised by the markup (a pure function "
            "of its argument; lru_cache of 256 entries): the site check compares each engine block and "
            "its mutated copies with it.",
        ),
    ),
    (
        "lessonkit.site.offline._folder_link",
        (
            "cache",
            "A link of the offline edition with index.html where it names a folder, memoised by (link, "
            "page folder, the site's folders) (a pure function of its arguments; lru_cache of 4096 entries).",
        ),
    ),
    (
        "lessonkit.site.search._compacted",
        (
            "cache",
            "A search-index text without its redundant zero-width spaces, memoised by (text, separator) "
            "(a pure function of its arguments; lru_cache of 4096 entries): the serve rewrites the whole "
            "index after every edit.",
        ),
    ),
    (
        "lessonkit.kinds.snapshot._md",
        (
            "cache",
            "A table cell's Markdown as HTML, memoised by the cell's text (a pure function of its "
            "argument; lru_cache of 4096 entries).",
        ),
    ),
    # ---------------------------------------------------------------- the MkDocs session
    (
        "lessonkit.integrations.mkdocs.hooks.SESSION",
        (
            "session",
            "The MkDocs command of this process: MkDocs says it only in on_startup, once per process, and "
            "the configurations of serve's rebuilds carry no trace of it; on_shutdown forgets it. It only "
            "decides whether the written site's links are checked.",
        ),
    ),
    # ---------------------------------------------------------------- facts about the process
    (
        "lessonkit.util.store.code_version",
        (
            "process",
            "The SHA-256 of lessonkit's own source, part of every cache key: the code this process runs "
            "does not change while it runs (Python does not reload it on a serve rebuild).",
        ),
    ),
    (
        "lessonkit.run.box.lessonkit_record._WRITER",
        (
            "process",
            "The recorder that writes an experiment's record (at most one per process): state of the "
            "experiment's own process in its box, the only place lessonkit_record is imported.",
        ),
    ),
    (
        "lessonkit.run.jobs.versions",
        ("process", "The Python and NumPy versions the experiments run with (installed tools, part of their keys)."),
    ),
    (
        "lessonkit.pipeline.markdown.tools",
        ("process", "The Pygments and pymdown-extensions versions and highlight options (part of every code key)."),
    ),
    (
        "lessonkit.pipeline.mathml._converter",
        ("process", "The latex2mathml version (part of every formula key): an installed tool's version."),
    ),
    (
        "lessonkit.site.mathfont._fonttools",
        ("process", "The fontTools version (part of the math font subset's key): an installed tool's version."),
    ),
    (
        "lessonkit.run.box.jail.selected",
        (
            "process",
            "The jail this machine gives the boxes (bubblewrap, lessonkit's own namespaces or none), probed "
            "once, with the one warning when there is none (LESSONKIT_SANDBOX is read at that first probe).",
        ),
    ),
    (
        "lessonkit.run.box.spec.engine",
        (
            "process",
            "The SHA-256 of lessonkit's code that runs a box and shapes its result, part of every experiment "
            "key: the code this process runs does not change while it runs.",
        ),
    ),
    (
        "lessonkit.run.box._boot.libc.syscall.restype",
        (
            "process",
            "The return type of libc's syscall() for the box's launcher (a long): set before each call by the "
            "launcher, a process of its own that runs _boot.py; the same value every time.",
        ),
    ),
    (
        "lessonkit.site.pdffont.radicals",
        (
            "process",
            "Which ideograph shares its glyph with each CJK radical in the system's CJK font (read from the "
            "installed font once): a fact about the machine while the process runs.",
        ),
    ),
    (
        "lessonkit.run.box.fastexit._status",
        (
            "process",
            "The status given to sys.exit after a cancel by a signal (fastexit.skip_teardown): the process "
            "then ends with it at exit, without the interpreter's teardown of its heap.",
        ),
    ),
    (
        "lessonkit.run.box.sandbox.BOXES",
        (
            "process",
            "The sandbox boxes this process is running and their folder of boxes, so that a cancelled or "
            "failed build kills them all and removes their folders (Runner.cancel, signals, process exit); "
            "empty between builds.",
        ),
    ),
    (
        "lessonkit.util.fs._NS",
        ("process", "This process's PID namespace (asked again after a fork): it names the owner of temp files."),
    ),
    (
        "lessonkit.util.fs._TAGS",
        (
            "process",
            "The owner tag (pid, start time, namespace) of this process, and of each forked child under "
            "its own pid: fixed for a process's life.",
        ),
    ),
    (
        "lessonkit.util.store._CHECKED",
        (
            "process",
            "Cache folders checked once per process to be the cache's own (not a link); every entry is "
            "still checked on each read and written atomically without following links.",
        ),
    ),
    (
        "lessonkit.util.seal._KEYS",
        (
            "process",
            "Each cache folder's seal key, read (or made) once per process; a cache that cannot hold one "
            "gets a key of this process alone, so that nothing unsealed is ever accepted.",
        ),
    ),
    (
        "lessonkit.integrations.mkdocs.jiebacache._PRIVATE",
        (
            "process",
            "The private temporary folder of this process where jieba writes its own cache file (made "
            "once, removed at exit): jieba never loads a file another process could have written; the "
            "dictionary builds share is kept sealed in the build cache instead.",
        ),
    ),
    (
        "lessonkit.util.store._SWEPT",
        ("process", "Cache folders whose leftover temporary files of killed builds were swept once by this process."),
    ),
    (
        "lessonkit.util.store._WARNED",
        ("process", "Cache folders this process already warned about (read-only, full): one warning each."),
    ),
    (
        "lessonkit.util.store.log",
        (
            "process",
            "The cache logger gets its own handler once, when a warning must be shown and the process has "
            "configured no logging (the command line outside MkDocs).",
        ),
    ),
    # ---------------------------------------------------------------- built at import
    (
        "lessonkit.kinds.KINDS",
        (
            "fixed",
            "The built-in block kinds, registered in the Registry's constructor; a project's own kinds "
            "make a new Registry (with_kinds), never change this one.",
        ),
    ),
)
