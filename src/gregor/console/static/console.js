// Gregor console: the live parts of a page refreshed in place, and the charts.
// No framework and no build step. The page works without this file; with it, elements marked
// data-live are replaced by their fresh copies every few seconds, and figure.chart elements are
// drawn as SVG from /api/series. Text is only ever set with textContent (never innerHTML), and the
// fetched page is parsed with DOMParser, which runs no script: record content stays text.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = 8;
  const WIDTH = 760, HEIGHT = 200, LEFT = 56, RIGHT = 12, TOP = 10, BOTTOM = 24;
  const refreshMs = Number(document.body.dataset.refreshMs || "0");

  async function refreshLive() {
    const live = Array.from(document.querySelectorAll("[data-live][id]"));
    // a page whose only live part is the status line (messages, a reset plan) is not read again
    const url = live.some((element) => element.id !== "status") ? window.location.href : "/api/status";
    let doc;
    try {
      const response = await fetch(url, {cache: "no-store", headers: {"Accept": "text/html"}});
      doc = new DOMParser().parseFromString(await response.text(), "text/html");
    } catch (error) {
      const status = document.getElementById("status");
      if (status) {
        status.className = "status down";
        status.textContent = "the console server does not answer (" + error.message + ")";
      }
      return;
    }
    for (const element of live) {
      const fresh = doc.getElementById(element.id);
      if (fresh) {
        element.replaceWith(document.adoptNode(fresh));
      } else {
        element.classList.add("stale");
      }
    }
  }

  function svg(name, attributes) {
    const element = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, String(value));
    return element;
  }

  function niceMax(value) {
    if (value <= 0) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
    return 10 * power;
  }

  function format(value) {
    if (value >= 1e6) return (value / 1e6).toFixed(1) + "M";
    if (value >= 1e4) return (value / 1e3).toFixed(0) + "k";
    if (value >= 100 || Number.isInteger(value)) return value.toFixed(0);
    return value.toFixed(1);
  }

  function draw(figure, data) {
    const all = data[figure.dataset.chart] || {};
    const key = figure.dataset.key;
    let names = key !== undefined ? (key in all ? [key] : []) : Object.keys(all);
    const peak = (name) => Math.max(0, ...all[name].map((point) => point[1]));
    names = names.filter((name) => all[name].length > 0).sort((a, b) => peak(b) - peak(a)).slice(0, COLORS);
    const unit = figure.dataset.unit || "";
    if (names.length === 0) {
      const note = document.createElement("p");
      note.className = "muted";
      note.textContent = "Collecting samples (one every " + data.interval_s + " s)…";
      figure.replaceChildren(note);
      return;
    }
    const now = data.now;
    const first = Math.min(...names.map((name) => all[name][0][0]));
    const span = Math.max(20000, now - first);
    const top = niceMax(Math.max(...names.map(peak)));
    const x = (t) => LEFT + (WIDTH - LEFT - RIGHT) * (1 - (now - t) / span);
    const y = (v) => TOP + (HEIGHT - TOP - BOTTOM) * (1 - v / top);
    const chart = svg("svg", {viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", class: "plot"});
    for (const fraction of [0, 0.5, 1]) {
      chart.append(svg("line", {x1: LEFT, x2: WIDTH - RIGHT, y1: y(top * fraction), y2: y(top * fraction),
                                class: "gridline"}));
      const label = svg("text", {x: LEFT - 6, y: y(top * fraction) + 4, class: "axis", "text-anchor": "end"});
      label.textContent = format(top * fraction);
      chart.append(label);
    }
    const ago = svg("text", {x: LEFT, y: HEIGHT - 6, class: "axis"});
    ago.textContent = "-" + Math.round(span / 1000) + " s";
    const nowLabel = svg("text", {x: WIDTH - RIGHT, y: HEIGHT - 6, class: "axis", "text-anchor": "end"});
    nowLabel.textContent = "now";
    chart.append(ago, nowLabel);
    const legend = document.createElement("ul");
    legend.className = "legend";
    names.forEach((name, index) => {
      const points = all[name];
      const line = svg("polyline", {class: "series s" + index,
                                    points: points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ")});
      const title = svg("title");
      title.textContent = name;
      line.append(title);
      const last = points[points.length - 1];
      chart.append(line, svg("circle", {class: "series dot s" + index, r: 2, cx: x(last[0]).toFixed(1),
                                         cy: y(last[1]).toFixed(1)}));
      const item = document.createElement("li");
      const swatch = document.createElement("span");
      swatch.className = "swatch s" + index;
      const text = document.createElement("span");
      text.textContent = name + ": " + format(points[points.length - 1][1]) + " " + unit;
      item.append(swatch, text);
      legend.append(item);
    });
    figure.replaceChildren(chart, legend);
  }

  async function drawCharts() {
    const figures = document.querySelectorAll("figure.chart[data-chart]");
    if (figures.length === 0) return;
    try {
      const response = await fetch("/api/series", {cache: "no-store"});
      const data = await response.json();
      figures.forEach((figure) => draw(figure, data));
    } catch (error) {
      figures.forEach((figure) => figure.classList.add("stale"));
    }
  }

  function tick() {
    if (document.visibilityState === "visible") {
      refreshLive();
      drawCharts();
    }
  }

  drawCharts();
  if (refreshMs > 0) window.setInterval(tick, refreshMs);
  else window.setInterval(drawCharts, 3000);  // a page answering a form: its address is not to be read again
})();
