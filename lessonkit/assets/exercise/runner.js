/* Runs an exercise's checks (lkcheck.py) or a runnable block's snippet (lkrun.py) inside a worker,
   on the files of the message under /lk/ of Pyodide's file system. Both workers share it:
   worker.js (the site's, a module worker that loads Pyodide from assets/pyodide/) and the offline
   edition's classic worker (lessonkit.site.offline_runtime), so this file has no import or export;
   it defines self.lkExerciseRunner. loadRuntime() gives the Pyodide instance, source(name) the
   text of a runner next to it, "lkcheck.py" or "lkrun.py" (each once). */

self.lkExerciseRunner = function (loadRuntime, source) {
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
    pyodide.FS.mkdirTree("/lkcheck");
    for (const name of ["lkcheck.py", "lkrun.py"]) {
      pyodide.FS.writeFile("/lkcheck/" + name, await source(name));
    }
    pyodide.FS.mkdirTree(ROOT);
    py = pyodide;
    return py;
  }

  function call(pyodide, module, expr, values) {
    const globals = pyodide.toPy(values);
    const out = pyodide.runPython(
      "import sys, json\n" +
      "sys.path.insert(0, '/lkcheck') if '/lkcheck' not in sys.path else None\n" +
      "import " + module + "\n" +
      "json.dumps(" + expr + ")",
      { globals: globals },
    );
    globals.destroy();
    return JSON.parse(out);
  }

  self.onmessage = async (ev) => {
    const { files, tests, code, folders } = ev.data;
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
      if (code !== undefined) {  // a runnable block: its snippet as __main__, the teaching folders importable
        const ran = call(pyodide, "lkrun", "lkrun.run(code, root, folders)", { code: code, root: ROOT, folders: folders });
        self.postMessage(Object.assign({ state: "ran" }, ran));
        return;
      }
      const rows = call(pyodide, "lkcheck", "lkcheck.run(test, root)", { test: ROOT + "/" + tests, root: ROOT });
      self.postMessage({ state: "done", rows: rows });
    } catch (e) {
      self.postMessage({ state: "broken", reason: String((e && e.message) || e).split("\n").slice(-2).join(" ") });
    }
  };
};
