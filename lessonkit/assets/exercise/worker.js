/* Runs an exercise's checks (lkcheck.py) or a runnable block's snippet (lkrun.py) off the page's
   thread: Pyodide from this site's assets/pyodide/ (loaded on the first message), the two runners
   next to this file, the block's files under /lk/ of its file system. */

import { loadPyodide } from "../pyodide/pyodide.mjs";

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
  const pyodide = await loadPyodide({ indexURL: new URL("../pyodide/", import.meta.url).href });
  pyodide.FS.mkdirTree("/lkcheck");
  for (const name of ["lkcheck.py", "lkrun.py"]) {
    const source = await (await fetch(new URL(name, import.meta.url))).text();
    pyodide.FS.writeFile("/lkcheck/" + name, source);
  }
  pyodide.FS.mkdirTree(ROOT);
  py = pyodide;
  return py;
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
    if (code !== undefined) {
      const args = pyodide.toPy({ code: code, root: ROOT, folders: folders });
      const ran = pyodide.runPython(
        "import sys, json\n" +
        "sys.path.insert(0, '/lkcheck') if '/lkcheck' not in sys.path else None\n" +
        "import lkrun\n" +
        "json.dumps(lkrun.run(code, root, folders))",
        { globals: args },
      );
      args.destroy();
      self.postMessage(Object.assign({ state: "ran" }, JSON.parse(ran)));
      return;
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
