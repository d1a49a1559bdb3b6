// "Replay side by side" (js_on_load of a gr.HTML): both decoders' last reply, played again
// at their measured pace. props.value is JSON from app.replay_data: per decoder, frames of
// [compute seconds, token HTML]. A red line moves along the tokens/s chart with the clock.
const box = element.querySelector(".replay");
const button = element.querySelector(".replay-button");
const clock = element.querySelector(".replay-clock");
let frame = null;

const data = () => { try { return JSON.parse(props.value || "null"); } catch { return null; } };

function timeLine(seconds) {  // on the live tokens/s chart, whose x axis is the same compute time
  const chart = document.querySelector("#chart-speed");
  if (!chart || typeof Plotly === "undefined" || !chart.data) return;
  Plotly.relayout(chart, { shapes: seconds === null ? [] : [{ type: "line", xref: "x", yref: "paper", x0: seconds,
    x1: seconds, y0: 0, y1: 1, line: { color: "#dc2626", width: 1.5 } }] });
}

function ready() {
  cancelAnimationFrame(frame);
  const d = data();
  box.classList.toggle("empty", !d);
  box.dataset.state = "ready";
  box.dataset.finished = "";  // the decoders in the order their replay finished
  button.disabled = !d;
  clock.textContent = "";
  element.querySelectorAll(".replay-pane .tokens, .replay-done").forEach((node) => { node.innerHTML = ""; });
}

function play() {
  const d = data();
  if (!d) return;
  ready();
  const panes = d.decoders.map((dec) => ({
    ...dec, node: element.querySelector(`.tokens[data-decoder="${dec.name}"]`), shown: 0,
    end: dec.frames.length ? dec.frames[dec.frames.length - 1][0] : 0,
  }));
  const end = Math.max(...panes.map((p) => p.end));
  const start = performance.now();
  let lastLine = -1;
  const step = () => {
    const t = Math.min((performance.now() - start) / 1000, end);
    for (const p of panes) {
      let added = "";
      while (p.shown < p.frames.length && p.frames[p.shown][0] <= t) added += p.frames[p.shown++][1];
      if (added) p.node.insertAdjacentHTML("beforeend", added);
      if (p.shown === p.frames.length && !p.node.previousElementSibling.textContent) {
        p.node.previousElementSibling.textContent = `finished at ${p.end.toFixed(2)} s`;
        box.dataset.finished += (box.dataset.finished ? "," : "") + p.name;
      }
    }
    clock.textContent = `${t.toFixed(2)} s`;
    if (t - lastLine > 0.05 || t >= end) { timeLine(t); lastLine = t; }  // the chart at 20 Hz at most
    if (t < end) frame = requestAnimationFrame(step);
    else box.dataset.state = "finished";
  };
  step();
}

button.addEventListener("click", play);
watch("value", ready);
ready();
