/* Line and range anchors on source pages: #L12 or #L12-L20 highlights and scrolls. */
(function () {
  function mark() {
    document.querySelectorAll(".lk-line.lk-hl").forEach(function (el) { el.classList.remove("lk-hl"); });
    openFolded();
    var m = /^#L(\d+)(?:-L(\d+))?$/.exec(window.location.hash);
    if (!m) return;
    var a = parseInt(m[1], 10), b = m[2] ? parseInt(m[2], 10) : a, first = null;
    for (var n = a; n <= b; n++) {
      var el = document.getElementById("L" + n);
      if (el) { el.classList.add("lk-hl"); if (!first) first = el; }
    }
    // scroll-margin-top (lessonkit.css) keeps the first line below Material's sticky header
    if (first) first.scrollIntoView({ block: "start" });
  }
  /* An anchor inside a folded experiment script (#exp-NAME-L25): open the script, then show the line. */
  function openFolded() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var el = id && document.getElementById(id);
    var d = el && el.closest ? el.closest("details.lk-script") : null;
    if (!d || d.open) return;
    d.open = true;
    el.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", mark);
  // again once the page has loaded: the browser's own jump to the fragment comes after
  // DOMContentLoaded and would hide the "cited by" line under the header
  window.addEventListener("load", mark);
  if (window.document$) { window.document$.subscribe(mark); } else { document.addEventListener("DOMContentLoaded", mark); }
})();
/* Search highlight on the opened page: Material links a page-level result as `?h=` with an empty
   term when the words matched only in its sections (always the case for the first, page-level
   result of a Chinese query), so the opened page highlights nothing. Give such a link the query. */
document.addEventListener("click", function (ev) {
  var a = ev.target.closest && ev.target.closest("a.md-search-result__link");
  var input = document.querySelector(".md-search__input");
  if (!a || !input || !input.value.trim()) return;
  var url = new URL(a.href, window.location.href);
  if (url.searchParams.has("h") && !url.searchParams.get("h")) {
    url.searchParams.set("h", input.value.trim());
    a.href = url.toString();
  }
}, true);
/* The copy button of a source page copies the file's exact text: the code element's text is the
   file (line numbers and gutter markers are drawn by CSS), and clipboard.js copies a button's
   data-clipboard-text as it is (Material's own copy trims the final newline). */
document.addEventListener("click", function (ev) {
  var btn = ev.target.closest && ev.target.closest("[data-clipboard-target]");
  var code = btn && document.querySelector(btn.getAttribute("data-clipboard-target"));
  if (code && code.closest(".lk-source")) btn.setAttribute("data-clipboard-text", code.textContent);
}, true);
/* A box that scrolls sideways (a wide table, diagram or formula) and holds nothing focusable can
   still be scrolled with the keyboard: it joins the Tab order while it overflows. And a reader
   sees that it scrolls: the edge that hides more of it fades (lk-more-left / lk-more-right,
   lessonkit.css), as it is scrolled. */
