package timeline

// zoomScript makes the page a tool for a real tree; the picture needs
// none of it (without script every process is drawn open, as WriteHTML
// wrote it).
//
//   - Processes start collapsed to their header row, whose summary lane
//     shows the process's CPU over time (a recording of one process
//     starts open); a click on the row opens or closes it ("expand all",
//     "collapse all" do every one).
//   - The search box finds processes and threads by name (any case) or
//     id: other processes are hidden, a process found by a thread opens,
//     and the threads found are marked.
//   - Zoom: drag across the plot to show that span; Ctrl+wheel or +/-
//     (w/s) zoom around the pointer or the middle; Shift+wheel, a
//     sideways wheel, the arrow keys or a/d pan; double-click or Esc show
//     the whole run. The lanes (the tree's in the header, each process's)
//     are recomputed for the span shown, from each thread's cumulative
//     CPU points (D), as the Go side computed them for the whole run.
//
// The state lives in the page's address (#t=START,END µs since the origin,
// &open=all or &open=PID,PID, &q=TEXT), so the back button undoes a zoom
// and a view can be shared or opened directly. It moves the elements that
// carry data-s and data-e (µs): bars, kernel underlines, running marks
// (data-x: where they were drawn) and process lifetimes (class life,
// data-y), and redraws the axis and the grid. Z (plot left and right, span
// in µs, axis base, rows' bottom, lane geometry) and D (the data) are set
// by the writer before it. window.timeline offers the same actions to a
// test's script.
const zoomScript = `(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var rows = document.getElementById("rows"), axis = document.getElementById("axis"),
    grid = document.getElementById("grid"), hint = document.getElementById("hint"),
    tlane = document.getElementById("tlane"), tscale = document.getElementById("tscale"),
    tools = document.getElementById("tools"), q = document.getElementById("q"), qn = document.getElementById("qn"),
    foot = document.getElementById("foot");
  if (!rows || !axis || !grid || !hint) return;
  // A recording of one process has nothing to collapse to: it starts open.
  var view = [0, Z.span], open = {}, openAll = false, query = "", openFirst = D.p.length === 1;
  var procs = D.p.map(function (p, k) { return document.getElementById("p" + k); });
  var W = +rows.getAttribute("width");
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
  // The lanes: a thread's CPU used by instant x, from its points.
  function cpuAt(c, x) {
    if (x <= c[0]) return 0;
    var n = c.length;
    if (x >= c[n - 2]) return c[n - 1];
    for (var i = 2; i < n; i += 2) {
      if (x <= c[i]) {
        if (c[i] === c[i - 2]) return c[i + 1];
        return c[i - 1] + (c[i + 1] - c[i - 1]) * (x - c[i - 2]) / (c[i] - c[i - 2]);
      }
    }
    return c[n - 1];
  }
  function addLane(lane, c) {
    var n = lane.length, w = (view[1] - view[0]) / n;
    var first = Math.max(0, Math.floor((c[0] - view[0]) / w)), last = Math.min(n - 1, Math.floor((c[c.length - 2] - view[0]) / w));
    for (var i = first; i <= last; i++) {
      var a = view[0] + i * w, b = view[0] + (i + 1) * w;
      lane[i] += (cpuAt(c, b) - cpuAt(c, a)) / (b - a);
    }
  }
  function scale(lanes) {
    var peak = 0;
    lanes.forEach(function (l) { l.forEach(function (v) { if (v > peak) peak = v; }); });
    return Math.max(1, Math.ceil(peak - 1e-9));
  }
  function path(lane, y, h, sc) {
    var w = (Z.r - Z.l) / lane.length, d = "M" + Z.l + " " + y, prev = -1;
    for (var i = 0; i < lane.length; i++) {
      var top = y - h * Math.min(lane[i] / sc, 1);
      if (top !== prev) { d += "V" + top; prev = top; }
      d += "H" + (Z.l + w * (i + 1));
    }
    return d + "V" + y + "Z";
  }
  function drawLanes() {
    var tree = new Array(D.n).fill(0);
    var lanes = D.p.map(function (p) {
      var lane = new Array(D.n).fill(0);
      p.c.forEach(function (c) { addLane(lane, c); });
      lane.forEach(function (v, i) { tree[i] += v; });
      return lane;
    });
    D.r.forEach(function (c) { addLane(tree, c); });
    var ps = scale(lanes), ts = scale([tree]);
    lanes.forEach(function (lane, k) {
      var e = procs[k] && procs[k].querySelector(".ph .lane");
      if (e) e.setAttribute("d", path(lane, D.p[k].y + Z.procH - 2, Z.procH - 5, ps));
    });
    if (tlane) tlane.setAttribute("d", path(tree, Z.laneTop + Z.laneH, Z.laneH, ts));
    if (tscale) tscale.textContent = ts + (ts === 1 ? " CPU" : " CPUs");
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
    drawLanes();
    drawAxis();
    var zoomed = view[0] > 0 || view[1] < Z.span, u = unit(view[1]);
    hint.textContent = zoomed
      ? "showing " + fmt(view[0], u) + " – " + fmt(view[1], u) + " · double-click or Esc: whole run · a/d pan, w/s zoom"
      : "drag across the plot, Ctrl+wheel or w/s to zoom; a/d or Shift+wheel to pan";
  }
  // Which processes show, which are open, and where each goes.
  function matches(p) {
    if (!query) return { any: true, threads: [] };
    var qq = query.toLowerCase(), own = p.n.toLowerCase().indexOf(qq) >= 0 || String(p.i) === query, th = [];
    p.t.forEach(function (t, j) { if (t[0].toLowerCase().indexOf(qq) >= 0 || String(t[1]) === query) th.push(j); });
    return { any: own || th.length > 0, threads: own ? [] : th };
  }
  function layout() {
    var y = Z.base, shown = 0;
    D.p.forEach(function (p, k) {
      var g = procs[k];
      if (!g) return;
      var m = matches(p);
      g.style.display = m.any ? "" : "none";
      if (!m.any) return;
      shown++;
      g.setAttribute("transform", "translate(0," + (y - p.y) + ")");
      var isOpen = (openAll || open[p.i] || m.threads.length > 0) && p.t.length > 0;
      var ths = g.querySelector(".ths"), tw = g.querySelector(".tw");
      if (ths) {
        ths.style.display = isOpen ? "" : "none";
        Array.prototype.forEach.call(ths.children, function (r) {
          var hit = r.querySelector && r.querySelector(".hit");
          if (hit) hit.classList.remove("found");
        });
        var rs = ths.querySelectorAll(":scope > g.r");
        m.threads.forEach(function (j) { var h = rs[j] && rs[j].querySelector(".hit"); if (h) h.classList.add("found"); });
      }
      if (tw) tw.textContent = p.t.length ? (isOpen ? "▾" : "▸") : "";
      y += Z.procH + (isOpen ? p.h : 0);
    });
    if (qn) qn.textContent = query ? shown + " of " + D.p.length + " processes" : "";
    Z.foot = y;
    var h = y - Z.base + 12;
    if (foot) { foot.setAttribute("transform", "translate(0," + (y - +foot.getAttribute("y") + 21) + ")"); h += 32; }
    rows.setAttribute("height", h);
    rows.setAttribute("viewBox", "0 " + Z.base + " " + W + " " + h);
    drawAxis();
  }
  function hashOf() {
    var parts = [];
    if (view[0] > 0 || view[1] < Z.span) parts.push("t=" + view[0].toFixed(3) + "," + view[1].toFixed(3));
    if (openAll) parts.push("open=all");
    else { var ids = Object.keys(open).filter(function (k) { return open[k]; }); if (ids.length) parts.push("open=" + ids.join(",")); }
    if (query) parts.push("q=" + encodeURIComponent(query));
    return parts.length ? "#" + parts.join("&") : "";
  }
  // setHash records the state: a new history entry for a zoom (back
  // undoes it), the same entry for the rest.
  function setHash(push) {
    var h = hashOf();
    if (h === location.hash || (!h && !location.hash)) return;
    if (push) { location.hash = h || "#"; return; }
    history.replaceState(null, "", h || location.pathname + location.search);
  }
  function fromHash() {
    var a = 0, b = Z.span;
    open = {}; openAll = openFirst; query = "";
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("="), k = kv.slice(0, i), v = kv.slice(i + 1);
      if (k === "t") {
        var m = /^([0-9.]+),([0-9.]+)$/.exec(v);
        if (m) { a = Math.max(0, +m[1]); b = Math.min(Z.span, +m[2]); }
      } else if (k === "open") {
        openAll = false;
        if (v === "all") openAll = true;
        else v.split(",").forEach(function (id) { if (id) open[id] = true; });
      } else if (k === "q") {
        try { query = decodeURIComponent(v); } catch (e) { query = v; }
      }
    });
    if (!(b - a >= 1)) { a = 0; b = Z.span; }
    view = [a, b];
    if (q && q.value !== query) q.value = query;
    layout();
    draw();
  }
  function setView(a, b) {
    var span = Math.min(Math.max(b - a, 1), Z.span);
    a = Math.min(Math.max(a, 0), Z.span - span);
    view = [a, a + span];
    setHash(true);
    draw();
  }
  function zoom(factor, at) {
    var t = at === undefined ? (view[0] + view[1]) / 2 : at;
    setView(t - (t - view[0]) * factor, t + (view[1] - t) * factor);
  }
  function pan(frac) { var s = view[1] - view[0]; setView(view[0] + s * frac, view[1] + s * frac); }
  function toggle(pid) {
    if (openAll) { openAll = false; open = {}; D.p.forEach(function (p) { if (p.i !== pid) open[p.i] = true; }); }
    else open[pid] = !open[pid];
    openFirst = false;
    setHash(false);
    layout();
  }
  function openEvery(on) { openAll = on; open = {}; openFirst = false; setHash(false); layout(); }
  function find(text) { query = text.trim(); setHash(false); layout(); }
  window.timeline = { toggle: toggle, openAll: function () { openEvery(true); }, closeAll: function () { openEvery(false); },
    find: function (t) { if (q) q.value = t; find(t); }, zoom: zoom, pan: pan, view: function () { return view.slice(); } };

  function px(ev) { return ev.clientX - rows.getBoundingClientRect().left; }
  function clamp(x) { return Math.min(Math.max(x, Z.l), Z.r); }
  var sel = null, from = 0, moved = false;
  rows.addEventListener("mousedown", function (ev) {
    var x = px(ev);
    if (ev.button !== 0 || x < Z.l || x > Z.r) return;
    from = x; moved = false;
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
    moved = true;
    setView(tOf(Math.min(x, from)), tOf(Math.max(x, from)));
  });
  // A click on a process's header row (not the end of a drag) opens or
  // closes it.
  rows.addEventListener("click", function (ev) {
    if (moved) { moved = false; return; }
    var ph = ev.target.closest && ev.target.closest(".ph"), g = ph && ph.parentNode;
    if (!g || !g.dataset || g.dataset.k === undefined) return;
    var p = D.p[+g.dataset.k];
    if (p && p.t.length) toggle(p.i);
  });
  rows.addEventListener("wheel", function (ev) {
    var x = px(ev);
    if (x < Z.l || x > Z.r) return;
    if (ev.ctrlKey || ev.metaKey) {
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, tOf(x));
    } else if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
      ev.preventDefault();
      pan((ev.shiftKey ? ev.deltaY : ev.deltaX) > 0 ? 0.1 : -0.1);
    }
  }, { passive: false });
  function reset() { if (view[0] > 0 || view[1] < Z.span) setView(0, Z.span); }
  rows.addEventListener("dblclick", reset);
  window.addEventListener("keydown", function (ev) {
    if (ev.target === q) {
      if (ev.key === "Escape") { q.value = ""; find(""); q.blur(); }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    switch (ev.key) {
    case "Escape": reset(); break;
    case "+": case "=": case "w": zoom(0.5); break;
    case "-": case "s": zoom(2); break;
    case "a": case "ArrowLeft": pan(-0.2); break;
    case "d": case "ArrowRight": pan(0.2); break;
    case "/": case "f": if (q) { ev.preventDefault(); q.focus(); } return;
    default: return;
    }
    ev.preventDefault();
  });
  if (q) q.addEventListener("input", function () { find(q.value); });
  var oa = document.getElementById("openall"), ca = document.getElementById("closeall");
  if (oa) oa.addEventListener("click", function () { openEvery(true); });
  if (ca) ca.addEventListener("click", function () { openEvery(false); });
  if (tools) tools.hidden = false;
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
`
