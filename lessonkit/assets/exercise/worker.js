/* The site's worker for exercise and runnable blocks: Pyodide from this site's assets/pyodide/
   (loaded on the first message), lkcheck.py and lkrun.py next to this file; runner.js does the rest. */

import { loadPyodide } from "../pyodide/pyodide.mjs";
import "./runner.js";

self.lkExerciseRunner(
  () => loadPyodide({ indexURL: new URL("../pyodide/", import.meta.url).href }),
  async (name) => (await fetch(new URL(name, import.meta.url))).text(),
);