(function () {
  var BOXES = ".md-typeset__scrollwrap, .lk-diagram-wrap, .lk-math-block, .lk-math, .lk-snapshot-table, .md-typeset pre > code";
  var FOCUSABLE = "a[href]:not([tabindex='-1']), button, input, select, textarea, summary, [tabindex]:not([tabindex='-1'])";
  function scrolls(el) {  // a box lessonkit.css lets overflow (overflow: visible) cannot be scrolled
    var x = getComputedStyle(el).overflowX;
    return x === "auto" || x === "scroll";
  }
  function edges(el) {
    var hidden = scrolls(el) ? el.scrollWidth - el.clientWidth : 0;
    var left = Math.abs(el.scrollLeft);  // negative in a right-to-left box
    el.classList.toggle("lk-more-left", hidden > 1 && left > 1);
    el.classList.toggle("lk-more-right", hidden > 1 && left < hidden - 1);
  }
  var loaded = false, fonts = !document.fonts;
  function update() {
    document.querySelectorAll(BOXES).forEach(function (el) {
      var wide = el.scrollWidth > el.clientWidth + 1 && scrolls(el) && !el.querySelector(FOCUSABLE);
      if (wide && !el.hasAttribute("tabindex")) { el.setAttribute("tabindex", "0"); el.dataset.lkScroll = ""; }
      else if (!wide && el.hasAttribute("data-lk-scroll")) { el.removeAttribute("tabindex"); delete el.dataset.lkScroll; }
      if (el.tagName === "CODE") return;  // a code block's edges are its own (no fade over code)
      edges(el);
    });
    /* Once the page and its fonts have loaded, the boxes have their final widths: the page says
       so (data-lk-settled on <html>), for a reader's tools and the browser tests. */
    if (loaded && fonts) document.documentElement.setAttribute("data-lk-settled", "");
  }
  document.addEventListener("scroll", function (ev) {
    var el = ev.target;
    if (el && el.matches && el.matches(BOXES) && el.tagName !== "CODE") edges(el);
  }, { capture: true, passive: true });  // a box's own scroll does not bubble: caught on its way down
  var timer = null;
  function later() { clearTimeout(timer); timer = setTimeout(update, 150); }
  window.addEventListener("resize", later);
  /* A box's width changes once a web font arrives (the math font after its fallback, often after
     the first update): a formula that fitted only in the shipped font kept a fade and a tab stop. */
  window.addEventListener("load", function () { loaded = true; later(); });
  if (document.fonts) {
    document.fonts.addEventListener("loadingdone", later);
    document.fonts.ready.then(function () { fonts = true; later(); });
  }
  if (window.document$) { window.document$.subscribe(function () { setTimeout(update, 0); }); }
  else { document.addEventListener("DOMContentLoaded", update); }
})();
/* Material's search reads the query on keyup only: text that arrives without a key release
   (pasted, dropped, or committed by an input method) left the results at their "type to start"
   prompt. Every change of the query reaches it as a keyup: each input event outside a
   composition, and the end of a composition. Material ignores a keyup that leaves the query as
   it was. */
(function () {
  function query(el) { return el && el.classList && el.classList.contains("md-search__input"); }
  function nudge(el) { el.dispatchEvent(new KeyboardEvent("keyup", { bubbles: true })); }
  document.addEventListener("input", function (ev) { if (query(ev.target) && !ev.isComposing) nudge(ev.target); }, true);
  document.addEventListener("compositionend", function (ev) { if (query(ev.target)) nudge(ev.target); }, true);
})();
/* A single Chinese character is no word to highlight: Material marks one where it cuts a query
   short (a two-character word is looked up as its first character and `*`) or a one-character
   word matches. Such marks are unwrapped in the results, and such terms are left out of the
   opened page's highlight (`?h=`). */
