(function () {
  "use strict";
  // Hover or click the lanes: the trace entries under the pointer (marks
  // within 3 px on that lane, or a span's whole run) show in a tooltip and
  // in the panel below. Entries are embedded as JSON, parsed on first use:
  // [trace index, lane, virtual time in ns, line, frame text or null].
  var chart = document.getElementById("chart");
  if (!chart) return;
  var plot = document.getElementById("plot");
  var tip = document.getElementById("tip");
  var detail = document.getElementById("detail");
  // The axis, piece by piece: [t0 ns, t1 ns, x0 px, px per ns].
  var pieces = JSON.parse(chart.dataset.pieces);
  var top = Number(chart.dataset.axis);
  var laneH = Number(chart.dataset.laneH);
  var data = null;
  var byLane = null;

  function load() {
    if (data) return;
    data = JSON.parse(document.getElementById("entries").textContent);
    byLane = data.lanes.map(function () { return []; });
    data.entries.forEach(function (e, i) {
      if (byLane[e[1]]) byLane[e[1]].push(i);
    });
  }

  // Entries of `lane` between t0 and t1 (ns), in trace order.
  function inRange(lane, t0, t1, limit) {
    load();
    var list = byLane[lane] || [];
    var lo = 0, hi = list.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (data.entries[list[mid]][2] < t0) lo = mid + 1; else hi = mid;
    }
    var out = [];
    for (var k = lo; k < list.length && out.length < limit; k++) {
      var e = data.entries[list[k]];
      if (e[2] > t1) break;
      out.push(e);
    }
    return out;
  }

  function pointed(ev) {
    var box = chart.getBoundingClientRect();
    var x = ev.clientX - box.left, y = ev.clientY - box.top;
    var span = ev.target.closest ? ev.target.closest("[data-t0]") : null;
    if (span) {
      return { lane: Number(span.dataset.lane), t0: Number(span.dataset.t0),
               t1: Number(span.dataset.t1), title: span.dataset.tip };
    }
    if (y < top) return null;
    var near = around(x);
    return { lane: Math.floor((y - top) / laneH), t0: near[0], t1: near[1], title: null };
  }

  // The times within 3 px of pixel x.
  function around(x) {
    var p = pieces[pieces.length - 1];
    for (var i = 0; i < pieces.length; i++) {
      var q = pieces[i];
      if (x <= q[2] + (q[1] - q[0]) * q[3]) { p = q; break; }
    }
    var t = p[0] + (x - p[2]) / p[3], slack = 3 / p[3];
    return [t - slack, t + slack];
  }

  function line(e) {
    return "#" + e[0] + " " + e[3] + (e[4] ? "\n    frame: " + e[4] : "");
  }

  function show(title, found, lane) {
    detail.textContent = "";
    var h = document.createElement("h2");
    h.textContent = (title || lane) + ": " + found.length +
      (found.length === 1 ? " trace entry" : " trace entries");
    detail.appendChild(h);
    found.forEach(function (e) {
      var pre = document.createElement("pre");
      pre.textContent = line(e);
      detail.appendChild(pre);
    });
  }

  chart.addEventListener("mousemove", function (ev) {
    var q = pointed(ev);
    var found = q ? inRange(q.lane, q.t0, q.t1, 50) : [];
    if (!q || (!found.length && !q.title)) { tip.style.display = "none"; return; }
    var text = q.title ? q.title + "\n" : "";
    if (found.length) {
      text += line(found[0]);
      if (found.length > 1) text += "\n… and " + (found.length - 1) + " more here (click to list them)";
    }
    tip.textContent = text;
    tip.style.display = "block";
    tip.style.left = Math.max(4, Math.min(ev.clientX + 12, window.innerWidth - tip.offsetWidth - 8)) + "px";
    tip.style.top = (ev.clientY + 16) + "px";
  });
  chart.addEventListener("mouseleave", function () { tip.style.display = "none"; });
  chart.addEventListener("click", function (ev) {
    var q = pointed(ev);
    if (!q) return;
    load();
    show(q.title, inRange(q.lane, q.t0, q.t1, 500), data.lanes[q.lane] || "");
  });

  // The failure: scrolled into view, its entries in the panel.
  var failure = document.getElementById("failure");
  function toFailure() {
    if (!failure) return;
    var x = Number(failure.dataset.x);
    plot.scrollLeft = Math.max(0, x - plot.clientWidth / 2);
    var lane = failure.dataset.lane;
    if (lane !== undefined && lane !== "") {
      var near = around(x);
      load();
      show("at the failure, " + data.lanes[Number(lane)], inRange(Number(lane), near[0], near[1], 500), "");
    }
  }
  var banner = document.getElementById("banner");
  if (banner) banner.addEventListener("click", toFailure);
  toFailure();
})();
