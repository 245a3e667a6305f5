package timeline

// zoomScript lets a reader of the HTML page zoom into the time axis: drag
// across the plot to show that span, double-click or Esc to go back. The
// zoom lives in the page's address (#t=START,END, µs since the origin), so
// the back button undoes it and a zoomed view can be shared or opened
// directly. The page needs none of it: without script the full picture is
// what WriteHTML drew, and the script changes nothing until asked to zoom.
// It moves the elements that carry data-s and data-e (µs): bars, kernel
// underlines, running marks (data-x: where they were drawn) and process
// lifetimes (class life, data-y), and redraws the axis and the grid.
// Z (plot left and right, span in µs, axis base, rows' bottom) is set by
// the writer before it.
const zoomScript = `(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var rows = document.getElementById("rows"), axis = document.getElementById("axis"),
    grid = document.getElementById("grid"), hint = document.getElementById("hint");
  if (!rows || !axis || !grid || !hint) return;
  var view = [0, Z.span];
  function xOf(t) { return Z.l + (t - view[0]) / (view[1] - view[0]) * (Z.r - Z.l); }
  function tOf(x) { return view[0] + (x - Z.l) / (Z.r - Z.l) * (view[1] - view[0]); }
  function add(parent, tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  function unit(us) { return us >= 1e6 ? [1e6, " s"] : us >= 1e3 ? [1e3, " ms"] : [1, " µs"]; }
  function fmt(us, u) { return +(us / u[0]).toPrecision(12) + u[1]; }
  function drawAxis() {
    axis.textContent = "";
    grid.textContent = "";
    var span = view[1] - view[0], raw = span / Math.max((Z.r - Z.l) / 110, 2);
    var mag = Math.pow(10, Math.floor(Math.log10(raw))), step = 10 * mag;
    [1, 2, 5].some(function (m) { if (m * mag >= raw) { step = m * mag; return true; } return false; });
    var u = unit(Math.floor(view[1] / step) * step);
    for (var i = Math.ceil(view[0] / step); i * step <= view[1] * (1 + 1e-12); i++) {
      var v = i * step, x = xOf(v);
      var anchor = x < Z.l + 30 ? "start" : x > Z.r - 30 ? "end" : "middle";
      add(axis, "line", { x1: x + 0.5, x2: x + 0.5, y1: Z.base - 7, y2: Z.base, stroke: "#8c959f" });
      add(axis, "text", { "class": "dim", x: x, y: Z.base - 12, "text-anchor": anchor }, v === 0 ? "0" : fmt(v, u));
      add(grid, "line", { x1: x + 0.5, x2: x + 0.5, y1: Z.base, y2: Z.foot, stroke: "#e4e8ec" });
    }
  }
  function draw() {
    rows.querySelectorAll("[data-s]").forEach(function (e) {
      var x0 = xOf(+e.dataset.s), x1 = Math.max(xOf(+e.dataset.e), x0 + 2);
      var hide = x1 < Z.l || x0 > Z.r;
      e.style.display = hide ? "none" : "";
      if (hide) return;
      var c0 = Math.max(x0, Z.l), c1 = Math.min(x1, Z.r);
      if (e.classList.contains("life")) {
        var y = +e.dataset.y, d = "M" + c0 + " " + y + "H" + Math.max(c1, c0 + 1);
        if (x0 >= Z.l) d += "M" + x0 + " " + (y - 4) + "V" + (y + 4);
        if (x1 <= Z.r && !e.dataset.run) d += "M" + x1 + " " + (y - 4) + "V" + (y + 4);
        e.firstElementChild.setAttribute("d", d);
        if (e.dataset.run && e.lastElementChild !== e.firstElementChild)
          e.lastElementChild.setAttribute("transform", "translate(" + (Math.min(x1, Z.r) - 1 - e.dataset.x) + ",0)");
      } else if (e.dataset.x) {
        e.setAttribute("transform", "translate(" + (Math.min(x1, Z.r) - e.dataset.x) + ",0)");
      } else if (e.dataset.k) {
        var k1 = x0 + Math.max((x1 - x0) * e.dataset.k, 1);
        e.style.display = k1 < Z.l ? "none" : "";
        e.setAttribute("x", c0);
        e.setAttribute("width", Math.max(Math.min(k1, Z.r) - c0, 0));
      } else {
        e.setAttribute("x", c0);
        e.setAttribute("width", Math.max(c1 - c0, 2));
      }
    });
    drawAxis();
    var zoomed = view[0] > 0 || view[1] < Z.span, u = unit(view[1]);
    hint.textContent = zoomed
      ? "showing " + fmt(view[0], u) + " – " + fmt(view[1], u) + " · double-click or Esc: whole run"
      : "drag across the plot to zoom";
  }
  function fromHash() {
    var m = /^#t=([0-9.]+),([0-9.]+)$/.exec(location.hash), a = 0, b = Z.span;
    if (m) {
      a = Math.max(0, +m[1]);
      b = Math.min(Z.span, +m[2]);
      if (!(b - a >= 1)) { a = 0; b = Z.span; }
    }
    view = [a, b];
    draw();
  }
  function px(ev) { return ev.clientX - rows.getBoundingClientRect().left; }
  function clamp(x) { return Math.min(Math.max(x, Z.l), Z.r); }
  var sel = null, from = 0;
  rows.addEventListener("mousedown", function (ev) {
    var x = px(ev);
    if (ev.button !== 0 || x < Z.l || x > Z.r) return;
    from = x;
    sel = add(rows, "rect", { x: x, y: Z.base, width: 0, height: Z.foot - Z.base, fill: "#0969da", "fill-opacity": 0.12 });
    ev.preventDefault();
  });
  window.addEventListener("mousemove", function (ev) {
    if (!sel) return;
    var x = clamp(px(ev));
    sel.setAttribute("x", Math.min(x, from));
    sel.setAttribute("width", Math.abs(x - from));
  });
  window.addEventListener("mouseup", function (ev) {
    if (!sel) return;
    var x = clamp(px(ev));
    rows.removeChild(sel);
    sel = null;
    if (Math.abs(x - from) < 4) return;
    location.hash = "t=" + tOf(Math.min(x, from)).toFixed(3) + "," + tOf(Math.max(x, from)).toFixed(3);
  });
  function reset() { if (location.hash) location.hash = ""; }
  rows.addEventListener("dblclick", reset);
  window.addEventListener("keydown", function (ev) { if (ev.key === "Escape") reset(); });
  window.addEventListener("hashchange", fromHash);
  if (location.hash) fromHash();
  else hint.textContent = "drag across the plot to zoom";
})();
`