(function () {
  var HAN = /^\p{Script=Han}$/u;
  function tidy(root) {
    root.querySelectorAll("mark").forEach(function (m) {
      if (HAN.test(m.textContent.trim())) m.replaceWith(document.createTextNode(m.textContent));
    });
    root.querySelectorAll(".md-search-result__item").forEach(function (item) {
      var links = [].slice.call(item.querySelectorAll("a.md-search-result__link")), words = [];
      var urls = links.map(function (a) {
        var url = new URL(a.href, window.location.href);
        var kept = (url.searchParams.get("h") || "").split(/\s+/).filter(function (t) { return t && !HAN.test(t); });
        kept.forEach(function (t) { if (words.indexOf(t) < 0) words.push(t); });
        return [url, kept.join(" ")];
      });
      /* A link without words (the page's, when only its sections matched) gets its sections' words. */
      links.forEach(function (a, n) {
        var url = urls[n][0], h = urls[n][1] || words.join(" ");
        if (url.searchParams.has("h") && url.searchParams.get("h") !== h) { url.searchParams.set("h", h); a.href = url.toString(); }
      });
    });
  }
  function watch() {
    var list = document.querySelector(".md-search-result__list");
    if (!list) return;
    new MutationObserver(function () { tidy(list); }).observe(list, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch); else watch();
})();
/* Printing from a browser without ::details-content (lessonkit.css opens folded blocks with it),
   or from the dark scheme: open every folded block and print the light scheme; afterwards the
   page is as it was. */
(function () {
  var opened = [], scheme = null;
  window.addEventListener("beforeprint", function () {
    opened = [].slice.call(document.querySelectorAll("details:not([open])"));
    opened.forEach(function (d) { d.open = true; });
    scheme = document.body.getAttribute("data-md-color-scheme");
    if (scheme && scheme !== "default") document.body.setAttribute("data-md-color-scheme", "default");
  });
  window.addEventListener("afterprint", function () {
    opened.forEach(function (d) { d.open = false; });
    opened = [];
    if (scheme) document.body.setAttribute("data-md-color-scheme", scheme);
  });
})();
/* Exercise blocks: their script loads only on a page that has one, and the Python runtime only
   when the reader presses Run (lessonkit/kinds/exercise.py). */
(function () {
  var here = document.currentScript && document.currentScript.src;
  function load() {
    if (!here || !document.querySelector(".lk-exercise")) return;
    import(new URL("exercise/exercise.js", here).href).then(function (m) { m.init(document); });
  }
  if (window.document$) { window.document$.subscribe(load); }
  else if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", load); }
  else { load(); }
})();
/* A keyboard path through Material's chrome.
   * The ☰ menu (a <label> for the drawer's checkbox, not focusable) is a button: Tab reaches it,
     Enter or Space opens the navigation drawer and moves into it, Escape closes it again.
   * A glossary term (<abbr title>, shown as a tooltip) is a Tab stop: Material shows the tooltip
     on focus and names it as the term's description (aria-describedby).
   * Each code block's row of buttons (Material's <nav class="md-code__nav">) is a landmark with
     a name of its own, "Buttons of code block N" in English (the words from the page's lessonkit-words data block). */
(function () {
  var words = { menu: "Navigation", code: "Buttons of code block {n}" };
  function readWords() {
    var el = document.getElementById("lk-words");
    if (!el) return;
    try {
      var w = JSON.parse(el.textContent);
      Object.keys(words).forEach(function (k) { if (typeof w[k] === "string") words[k] = w[k]; });
    } catch (e) { /* malformed words: the defaults */ }
  }
  var codeNavs = 0;
  function name(root) {
    (root.querySelectorAll ? root : document).querySelectorAll("nav.md-code__nav:not([aria-label])").forEach(function (nav) {
      nav.setAttribute("aria-label", words.code.replace("{n}", String(++codeNavs)));
    });
    document.querySelectorAll("article abbr[title]:not([tabindex])").forEach(function (a) { a.setAttribute("tabindex", "0"); });
  }
  function drawer() {
    var box = document.getElementById("__drawer");
    var button = document.querySelector('.md-header label[for="__drawer"]');
    if (!box || !button || button.hasAttribute("role")) return;
    button.setAttribute("role", "button");
    button.setAttribute("tabindex", "0");
    button.setAttribute("aria-label", words.menu);
    function state() { button.setAttribute("aria-expanded", box.checked ? "true" : "false"); }
    state();
    box.addEventListener("change", state);
    button.addEventListener("keydown", function (ev) {
      if (ev.key !== "Enter" && ev.key !== " ") return;
      ev.preventDefault();
      box.checked = !box.checked;
      box.dispatchEvent(new Event("change", { bubbles: true }));
      state();
      if (box.checked) {
        var first = document.querySelector(".md-sidebar--primary .md-nav__link[href], .md-sidebar--primary a[href]");
        if (first) first.focus();
      }
    });
    document.addEventListener("keydown", function (ev) {
      if (ev.key !== "Escape" || !box.checked) return;
      box.checked = false;
      box.dispatchEvent(new Event("change", { bubbles: true }));
      state();
      button.focus();
    });
  }
  function start() {
    readWords();
    drawer();
    name(document);
    new MutationObserver(function (records) {
      for (var i = 0; i < records.length; i++) if (records[i].addedNodes.length) { name(document); return; }
    }).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
/* A line link (#L184-L204) on a source page stays in the address bar while the reader scrolls:
   Material's navigation.tracking replaces the address's fragment with the heading in view
   (history.replaceState), which lost the line link a reader meant to share. While the fragment
   is a line link, such a replacement keeps it; a link followed (a new fragment) ends that. */
(function () {
  var LINE = /^#L\d+(?:-L\d+)?$/;
  var replace = history.replaceState;
  history.replaceState = function (state, title, url) {
    if (url !== undefined && url !== null && LINE.test(window.location.hash) && document.querySelector(".lk-source")) {
      var to = new URL(String(url), window.location.href);
      if (to.pathname === window.location.pathname && to.search === window.location.search && to.hash !== window.location.hash) {
        to.hash = window.location.hash;
        url = to.toString();
      }
    }
    return replace.call(history, state, title, url);
  };
})();
