// The app's live charts (js_on_load of one gr.HTML): six Plotly charts, redrawn in place
// with Plotly.react whenever the server sends new values (props.value: JSON from
// app.chart_data). The nodes stay; only the data change. Colours follow the page's theme.
const names = ["tau", "speed", "speedup", "accept", "source", "budget"];
const nodes = Object.fromEntries(names.map((n) => [n, element.querySelector("#chart-" + n)]));
const status = element.querySelector(".chart-status");
const config = { displayModeBar: false, responsive: true };
const green = "#16a34a", slate = "#64748b", blue = "#60a5fa", amber = "#f59e0b", violet = "#7c3aed";
let drawn = 0, since = performance.now();

let text = "#1f2937", grid = "#e5e7eb";  // the theme's colours, read once per draw

function readTheme() {
  const style = getComputedStyle(element);
  text = style.getPropertyValue("--body-text-color").trim() || "#1f2937";
  grid = style.getPropertyValue("--border-color-primary").trim() || "#e5e7eb";
}

// Fixed margins, no automargin: fitting the margins to the labels was most of a redraw's time.
const margin = { l: 52, r: 8, t: 28, b: 40 };

function layout(title, x, y, { xaxis = {}, yaxis = {}, ...rest } = {}) {
  const axis = (label) => ({ title: { text: label, standoff: 4 }, gridcolor: grid, linecolor: grid, zeroline: false });
  return {
    title: { text: title, font: { size: 13 }, x: 0.02 }, height: 200, margin,
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: text, size: 11 },
    xaxis: { ...axis(x), ...xaxis }, yaxis: { ...axis(y), rangemode: "tozero", ...yaxis },
    legend: { orientation: "h", x: 1, xanchor: "right", y: 1.12, bgcolor: "rgba(0,0,0,0)" },
    hovermode: "x unified", uirevision: "keep", ...rest,
  };
}

const line = (x, y, name, color, extra = {}) => ({ x, y, name, type: "scatter", mode: "lines", line: { color, width: 2 }, ...extra });

function draw() {
  if (typeof Plotly === "undefined") { setTimeout(draw, 100); return; }  // plotly.js still loading
  const d = JSON.parse(props.value || "{}");
  if (!d.rounds) return;
  const empty = !d.rounds.round.length && !Object.values(d.speed).some((s) => s.seconds.length);
  if (empty) {
    drawn = 0;  // a new run (or a cleared page): count its updates from here
    since = performance.now();
  }
  const started = performance.now();
  readTheme();
  const r = d.rounds;
  Plotly.react(nodes.tau, [
    line(r.round, r.tokens, "this round", blue, { mode: "lines+markers", marker: { size: 4 }, line: { color: blue, width: 1 } }),
    line(r.round, r.tau, "running tau", green),
    line(r.round, r.depth, "draft depth", amber, { line: { color: amber, width: 1, dash: "dot" } }),
  ], layout("Tokens per round (tau)", "round", "tokens"), config);
  Plotly.react(nodes.speed, Object.entries(d.speed).map(([name, s]) =>
    line(s.seconds, s.tokens_per_s, name, name === "plain" ? slate : green)),
    layout("Tokens/s over compute time", "seconds", "tokens/s"), config);
  Plotly.react(nodes.speedup, [line(d.speedup.tokens, d.speedup.speedup, "speedup", green)],
    layout("Running speedup (plain time / EAGLE-3 time)", "tokens", "speedup", {
      showlegend: false,
      shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { color: slate, width: 1, dash: "dot" } }],
    }), config);
  Plotly.react(nodes.accept, [{
    x: d.accept.position, y: d.accept.fraction, type: "bar", marker: { color: green },
    hovertemplate: "draft position %{x}: %{y:.0%} of rounds<extra></extra>",
  }], layout("Rounds accepting at least i drafts", "draft position", "fraction of rounds",
    { showlegend: false, hovermode: "closest", xaxis: { dtick: 1 }, yaxis: { range: [0, 1] } }), config);
  const sources = ["head", "copy", "both"];
  Plotly.react(nodes.source, [{
    y: ["EAGLE-3 head", "context copy", "both"], x: sources.map((name) => d.sources[name] || 0), type: "bar",
    orientation: "h", marker: { color: [green, violet, blue] }, hovertemplate: "%{y}: %{x} accepted drafts<extra></extra>",
  }], layout("Accepted drafts by drafter", "accepted drafts", "", { showlegend: false, hovermode: "closest", height: 150,
    margin: { ...margin, l: 96 }, xaxis: { rangemode: "tozero" }, yaxis: { rangemode: "normal" } }), config);
  const b = d.budget;  // the verification curve the node budget prices by, and the sizes it chose
  Plotly.react(nodes.budget, [
    { x: b.verified.map((v) => v[0]), y: b.verified.map((v) => v[1]), name: "rounds verifying n nodes", type: "bar",
      marker: { color: blue }, yaxis: "y2", hovertemplate: "%{y} rounds verified %{x} nodes<extra></extra>" },
    line(b.nodes, b.steps, "cost in one-token steps (measured)", amber, { mode: "lines+markers", marker: { size: 4 },
      hovertemplate: "%{x} nodes: %{y:.2f} steps<extra></extra>" }),
  ], layout("Node budget: verification cost and nodes verified", "tree nodes (root included)", "steps", {
    // Before the first measurement a log axis with no points would span millions of nodes.
    hovermode: "closest", xaxis: { type: "log", dtick: Math.log10(2), ...(b.nodes.length ? {} : { range: [0, Math.log10(64)] }) },
    margin: { ...margin, r: 48 },
    yaxis2: { overlaying: "y", side: "right", rangemode: "tozero", showgrid: false,
      title: { text: "rounds", standoff: 4 } },
  }), config);
  if (empty) {  // axes only: nothing has run yet
    status.textContent = "Charts draw here while the decoders run.";
    return;
  }
  drawn += 1;
  const rate = drawn / Math.max((performance.now() - since) / 1000, 1e-3);
  status.textContent = `${drawn} chart updates this run (${rate.toFixed(1)}/s); the last took `
    + `${d.render_ms.toFixed(1)} ms on the server and ${(performance.now() - started).toFixed(1)} ms to draw, `
    + "neither counted in the decoders' timings.";
}

watch("value", draw);
window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", draw);
draw();
