/* Line and range anchors on source pages: #L12 or #L12-L20 highlights and scrolls. */
(function () {
  function mark() {
    document.querySelectorAll(".lk-line.lk-hl").forEach(function (el) { el.classList.remove("lk-hl"); });
    var m = /^#L(\d+)(?:-L(\d+))?$/.exec(window.location.hash);
    if (!m) return;
    var a = parseInt(m[1], 10), b = m[2] ? parseInt(m[2], 10) : a, first = null;
    for (var n = a; n <= b; n++) {
      var el = document.getElementById("L" + n);
      if (el) { el.classList.add("lk-hl"); if (!first) first = el; }
    }
    if (first) first.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", mark);
  if (window.document$) { window.document$.subscribe(mark); } else { document.addEventListener("DOMContentLoaded", mark); }
})();
