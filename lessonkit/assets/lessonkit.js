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
    if (!first) return;
    // Show the "cited by" line that belongs to the range too: it sits right above the first
    // line, and scroll-margin-top (lessonkit.css) keeps both below Material's sticky header.
    var prev = first.previousElementSibling;
    (prev && prev.classList.contains("lk-cites") ? prev : first).scrollIntoView({ block: "start" });
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
/* Material's search reads the query on keyup only: text that arrives without a key release
   (pasted, dropped, or committed by an input method) left the results at 「键入以开始搜索」.
   Every change of the query reaches it as a keyup: each input event outside a composition, and
   the end of a composition. Material ignores a keyup that leaves the query as it was. */
(function () {
  function query(el) { return el && el.classList && el.classList.contains("md-search__input"); }
  function nudge(el) { el.dispatchEvent(new KeyboardEvent("keyup", { bubbles: true })); }
  document.addEventListener("input", function (ev) { if (query(ev.target) && !ev.isComposing) nudge(ev.target); }, true);
  document.addEventListener("compositionend", function (ev) { if (query(ev.target)) nudge(ev.target); }, true);
})();
/* A single Chinese character is no word to highlight: Material marks one where it cuts a query
   short (「种子」 is looked up as 「种*」) or a one-character word matches. Such marks are unwrapped
   in the results, and such terms are left out of the opened page's highlight (`?h=`). */
(function () {
  var HAN = /^\p{Script=Han}$/u;
  function tidy(root) {
    root.querySelectorAll("mark").forEach(function (m) {
      if (HAN.test(m.textContent.trim())) m.replaceWith(document.createTextNode(m.textContent));
    });
    root.querySelectorAll("a.md-search-result__link").forEach(function (a) {
      var url = new URL(a.href, window.location.href), h = url.searchParams.get("h");
      if (!h) return;
      var kept = h.split(/\s+/).filter(function (t) { return t && !HAN.test(t); }).join(" ");
      if (kept !== h) { url.searchParams.set("h", kept); a.href = url.toString(); }
    });
  }
  function watch() {
    var list = document.querySelector(".md-search-result__list");
    if (!list) return;
    new MutationObserver(function () { tidy(list); }).observe(list, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch); else watch();
})();
