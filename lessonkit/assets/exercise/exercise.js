/* Exercise blocks (lessonkit/kinds/exercise.py): an editor with line numbers, Run / Stop / Reset,
   the checks' outcome, the reference once the reader has tried. The checks run in a worker
   (worker.js), which loads the Python runtime from this site's assets/pyodide/ on the first Run.
   The reader's text is kept in localStorage, one entry per exercise file.
   Runnable blocks (lessonkit/kinds/runnable.py, class lk-exercise lk-runnable): Run runs the block's
   code in the same worker and shows what it printed; the answer the build recorded stays folded.
   A classic script (lessonkit.js adds it to a page that has an exercise block), so that it also
   loads from file:; it defines window.lessonkitExercise.init. Where window.lessonkitExerciseWorker
   is defined (the offline edition, lessonkit.site.offline_runtime), that function makes the worker:
   it returns a promise of one. */
(function () {
"use strict";

const WORKER = new URL("worker.js", document.currentScript.src);
const TIMEOUT_MS = 120000; // a run that takes longer (an endless loop) is stopped

let worker = null; // a promise of the page's one worker, shared by its exercises
let loaded = false;

function fill(text, values) {
  return text.replace(/\{([a-z_]+)\}/g, (m, k) => (k in values ? String(values[k]) : m));
}

function storageKey(block) {
  return "lessonkit-exercise:" + block.dataset.lkFile;
}

function readStore(block) {
  try {
    return JSON.parse(localStorage.getItem(storageKey(block)) || "null");
  } catch (e) {
    return null;
  }
}

function writeStore(block, data) {
  try {
    if (data === null) localStorage.removeItem(storageKey(block));
    else localStorage.setItem(storageKey(block), JSON.stringify(data));
  } catch (e) {
    /* storage may be full or disabled: the editor still works */
  }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// The checks run the page's files and the reader's edit: Python that can reach JavaScript. A worker
// loaded from its own URL would have no Content-Security-Policy (a static host sends none with
// it); one made from a blob: URL inherits the page's, so its code may fetch and import nothing
// but the site's own files. The blob only imports the worker module, from this site.
function newWorker() {
  const code = "import " + JSON.stringify(WORKER.href) + ";";
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  try {
    return new Worker(url, { type: "module" });
  } finally {
    URL.revokeObjectURL(url);
  }
}

function startWorker() {
  const make = window.lessonkitExerciseWorker;
  return new Promise((ok) => ok(make ? make() : newWorker()));
}

function setUp(block) {
  if (block.dataset.lkReady) return;
  block.dataset.lkReady = "1";
  const words = JSON.parse(block.dataset.lkLabels);
  const area = block.querySelector("textarea.lk-ex-code");
  const gutter = block.querySelector(".lk-ex-lines");
  const result = block.querySelector(".lk-ex-result");
  const reference = block.querySelector("details.lk-ex-reference");
  const runButton = block.querySelector('[data-lk-action="run"]');
  const stopButton = block.querySelector('[data-lk-action="stop"]');
  const resetButton = block.querySelector('[data-lk-action="reset"]');
  const start = area.defaultValue; // the repository's file, as the page holds it
  const support = {};
  block.querySelectorAll(".lk-ex-checks pre.lk-ex-file").forEach((pre) => {
    support[pre.dataset.lkPath] = pre.textContent;
  });
  if (reference) {
    const pre = reference.querySelector("pre.lk-ex-file");
    support[pre.dataset.lkPath] = pre.textContent;
  }
  const size = block.dataset.lkSize;

  function numbers() {
    const n = area.value.split("\n").length;
    let text = "";
    for (let i = 1; i <= n; i++) text += i + "\n";
    gutter.textContent = text;
    gutter.scrollTop = area.scrollTop;
  }

  const saved = readStore(block);
  if (saved && typeof saved.text === "string" && saved.text !== start) {
    area.value = saved.text;
    result.textContent = words["exercise-restored"];
  }
  if (saved && saved.tried && reference) reference.hidden = false;
  numbers();

  // Tab indents while editing; Esc leaves editing, so the next Tab moves focus on.
  let editing = true;
  area.addEventListener("focus", () => { editing = true; });
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { editing = false; return; }
    if (ev.key !== "Tab" || !editing || ev.altKey || ev.ctrlKey || ev.metaKey) {
      if (ev.key !== "Tab" && ev.key !== "Shift") editing = true;
      return;
    }
    ev.preventDefault();
    const s = area.selectionStart, e = area.selectionEnd, v = area.value;
    if (ev.shiftKey) {
      const lineStart = v.lastIndexOf("\n", s - 1) + 1;
      const cut = (v.slice(lineStart).match(/^ {1,4}/) || [""])[0].length;
      if (cut) { area.setRangeText("", lineStart, lineStart + cut, "preserve"); }
    } else {
      area.setRangeText("    ", s, e, "end");
    }
    area.dispatchEvent(new Event("input"));
  });
  area.addEventListener("input", () => {
    numbers();
    const data = readStore(block) || {};
    data.text = area.value;
    writeStore(block, data);
  });
  area.addEventListener("scroll", () => { gutter.scrollTop = area.scrollTop; });

  function show(rows, seconds) {
    const counts = { passed: 0, failed: 0, error: 0, skipped: 0 };
    rows.forEach((r) => { counts[r.outcome] = (counts[r.outcome] || 0) + 1; });
    result.textContent = "";
    const head = el("p", "lk-ex-summary", fill(words["exercise-summary"], counts) + " · " +
      fill(words["exercise-time"], { seconds: seconds.toFixed(1) }));
    result.appendChild(head);
    const list = el("ul", "lk-ex-tests");
    rows.forEach((r) => {
      const li = el("li", "lk-ex-test lk-ex-" + r.outcome);
      li.dataset.outcome = r.outcome;
      li.dataset.test = r.name;
      li.appendChild(el("span", "lk-ex-outcome", words["exercise-" + r.outcome] || r.outcome));
      li.appendChild(document.createTextNode(" "));
      li.appendChild(el("code", "lk-ex-name", r.name));
      if (r.outcome !== "passed") {
        const detail = el("pre", "lk-ex-message");
        let text = r.message;
        (r.where || []).forEach((w) => { text += "\n  " + w.file + ":" + w.line + "  " + w.text; });
        if (r.stdout) text += "\n" + r.stdout;
        detail.textContent = text;
        li.appendChild(detail);
      }
      list.appendChild(li);
    });
    result.appendChild(list);
    block.dataset.lkOutcome = JSON.stringify(counts);
  }

  function busy(on) {
    runButton.disabled = on;
    stopButton.hidden = !on;
    block.dataset.lkBusy = on ? "1" : "";
  }

  function stop(message) {
    if (worker) {
      const gone = worker;
      worker = null;
      loaded = false;
      gone.then((w) => w.terminate(), () => {});
    }
    busy(false);
    result.textContent = message;
  }

  runButton.addEventListener("click", () => {
    busy(true);
    result.textContent = loaded ? words["exercise-running"] : fill(words["exercise-loading"], { size: size });
    if (!worker) worker = startWorker();
    const mine = worker;
    const files = Object.assign({}, support);
    files[block.dataset.lkFile] = area.value;
    const t0 = performance.now();
    // the limit counts the checks only, not the runtime's download on a slow link
    let timer = null;
    const limit = () => { timer = setTimeout(() => stop(words["exercise-stopped"]), TIMEOUT_MS); };
    if (loaded) limit();
    mine.then((w) => {
      if (worker !== mine) return; // stopped while the runtime's files loaded
      w.onmessage = (ev) => {
        const msg = ev.data;
        if (msg.state === "loaded") {
          loaded = true;
          result.textContent = words["exercise-running"];
          limit();
          return;
        }
        clearTimeout(timer);
        busy(false);
        if (msg.state === "done") {
          show(msg.rows, (performance.now() - t0) / 1000);
          if (reference) reference.hidden = false;
          const data = readStore(block) || {};
          data.tried = true;
          data.text = area.value;
          data.outcome = block.dataset.lkOutcome;
          writeStore(block, data);
        } else {
          result.textContent = fill(words["exercise-broken"], { reason: msg.reason });
        }
      };
      w.onerror = (ev) => {
        clearTimeout(timer);
        stop(fill(words["exercise-broken"], { reason: ev.message || "worker" }));
      };
      w.postMessage({ files: files, tests: block.dataset.lkTests });
    }, (e) => {
      clearTimeout(timer);
      if (worker === mine) stop(fill(words["exercise-broken"], { reason: String((e && e.message) || e) }));
    });
  });
  stopButton.addEventListener("click", () => stop(words["exercise-stopped"]));
  resetButton.addEventListener("click", () => {
    area.value = start;
    numbers();
    const data = readStore(block);
    writeStore(block, data && data.tried ? { tried: true } : null);
    result.textContent = "";
  });
}

function setUpRun(block) {
  if (block.dataset.lkReady) return;
  block.dataset.lkReady = "1";
  const words = JSON.parse(block.dataset.lkLabels);
  const result = block.querySelector(".lk-ex-result");
  const runButton = block.querySelector('[data-lk-action="run"]');
  const stopButton = block.querySelector('[data-lk-action="stop"]');
  const files = {};
  const folders = [];
  block.querySelectorAll("pre.lk-ex-file").forEach((pre) => {
    files[pre.dataset.lkPath] = pre.textContent;
    const folder = pre.dataset.lkPath.slice(0, pre.dataset.lkPath.lastIndexOf("/"));
    if (!folders.includes(folder)) folders.push(folder);
  });

  function busy(on) {
    runButton.disabled = on;
    stopButton.hidden = !on;
    block.dataset.lkBusy = on ? "1" : "";
  }

  function stop(message) {
    if (worker) {
      const gone = worker;
      worker = null;
      loaded = false;
      gone.then((w) => w.terminate(), () => {});
    }
    busy(false);
    result.textContent = message;
  }

  function show(msg) {
    result.textContent = "";
    block.dataset.lkStatus = String(msg.status);
    result.appendChild(el("p", "lk-runnable-label", words["run-stdout"]));
    result.appendChild(el("pre", "lk-ex-message lk-runnable-stdout", msg.stdout));
    if (msg.stderr) {
      result.appendChild(el("p", "lk-runnable-label", words["run-stderr"]));
      result.appendChild(el("pre", "lk-ex-message lk-runnable-stderr", msg.stderr));
    }
  }

  runButton.addEventListener("click", () => {
    busy(true);
    delete block.dataset.lkStatus;
    result.textContent = loaded ? words["run-running"] : fill(words["exercise-loading"], { size: block.dataset.lkSize });
    if (!worker) worker = startWorker();
    const mine = worker;
    let timer = null;
    const limit = () => { timer = setTimeout(() => stop(words["run-stopped"]), TIMEOUT_MS); };
    if (loaded) limit();
    mine.then((w) => {
      if (worker !== mine) return; // stopped while the runtime's files loaded
      w.onmessage = (ev) => {
        const msg = ev.data;
        if (msg.state === "loaded") {
          loaded = true;
          result.textContent = words["run-running"];
          limit();
          return;
        }
        clearTimeout(timer);
        busy(false);
        if (msg.state === "ran") show(msg);
        else result.textContent = fill(words["run-broken"], { reason: msg.reason });
      };
      w.onerror = (ev) => {
        clearTimeout(timer);
        stop(fill(words["run-broken"], { reason: ev.message || "worker" }));
      };
      w.postMessage({ files: files, code: block.dataset.lkCode, folders: folders });
    }, (e) => {
      clearTimeout(timer);
      if (worker === mine) stop(fill(words["run-broken"], { reason: String((e && e.message) || e) }));
    });
  });
  stopButton.addEventListener("click", () => stop(words["run-stopped"]));
}

window.lessonkitExercise = {
  init: function (root) {
    (root || document).querySelectorAll(".lk-exercise").forEach((block) =>
      block.classList.contains("lk-runnable") ? setUpRun(block) : setUp(block));
  },
};
})();
