/* Runs an exercise's checks inside a worker: lkcheck.py on the files of the message, under /lk/ of
   Pyodide's file system. Both workers share it: worker.js (the site's, a module worker that loads
   Pyodide from assets/pyodide/) and the offline edition's classic worker (lessonkit.site.
   offline_runtime), so this file has no import or export; it defines self.lkExerciseRunner.
   loadRuntime() gives the Pyodide instance, checkSource() the text of lkcheck.py (both once). */

self.lkExerciseRunner = function (loadRuntime, checkSource) {
  const ROOT = "/lk";
  let py = null;

  function clear(FS, dir) {
    for (const name of FS.readdir(dir)) {
      if (name === "." || name === "..") continue;
      const path = dir + "/" + name;
      if (FS.isDir(FS.stat(path).mode)) { clear(FS, path); FS.rmdir(path); } else { FS.unlink(path); }
    }
  }

  async function runtime() {
    if (py) return py;
    const pyodide = await loadRuntime();
    const source = await checkSource();
    pyodide.FS.mkdirTree("/lkcheck");
    pyodide.FS.writeFile("/lkcheck/lkcheck.py", source);
    pyodide.FS.mkdirTree(ROOT);
    py = pyodide;
    return py;
  }

  self.onmessage = async (ev) => {
    const { files, tests } = ev.data;
    try {
      const fresh = !py;
      const pyodide = await runtime();
      if (fresh) self.postMessage({ state: "loaded" });
      const FS = pyodide.FS;
      clear(FS, ROOT);
      for (const [path, text] of Object.entries(files)) {
        const full = ROOT + "/" + path;
        FS.mkdirTree(full.slice(0, full.lastIndexOf("/")));
        FS.writeFile(full, text);
      }
      const globals = pyodide.toPy({ test: ROOT + "/" + tests, root: ROOT });
      const out = pyodide.runPython(
        "import sys, json\n" +
        "sys.path.insert(0, '/lkcheck') if '/lkcheck' not in sys.path else None\n" +
        "import lkcheck\n" +
        "json.dumps(lkcheck.run(test, root))",
        { globals: globals },
      );
      globals.destroy();
      self.postMessage({ state: "done", rows: JSON.parse(out) });
    } catch (e) {
      self.postMessage({ state: "broken", reason: String((e && e.message) || e).split("\n").slice(-2).join(" ") });
    }
  };
};
