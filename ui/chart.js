// The charts' script (ui/chart.py registers it as a Streamlit component, st.components.v2, drawn in the page).
// Streamlit calls the default export on every rerun that draws the element, with the same parentElement while the
// key stays; the figure arrives as UTF-8 JSON bytes.

// What ui/chart.py puts in (its _script writes them here as JSON), Python's values of these names:
const {
  PLOTLY_URL,  // plotly.js under its versioned name in ./static/ (server.enableStaticServing)
  APP_HEIGHT,  // viz.theme.APP_HEIGHT: px, the height of a figure that sets none
  CRISP_TARGET, CRISP_MAX,  // viz.crisp.TARGET_PX, MAX_PX: the camera button's heatmaps enlarged as the export's
  STACK_REM, STACK_FRACTION,  // twin charts stack below this column width (rem), or this fraction of their design width
  LEGEND_BELOW_UNDER,  // viz.theme.LEGEND_BELOW_UNDER
  NARROW_WIDTH,  // viz.theme.NARROW_WIDTH: the page's themes are drawn no narrower
  CELL_PAD_EM,  // viz.theme.CELL_PAD_EM
  SMALLEST_PX,  // viz.theme.SMALLEST_SHOWN_PX
  PRINT_COLOURS,  // print_colours(): the dark theme's colours -> the default theme's (viz.theme)
  PRINT_TEMPLATE,  // print_template(): the default theme's plotly template
} = __FROM_PYTHON__;

const FULLSCREEN_ICON = {width: 24, height: 24,
  path: "M3 3h7v2H5v5H3V3zm11 0h7v7h-2V5h-5V3zM3 14h2v5h5v2H3v-7zm16 5v-5h2v7h-7v-2h5z"};

function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__attentionLabPlotly) {
    window.__attentionLabPlotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = new URL(PLOTLY_URL, document.baseURI).href;
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => { window.__attentionLabPlotly = null; reject(new Error(PLOTLY_URL)); };
      document.head.appendChild(script);
    });
  }
  return window.__attentionLabPlotly;
}

function decode(data) {
  if (data instanceof Uint8Array || data instanceof ArrayBuffer) return new TextDecoder().decode(data);
  return typeof data === "string" ? data : JSON.stringify(data);
}

// The full-screen button's name and tooltip, for what pressing it does now: in full screen it leaves (a screen
// reader's walk: named "Full screen" there too, it did not say that pressing it now leaves). Named at each draw
// (describe), a new toolbar's button included: full screen coming and going, by the button, Esc or the page, draws
// the chart again (its box hears fullscreenchange: follow).
const FULLSCREEN_NAME = "Full screen (Esc leaves)", LEAVE_NAME = "Leave full screen (Esc)";

function nameFullscreenButton(gd) {
  const name = fullScreen(gd) ? LEAVE_NAME : FULLSCREEN_NAME;
  const named = [FULLSCREEN_NAME, LEAVE_NAME].map((n) => `.modebar-btn[data-title="${n}"]`).join(", ");
  for (const button of gd.querySelectorAll(named)) {
    button.setAttribute("data-title", name);
    button.setAttribute("aria-label", name);
  }
}

function toggleFullscreen(gd) {
  const box = gd.parentElement;
  if (document.fullscreenElement) document.exitFullscreen();
  else if (box.requestFullscreen) box.requestFullscreen();
}

// The camera button: plotly.js's SVG, each heatmap image (one pixel per cell) enlarged by nearest
// neighbour as the server's export does (viz/crisp.py, its constants), so that no viewer blurs it.
function crispFactor(w, h) {
  const longest = Math.max(w, h);
  if (longest <= 0 || longest >= CRISP_TARGET) return 1;
  return Math.max(1, Math.min(Math.ceil(CRISP_TARGET / longest), Math.floor(CRISP_MAX / longest)));
}

function enlargePng(uri) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => {
      const k = crispFactor(img.naturalWidth, img.naturalHeight);
      if (k === 1) { resolve(uri); return; }
      const canvas = document.createElement("canvas");
      canvas.width = img.naturalWidth * k;
      canvas.height = img.naturalHeight * k;
      const ctx = canvas.getContext("2d");
      ctx.imageSmoothingEnabled = false;  // nearest neighbour: each cell a k x k block of its colour
      ctx.drawImage(img, 0, 0, canvas.width, canvas.height);
      resolve(canvas.toDataURL("image/png"));
    };
    img.onerror = () => reject(new Error("an image of the chart could not be read"));
    img.src = uri;
  });
}

async function crispSvg(svg) {
  const uris = [...new Set(svg.match(/data:image\/png;base64,[A-Za-z0-9+\/=]+/g) || [])];
  const big = await Promise.all(uris.map(enlargePng));
  uris.forEach((uri, i) => { svg = svg.split(uri).join(big[i]); });
  return svg;
}

async function saveSvg(gd) {
  const opts = Object.assign({}, gd._context.toImageButtonOptions, {format: "svg", imageDataOnly: true});
  const svg = await crispSvg(await window.Plotly.toImage(gd, opts));
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([svg], {type: "image/svg+xml"}));
  link.download = `${opts.filename || "attention-lab"}.svg`;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

function fullScreen(gd) {
  // Whether this chart is in full screen (its box, title and caption aside, is what full screen shows).
  return document.fullscreenElement === gd.parentElement;
}

function roomWidth(gd) {
  // The width the chart may take: the screen's in full screen, else its container's.
  return fullScreen(gd) ? window.innerWidth : gd.parentElement.parentElement.clientWidth;
}

function sizeKey(gd) {
  // What the drawn size depends on: the screen's size in full screen, else the container's width.
  return fullScreen(gd) ? `${window.innerWidth}x${window.innerHeight}` : `${roomWidth(gd)}`;
}

function twins(row) {
  // The charts of one row (side by side), this one included.
  return [...document.querySelectorAll("div.lab-chart")].filter((g) => g.__lab && g.__lab.spec &&
                                                                      g.__lab.spec.row === row);
}

function ownTop(g) {
  // A chart's own top margin: as laid out, or as drawn last with its title wrapped again (fitTitle).
  return g.__lab.ownTop !== undefined ? g.__lab.ownTop : ((g.__lab.spec.figure.layout || {}).margin || {}).t || 0;
}

function sideBySide(row) {
  // Whether the row's charts sit side by side: their columns stack, each the full width, on a narrow screen
  // (stackBelow), where one has no twin beside it to be level with.
  return twins(row).some((g) => {
    const column = g.closest('[data-testid="stColumn"]');
    return column && column.parentElement && column.offsetWidth < 0.75 * column.parentElement.clientWidth;
  });
}

function rowTop(row) {
  // The row's largest top margin: every twin's plot then starts at the same height, whatever notes
  // one figure has under its title that the other has not. Stacked (a phone), each keeps its own: a title of
  // two lines under its twin's of three had a blank line between it and its notes.
  if (!sideBySide(row)) return 0;
  return Math.max(0, ...twins(row).filter((g) => !fullScreen(g)).map(ownTop));
}

// Titles and note lines come wrapped (viz/theme.py soft_wrap, its line breaks marked) for the width the
// figure is laid out for (spec.wrapped: 700 px in the page's themes). Drawn narrower (a column beside
// the sidebar, half a page, a phone) they would run off the chart's right edge: they are wrapped again
// to the width drawn, measured in the chart's own font, and the top margin grows by the lines added.
const SOFT_BREAK = '<br class="wrap">';
const BREAKABLE = /[\u2e80-\uffff]\s*|(?:<[^<>]*>|&[^;\s]+;|[^\s\u2e80-\uffff])+[\u2e80-\uffff]?\s*|\s+/gu;  // viz.theme._tokens; u: an emoji is one character
const NUMBER = /^\d+[,.;:)]?\s*$/;  // viz.theme._NUMBER
let ruler = null;

function textWidth(text, size, family) {
  ruler = ruler || document.createElement("canvas").getContext("2d");
  ruler.font = `${size}px ${family}`;
  return ruler.measureText(text.replace(/<[^>]*>/g, "").replace(/&[^;\s]+;/g, "M")).width;
}

function rewrap(text, room, size, family) {
  // [text, lines added]: each hard line (<br>) wrapped again where one of its lines is wider than room
  let added = 0;
  const out = text.split("<br>").map((hard) => {
    const soft = hard.split(SOFT_BREAK);
    if (!soft.some((line) => textWidth(line.trimEnd(), size, family) > room)) return hard;
    const lines = [];
    let current = [];
    for (const piece of soft.join("").match(BREAKABLE) || []) {
      const trial = current.join("") + piece;
      if (current.some((p) => p.trim()) && piece.trim() && textWidth(trial.trimEnd(), size, family) > room) {
        const last = current[current.length - 1];  // a bare number takes the word before it down with it
        const carry = NUMBER.test(piece) && current.length > 1 && last.trim() && /\s$/.test(last) ? [current.pop()] : [];
        lines.push(current.join(""));
        current = carry.concat([piece]);
      } else {
        current.push(piece);
      }
    }
    lines.push(current.join(""));
    added += lines.length - soft.length;
    return lines.join(SOFT_BREAK);
  });
  return [out.join("<br>"), added];
}

// A touch screen: no pointer hovers (a phone, a tablet). plotly.js then shows its toolbar all the time, over the
// title's end; there it keeps the camera, full screen and reset (two fingers zoom, one drags).
const touchScreen = () => Boolean(window.matchMedia && window.matchMedia("(hover: none)").matches);
const TOUCH_REMOVED = ["zoom2d", "pan2d", "select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"];
// chart scale k -> px: the widest toolbar plotly.js has drawn at that scale on this page, for a chart that has none yet
// (a touch screen's buttons are sized by k, ui/style.py: 320's 141 px stood for 390's 118 after the phone turned)
// Keyed by k to 2 decimals (scaleKey): a window dragged through many widths adds at most ~100 entries, not one per
// width, and toolbars at scales that close differ by under a pixel.
const toolbarSeen = new Map();
const scaleKey = (k) => k.toFixed(2);
// A touch screen's toolbar at scale k before any is drawn there, by ui/style.py's (hover: none) rule: each of its three
// buttons an icon of max(22, 25 / k - 12) px and 6 px either side, and its two groups (reset; camera and full screen)
// 8 px before each: 118 px at 0.75, 141 at 0.6. The two groups TOUCH_REMOVED empties are not shown (ui/style.py)
const touchToolbar = (k) => 2 * 8 + 3 * (Math.max(22, 25 / k - 12) + 2 * 6);

// A layout's panels: its x axes (xaxis, xaxis2, ...), each on the y axis it names as its anchor ("y2": yaxis2).
const isXAxis = (name) => /^xaxis\d*$/.test(name);
const yAxisOf = (layout, xaxis) => layout["yaxis" + (xaxis.anchor || "y").slice(1)] || {};
// A text's type in px: its own font's size, else the layout's, else plotly.js's default; its family the layout's.
const sizeOf = (font, layout) => (font || {}).size || (layout.font || {}).size || 12;
const familyOf = (layout) => (layout.font || {}).family || "sans-serif";
const brs = (text) => (String(text || "").match(/<br/g) || []).length;  // a text's line breaks, hard and soft
const edgePx = (size) => Math.max(8, Math.round(0.5 * size));  // viz.theme.edge_px: the white space at a figure's edge

function fitTitle(layout, width, wrapped, reserve = 0) {
  // The layout (a copy where changed) with its title, notes and top subplot titles wrapped for `width`
  // px, and its height and top margin grown by the lines that adds; as it is at the width laid out for.
  // reserve: px at the right end of the title's lines kept free (plotly.js's toolbar, in full screen and on a touch
  // screen: toolbarRoom).
  if (!wrapped || !width || (width >= wrapped - 1 && !reserve)) return layout;
  const family = familyOf(layout);
  const margin = layout.margin || {};
  const room = width - (margin.l || 0) - edgePx(sizeOf(null, layout)) - 4;
  let grow = 0;
  const out = Object.assign({}, layout);
  const title = layout.title || {};
  if (title.text) {
    const size = sizeOf(title.font, layout);
    const [text, added] = rewrap(title.text, Math.min(room, width - reserve - (margin.l || 0)), size,
                                 (title.font || {}).family || family);
    if (text !== title.text) {
      out.title = Object.assign({}, title, {text});
      if (!/<br/.test(title.text) && /<br/.test(text)) {  // now two lines or more: plotly.js lifts the title
        const pad = title.pad || {};                       // by 0.7 em, which the pad gives back (viz.theme._fit_title)
        out.title.pad = Object.assign({}, pad, {t: (pad.t || 0) + Math.round(0.7 * size)});
      }
    }
    grow += Math.max(0, added) * 1.3 * size;
  }
  // the top row's subplot titles, each wrapped to its panel's width (viz.theme._wrap_subplot_titles); where
  // one takes more lines, the notes above them go up by as much (viz.theme._fit_title's lift)
  const panels = Object.keys(layout).filter(isXAxis)
    .map((key) => (layout[key] || {}).domain).filter(Boolean);
  const plotWidth = width - (margin.l || 0) - (margin.r || 0);
  let before = 0, after = 0, titleSize = 0;
  const annotations = (layout.annotations || []).map((a) => {
    if (a.name === "notes" || !a.text || a.xref !== "paper" || a.yref !== "paper" || a.xanchor !== "center"
        || a.yanchor !== "bottom" || !(a.y >= 0.98)) return a;
    const domain = panels.find(([d0, d1]) => Math.abs((d0 + d1) / 2 - a.x) < 1e-3);
    if (!domain) return a;
    const size = sizeOf(a.font, layout);
    const [text] = rewrap(a.text, Math.max((domain[1] - domain[0]) * plotWidth, 3 * size), size,
                          (a.font || {}).family || family);
    before = Math.max(before, brs(a.text));
    after = Math.max(after, brs(text));
    titleSize = Math.max(titleSize, size);
    return text === a.text ? a : Object.assign({}, a, {text});
  });
  const lift = Math.max(0, after - before) * 1.3 * titleSize;
  grow += lift;
  out.annotations = annotations.map((a) => {
    if (a.name !== "notes" || !a.text) return a;
    const size = sizeOf(a.font, layout);
    const [text, added] = rewrap(a.text, room, size, (a.font || {}).family || family);
    grow += Math.max(0, added) * 1.3 * size;
    return text === a.text && !lift ? a : Object.assign({}, a, {text, yshift: (a.yshift || 0) + lift});
  });
  if (grow > 0) {
    out.margin = Object.assign({}, margin, {t: (margin.t || 0) + Math.ceil(grow)});
    if (out.height) out.height += Math.ceil(grow);
  }
  return out;
}

function fitLowerTitles(layout, laid, width) {
  // The subplot titles over a lower row of panels (view 5's "weight = softmax(scaled)ⱼ; outlined: without ÷√dₖ" under
  // the scaled scores), which fitTitle leaves to the top row's: raised to a phone's type (readableType) and not wrapped
  // again, at 320 px it ran past the chart's right edge and onto the panel above and its "−10" tick. Each is wrapped
  // to its panel's width, and the gap above its row grows by what its lines take beyond what they took as laid out
  // (`laid`: the layout before readableType raised its type), the figure by as much: every panel keeps its height.
  const m = layout.margin || {};
  const plotW = width - (m.l || 0) - (m.r || 0), plotH = (layout.height || 0) - (m.t || 0) - (m.b || 0);
  if (!(plotW > 0) || !(plotH > 0)) return layout;
  const family = familyOf(layout);
  const panels = Object.keys(layout).filter((k) => isXAxis(k) && Array.isArray((layout[k] || {}).domain))
    .map((k) => layout[k]);
  const gaps = new Map();  // a lower row's top (paper y) -> px more that its titles take
  const annotations = (layout.annotations || []).map((a, i) => {
    if (a.name === "notes" || !a.text || a.xref !== "paper" || a.yref !== "paper" || a.xanchor !== "center"
        || a.yanchor !== "bottom" || !(a.y < 0.98)) return a;
    const panel = panels.find((x) => Math.abs((x.domain[0] + x.domain[1]) / 2 - a.x) < 1e-3
                                     && Math.abs((yAxisOf(layout, x).domain || [0, 1])[1] - a.y) < 1e-3);
    if (!panel) return a;
    const size = sizeOf(a.font, layout);
    const [text] = rewrap(a.text, Math.max((panel.domain[1] - panel.domain[0]) * plotW, 3 * size), size,
                          (a.font || {}).family || family);
    const was = (laid.annotations || [])[i] || a;
    const more = Math.ceil(1.3 * ((brs(text) + 1) * size - (brs(was.text) + 1) * sizeOf(was.font, laid)));
    if (more > 0) gaps.set(a.y, Math.max(gaps.get(a.y) || 0, more));
    return text === a.text ? a : Object.assign({}, a, {text});
  });
  if (!gaps.size) {
    return annotations.every((a, i) => a === layout.annotations[i]) ? layout : Object.assign({}, layout, {annotations});
  }
  const out = Object.assign({}, layout);
  const grow = [...gaps.values()].reduce((a, b) => a + b, 0);
  // paper y -> the same point's y in the taller plot: up by the gaps grown under it
  const lift = (y) => [...gaps].reduce((px, [at, more]) => px + (at < y - 1e-6 ? more : 0), 0);
  const moved = (y) => (typeof y === "number" ? (y * plotH + lift(y)) / (plotH + grow) : y);
  const ys = Object.keys(layout).filter((k) => /^yaxis\d*$/.test(k) && Array.isArray((layout[k] || {}).domain));
  for (const key of ys) {
    const [d0, d1] = layout[key].domain, up = lift(d0);  // a panel moves as a whole
    out[key] = Object.assign({}, layout[key], {domain: [d0, d1].map((d) => (d * plotH + up) / (plotH + grow))});
  }
  out.annotations = annotations.map((a) => (a.yref === "paper" ? Object.assign({}, a, {y: moved(a.y)}) : a));
  if (layout.shapes) {
    out.shapes = layout.shapes.map((s) => (s.yref === "paper" ? Object.assign({}, s, {y0: moved(s.y0), y1: moved(s.y1)})
                                                               : s));
  }
  out.height = layout.height + grow;
  return out;
}

function thinTicks(layout, plotW, smallest) {
  // Drawn narrower than laid out (a column beside another, a 1024 px window), an axis labelled one token per cell
  // where that fitted the laid-out width ran its labels into each other (a bad-input walk: 21 source tokens,
  // turned 90°, in 380 px). Each x axis keeps every label at a smaller type where all of them fit so, by the
  // server's rule (one label per 1.3 lines of its type: viz.heatmap.tick_budget), at no less than `smallest` px
  // (the type of the figure's cell values, as shown: view 7's step chart beside its twin at 1500 px, 15 source
  // tokens where 14 fitted, labelled every other one); else every k-th label of its own at its type. The hover
  // still names every cell (tokenHover).
  let out = layout;
  for (const [name, axis] of Object.entries(layout)) {
    if (!isXAxis(name) || !axis || !Array.isArray(axis.tickvals) || !Array.isArray(axis.ticktext)) continue;
    const [d0, d1] = axis.domain || [0, 1];
    const size = sizeOf(axis.tickfont, layout);
    const fit = Math.max(2, Math.floor(plotW * (d1 - d0) / (1.3 * size)));
    const n = axis.tickvals.length;
    if (n <= fit) continue;
    if (out === layout) out = Object.assign({}, layout);
    const all = Math.floor(10 * plotW * (d1 - d0) / (1.3 * n)) / 10;  // the type at which all n fit
    if (smallest && all >= smallest) {
      out[name] = Object.assign({}, axis, {tickfont: Object.assign({}, axis.tickfont, {size: all})});
      continue;
    }
    const k = Math.ceil(n / fit);
    const keep = (_, i) => i % k === 0;
    out[name] = Object.assign({}, axis, {tickvals: axis.tickvals.filter(keep), ticktext: axis.ticktext.filter(keep)});
  }
  return out;
}

function axisRow(layout, axis) {
  // the y domain of an x axis's panel: panels side by side share it
  return String(yAxisOf(layout, axis).domain);
}

function rowsOfPanels(layout) {
  // [[x axis name, ...], ...]: the panels of each row of a grid, left to right
  const rows = new Map();
  const names = Object.keys(layout).filter((k) => isXAxis(k) && Array.isArray((layout[k] || {}).domain));
  for (const name of names) {
    const row = axisRow(layout, layout[name]);
    rows.set(row, (rows.get(row) || []).concat([name]));
  }
  return [...rows.values()].map((names) => names.sort((a, b) => layout[a].domain[0] - layout[b].domain[0]));
}

function clearLeftLabels(layout, plotW) {
  // Drawn narrower than laid out (a phone), a panel with row labels of its own right of another (view 6's B in A's
  // order, "3:你") keeps the gap the server left at the laid-out width (viz.heatmap.label_gap) as a fraction of
  // the plot, so its labels ran into the panel before it. Such a row of panels is spaced again, equally wide, with
  // the labels' width between them.
  const family = familyOf(layout);
  let out = layout;
  for (const names of rowsOfPanels(layout)) {
    if (names.length < 2) continue;
    let short = false;
    const gaps = names.slice(1).map((name, i) => {
      const axis = layout[name], have = axis.domain[0] - layout[names[i]].domain[1];
      const y = yAxisOf(layout, axis);
      if (y.showticklabels === false || !Array.isArray(y.ticktext) || !y.ticktext.length) return have;
      const size = sizeOf(y.tickfont, layout);
      const need = (Math.max(...y.ticktext.map((t) => textWidth(String(t), size, family)))
                    + (y.ticklen === undefined ? 5 : y.ticklen) + 8) / plotW;
      short = short || need > have + 1e-6;
      return Math.max(have, need);
    });
    const x0 = layout[names[0]].domain[0], x1 = layout[names[names.length - 1]].domain[1];
    const w = (x1 - x0 - gaps.reduce((a, b) => a + b, 0)) / names.length;
    if (!short || w * plotW < 40) continue;  // no room for that: left as laid out
    if (out === layout) out = Object.assign({}, layout, {annotations: [...(layout.annotations || [])]});
    let x = x0;
    names.forEach((name, i) => {
      const [d0, d1] = layout[name].domain;
      out[name] = Object.assign({}, layout[name], {domain: [x, x + w]});
      out.annotations = out.annotations.map((a) => a.xref === "paper" && Math.abs(a.x - (d0 + d1) / 2) < 1e-3
        ? Object.assign({}, a, {x: x + w / 2}) : a);  // its panel title goes with it
      x += w + (gaps[i] || 0);
    });
  }
  return out;
}

function oneXTitle(layout, plotW) {
  // A grid's bottom panels each say what their columns are ("key") where that fits over the panel at the width
  // laid out (viz.attention's rule); drawn narrower (a phone), view 7's four heads read "source tokeource toke...":
  // where one no longer fits its panel, only the row's first panel keeps its title.
  const family = familyOf(layout);
  let out = layout;
  for (const names of rowsOfPanels(layout)) {
    const titled = names.filter((n) => ((layout[n].title || {}).text || "").trim());
    if (titled.length < 2) continue;
    const fits = titled.every((n) => {
      const axis = layout[n], title = axis.title;
      const size = sizeOf(title.font, layout);
      const width = textWidth(title.text, size, (title.font || {}).family || family);
      return width + 4 <= plotW * (axis.domain[1] - axis.domain[0]);
    });
    if (fits) continue;
    if (out === layout) out = Object.assign({}, layout);
    for (const n of titled.slice(1)) {
      out[n] = Object.assign({}, layout[n], {title: Object.assign({}, layout[n].title, {text: ""})});
    }
  }
  return out;
}

function fewerAutoTicks(layout, plotW) {
  // Axes of bare positions (dimensions 0-63) take plotly.js's own ticks, at most `nticks` as laid out
  // (viz.heatmap.style_matrix_axes); drawn narrower (a phone), three panels' "0 10 20 ... 60" were turned 90° and
  // stood edge to edge: a panel too narrow for its nticks asks for fewer, as many as fit upright.
  let out = layout;
  for (const [name, axis] of Object.entries(layout)) {
    if (!isXAxis(name) || !axis || axis.tickmode !== "auto" || !(axis.nticks > 3)) continue;
    const [d0, d1] = axis.domain || [0, 1];
    const size = sizeOf(axis.tickfont, layout);
    const nticks = Math.max(3, Math.floor(plotW * (d1 - d0) / (2.5 * size)));  // upright: 2.5 em a label
    if (nticks >= axis.nticks) continue;
    if (out === layout) out = Object.assign({}, layout);
    out[name] = Object.assign({}, axis, {nticks});
  }
  return out;
}

function narrowPanels(layout, width, laidOut, smallest) {
  // Drawn narrower than laid out: panels side by side keep their labels apart, and an axis's labels are thinned
  // where they would run together (see each step; smallest: thinTicks')
  if (!width || !laidOut || width >= laidOut) return layout;
  const m = layout.margin || {};
  const plotW = width - (m.l || 0) - (m.r || 0);
  const spaced = fewerAutoTicks(oneXTitle(clearLeftLabels(layout, plotW), plotW), plotW);
  return clearRightEnds(thinTicks(spaced, plotW, smallest), plotW);
}

const LINE_EM = 1.45;  // a line's box in the figures' first font, Noto Sans CJK (ascent 1.16 + descent 0.29 em)

function clearRightEnds(layout, plotW) {
  // Panels side by side (a grid of heads) at the width drawn: a panel's last key label goes where it and the next
  // panel's first would reach into each other across the gap ("20:a0:t" on a phone). viz.heatmap.clear_right_end,
  // the server's rule at the laid-out width, for labels side by side; here also for labels plotly.js turned 90°
  // (crowded), which reach sideways by half their line's box: on a phone, at the type readableType gives them, view
  // 4's turned "20:a" and "0:t" of the next panel touched.
  const family = familyOf(layout);
  const axes = Object.keys(layout).filter((k) => isXAxis(k) && Array.isArray((layout[k] || {}).tickvals)
    && Array.isArray(layout[k].ticktext) && layout[k].tickvals.length >= 2 && layout[k].showticklabels !== false
    && Array.isArray(layout[k].range) && Array.isArray(layout[k].domain));
  let out = layout;
  for (const name of axes) {
    const axis = layout[name], [d0, d1] = axis.domain;
    const next = axes.map((k) => layout[k]).find((b) => b !== axis && b.domain[0] >= d1 - 1e-9
      && b.domain[0] - d1 < 0.2 && axisRow(layout, b) === axisRow(layout, axis));  // the panel right of it, in its row
    if (!next) continue;
    const size = sizeOf(axis.tickfont, layout);
    const vals = axis.tickvals, text = axis.ticktext, span = axis.range;
    const per = plotW * (d1 - d0) / Math.abs(span[1] - span[0]);  // px per position
    const widest = Math.max(...text.map((t) => textWidth(String(t), size, family)));
    const turned = Math.min(...vals.slice(1).map((v, i) => v - vals[i])) * per < widest + 4;  // as plotly.js turns them
    const half = (t) => (turned ? LINE_EM * size : textWidth(String(t), size, family)) / 2;  // reach either side
    const right = half(text[text.length - 1]) - (Math.max(...span) - vals[vals.length - 1]) * per;
    const nextPer = plotW * (next.domain[1] - next.domain[0]) / Math.abs(next.range[1] - next.range[0]);
    const left = half(next.ticktext[0]) - (next.tickvals[0] - Math.min(...next.range)) * nextPer;
    if (Math.max(0, right) + Math.max(0, left) + 4 > plotW * (next.domain[0] - d1)) {
      if (out === layout) out = Object.assign({}, layout);
      out[name] = Object.assign({}, axis, {tickvals: vals.slice(0, -1), ticktext: text.slice(0, -1)});
    }
  }
  return out;
}

const CLOCK_SPAN = [1.4, 1.6];  // viz.positional.CLOCK_SPAN: the least the clocks' axes span (±1.4, 1.6 above)

function clockRanges(layout, data, width, laidOut) {
  // A figure of round panels (view 2's clocks) drawn narrower than laid out (a phone: 480 px for 700, its type raised
  // by readableType, 18.3 px at 320): each panel's ranges as far as the numbers written beside its points need at the
  // px a unit and the type drawn (viz.positional._clock_ranges' rule, and the numbers at the right inside the panel
  // too, where the next panel's y labels begin), never less than laid out, the same on every panel. Measured at the
  // theme's own size and type, "3" and "10" crossed the x axis line, "0" the title "ω = 57.3°", "4" "cos (dim 17)".
  if (!(layout.meta || {}).round || !width || !laidOut || width >= laidOut) return layout;
  const m = layout.margin || {};
  const plotW = width - (m.l || 0) - (m.r || 0), plotH = (layout.height || 0) - (m.t || 0) - (m.b || 0);
  const panels = data.filter((t) => (t.meta || {}).role === "positions" && Array.isArray(t.x) && Array.isArray(t.y)
    && Array.isArray(t.text) && Array.isArray(t.textposition)).map((t) => {
    const x = layout["xaxis" + (t.xaxis || "x").slice(1)], y = layout["yaxis" + (t.yaxis || "y").slice(1)];
    return {t, x, y};
  }).filter(({x, y}) => x && y && Array.isArray(x.range) && Array.isArray(y.range));
  if (!panels.length) return layout;
  const family = familyOf(layout);
  // the gap between panels as wide as the next panel's y labels need at the type drawn ("−1", its tick and the
  // title "cos (dim 17)" a line beside it): laid out at the theme's type, 18.3 px at 320 put the title on "4" and "6",
  // ~7 px into the panel before
  panels.sort((a, b) => (a.x.domain || [0, 1])[0] - (b.x.domain || [0, 1])[0]);
  const labels = (y) => {  // px left of its axis line: tick labels, their tick and pad, the title's standoff and line
    const title = sizeOf((y.title || {}).font, layout);  // (measured at 18.3 px: labels to 30 px, the title 46-72)
    return textWidth("−1", sizeOf(y.tickfont, layout), family) + (y.ticklen || 5) + 6 + (0.9 + LINE_EM) * title + 4;
  };
  const gap = Math.max(0, ...panels.slice(1).map(({y}) => labels(y))) / plotW;
  const [start, end] = [(panels[0].x.domain || [0, 1])[0], (panels[panels.length - 1].x.domain || [0, 1])[1]];
  const shown = panels.slice(1).map(({x}, i) => (x.domain || [0, 1])[0] - (panels[i].x.domain || [0, 1])[1]);
  if (panels.length > 1 && Math.min(...shown) < gap) {
    const each = (end - start - (panels.length - 1) * gap) / panels.length;
    const moved = new Map();  // each panel's title (an annotation centred over it) moves with it
    panels.forEach((p, i) => {
      const [d0, d1] = p.x.domain || [0, 1], a = start + i * (each + gap);
      moved.set(Math.round(((d0 + d1) / 2) * 1e4), a + each / 2);
      p.x = Object.assign({}, p.x, {domain: [a, a + each]});
    });
    layout = Object.assign({}, layout, {annotations: (layout.annotations || []).map((a) => {
      const to = a.xref === "paper" && a.xanchor === "center" ? moved.get(Math.round(a.x * 1e4)) : undefined;
      return to === undefined ? a : Object.assign({}, a, {x: to});
    })});
  }
  let [lo, hi] = [Math.min(...panels.map(({x}) => x.range[0])), Math.max(...panels.map(({x}) => x.range[1]))];
  let [bottom, top] = [Math.min(...panels.map(({y}) => y.range[0])), Math.max(...panels.map(({y}) => y.range[1]))];
  for (let round = 0; round < 4; round++) {  // the px a unit shrinks as the ranges grow: a few rounds settle it
    const need = {left: -lo, right: hi, top, bottom: -bottom};
    for (const {t, x, y} of panels) {
      const [x0, x1] = x.domain || [0, 1], [y0, y1] = y.domain || [0, 1];
      const unit = Math.min(plotW * (x1 - x0) / (hi - lo), plotH * (y1 - y0) / (top - bottom));
      const font = sizeOf(t.textfont, layout);
      const sizes = (t.marker || {}).size;
      t.text.forEach((number, i) => {
        if (!number) return;
        const size = Array.isArray(sizes) ? sizes[i] : (typeof sizes === "number" ? sizes : 6);
        const clear = size / 2 + 1.3 * font, wide = (size / 2 + 4 + textWidth(String(number), font, family)) / unit;
        const side = t.textposition[i], px = t.x[i], py = t.y[i];
        if (side === "bottom center") need.bottom = Math.max(need.bottom, -py + clear / unit);
        else if (side === "top center") need.top = Math.max(need.top, py + (clear + 0.5 * font) / unit);
        else if (side === "middle left") need.left = Math.max(need.left, -px + wide);
        else if (side === "middle right") need.right = Math.max(need.right, px + wide);
      });
    }
    [lo, hi, top, bottom] = [-need.left, need.right, need.top, -need.bottom];
  }
  const out = Object.assign({}, layout);
  for (const {t, x, y} of panels) {
    out["xaxis" + (t.xaxis || "x").slice(1)] = Object.assign({}, x, {range: [lo, hi]});
    out["yaxis" + (t.yaxis || "y").slice(1)] = Object.assign({}, y, {range: [bottom, top]});
  }
  return out;
}

function roundPanels(layout, width) {
  // A figure whose panels keep their aspect (layout.meta.round: the clock's circles stay round, their y axes
  // giving up domain toward the top): its plot only as tall as its widest panel needs at the width drawn. Its
  // laid-out height left a blank band under the circles (a teacher's walk: ~150 px at 564 px wide).
  if (!(layout.meta || {}).round || !width || !layout.height) return layout;
  const m = layout.margin || {};
  const plotW = width - (m.l || 0) - (m.r || 0), plotH = layout.height - (m.t || 0) - (m.b || 0);
  let need = 0;
  for (const [name, x] of Object.entries(layout)) {
    const y = isXAxis(name) ? layout["y" + name.slice(1)] : null;
    if (!y || !x.range || !y.range) continue;
    const [x0, x1] = x.domain || [0, 1], [y0, y1] = y.domain || [0, 1];
    const span = Math.abs(y.range[1] - y.range[0]) / Math.abs(x.range[1] - x.range[0]);
    need = Math.max(need, plotW * (x1 - x0) * span / (y1 - y0));
  }
  if (!(need > 0) || need >= plotH) return layout;
  return Object.assign({}, layout, {height: Math.ceil(layout.height - (plotH - need))});
}

function legendBelow(layout, width) {
  // Drawn narrower than LEGEND_BELOW_UNDER px (a phone), a legend beside the plot took up to half the width:
  // it goes under the plot in rows, with the margins the server laid out for that (viz.theme NARROW_LEGEND),
  // and the figure grows by what the bottom margin gains, so the plot keeps its height.
  const narrow = (layout.meta || {}).narrow_legend;
  if (!narrow || !width || width >= LEGEND_BELOW_UNDER) return layout;
  const margin = Object.assign({}, layout.margin);
  const grow = Math.max(0, narrow.b - (margin.b || 0));
  const legend = Object.assign({}, layout.legend, {orientation: "h", x: 0.01, xanchor: "left", xref: "container",
    y: 0, yanchor: "bottom", yref: "container"});
  if ((legend.title || {}).text) legend.title = Object.assign({}, legend.title, {side: "top"});
  return Object.assign({}, layout, {legend, margin: Object.assign(margin, {r: narrow.r, b: narrow.b}),
    height: layout.height && layout.height + grow});
}

function angleAsDrawn(axis, labels, plotW, size, family) {
  // The angle (degrees) plotly.js turns an axis's labels by at this plot width, or undefined where the axis does not
  // say where its labels go (no tick values or range). plotly.js's rule: where two neighbours' boxes (each its label's
  // width and 2 px more; here 2 px more to spare) meet, the first of the axis's autotickangles (its default 0, 30, 90;
  // the heatmaps' 0, 90: viz.heatmap) whose cosine is at most spacing / hypot(spacing, 1.25 lines), else the steepest.
  const vals = axis.tickvals, span = axis.range;
  if (!Array.isArray(vals) || vals.length !== labels.length || !Array.isArray(span)) return undefined;
  if (typeof axis.tickangle === "number") return axis.tickangle;  // set: not turned by plotly.js
  const [d0, d1] = axis.domain || [0, 1];
  const per = plotW * (d1 - d0) / Math.abs(span[1] - span[0]);  // px per position
  const widths = labels.map((t) => textWidth(t, size, family));
  if (!vals.slice(1).some((v, i) => Math.abs(v - vals[i]) * per < (widths[i] + widths[i + 1]) / 2 + 4)) return 0;
  const spacing = Math.abs(vals[vals.length - 1] - vals[0]) * per / (vals.length - 1);
  const most = spacing / Math.hypot(spacing, 1.25 * size * Math.max(...labels.map((t) => brs(t) + 1)));
  const angles = Array.isArray(axis.autotickangles) && axis.autotickangles.length ? axis.autotickangles : [0, 30, 90];
  const cos = (a) => Math.abs(Math.cos(a * Math.PI / 180));
  const fit = angles.find((a) => cos(a) <= most);
  return fit === undefined ? angles.reduce((a, b) => (cos(b) < cos(a) ? b : a)) : fit;
}

function belowPlot(layout, plotW, asDrawn = false) {
  // px under the plot of the bottom row: its x tick labels (turned 90° where they do not fit side by side, as plotly.js
  // turns them) and its x axis title; viz.theme._below_plot's rule, the labels measured in their own type. asDrawn:
  // the labels turned as plotly.js turns them at this width (angleAsDrawn), where the server's rule, generous, turns
  // them sooner (view 7's 32 target labels, turned by it at 820 px, lay flat there) and always by 90° (view 5's 16
  // key labels, turned 30° at 820 px)
  const family = familyOf(layout);
  let depth = 0;
  for (const [name, axis] of Object.entries(layout)) {
    if (!isXAxis(name) || !axis || axis.side === "top" || axis.overlaying) continue;
    const y = yAxisOf(layout, axis);
    if (y.domain && y.domain[0] > 0.01) continue;  // not the bottom row
    let px = 0;
    if (axis.showticklabels !== false) {
      const size = sizeOf(axis.tickfont, layout);
      const labels = Array.isArray(axis.ticktext) ? axis.ticktext.map(String) : [];
      const widest = Math.max(0, ...labels.map((t) => textWidth(t, size, family)));
      const [d0, d1] = axis.domain || [0, 1];
      const fits = !labels.length || axis.tickangle === 0 || labels.length * (widest + 8) <= (d1 - d0) * plotW;
      const angle = asDrawn && labels.length ? angleAsDrawn(axis, labels, plotW, size, family) : undefined;
      const turn = (angle === undefined ? (fits ? 0 : 90) : Math.abs(angle)) * Math.PI / 180;
      px += (widest + 4) * Math.sin(turn) + 1.3 * size * Math.cos(turn) + 14;
    }
    if ((axis.title || {}).text) px += 1.5 * sizeOf(axis.title.font, layout) + 6;
    depth = Math.max(depth, px);
  }
  return depth;
}

function legendUnder(layout, data, width) {
  // px a legend under the plot takes (in rows of entries, as wide as the figure): viz.theme._legend_px's rule
  const legend = layout.legend || {};
  if (layout.showlegend === false || legend.orientation !== "h") return 0;
  const shown = data.filter((t) => (t.showlegend !== undefined ? t.showlegend : ["scatter", "bar"].includes(t.type)));
  if (!shown.length || (data.length < 2 && layout.showlegend !== true)) return 0;  // plotly.js draws none for one trace
  const size = sizeOf(legend.font, layout), family = familyOf(layout);
  const room = width - 2 * edgePx(sizeOf(null, layout));
  let rows = 1, used = 0;
  for (const [i, t] of shown.entries()) {
    const w = textWidth(String(t.name || `trace ${i}`), size, family) + 60;
    if (used && used + w > room) [rows, used] = [rows + 1, 0];
    used += w;
  }
  return rows * (1.3 * size + 6) + 10 + ((legend.title || {}).text ? 1.3 * size : 0);
}

function fitBottom(layout, data, width, laidOut) {
  // Drawn wider than laid out (a 1280 px page draws the 700 px layout 820 px wide), x tick labels the server turned
  // 90° (its bottom margin holds them: viz.theme._below_plot) may lie flat, and plotly.js, which only grows a margin,
  // left the rest empty under the x axis title (view 7's decoder self-attention at a long sentence: ~65 px; view 4's
  // grids, their labels turned either way, ~20 px, the server's estimate of their length being generous). The bottom
  // margin shrinks to what is under the plot at the width drawn (belowPlot, a legend under it: legendUnder) and the
  // figure's edge, and the height by as much, so the plot keeps its height. A colour bar under the plot (the server's,
  // a phone's: colorbarBelow) keeps the margin as it is.
  if (!width || !laidOut || width <= laidOut) return layout;
  const barUnder = (b) => (b || {}).orientation === "h";
  if (Object.keys(layout).some((key) => /^coloraxis\d*$/.test(key) && barUnder((layout[key] || {}).colorbar))
      || data.some((t) => barUnder(t.colorbar))) return layout;
  const m = layout.margin || {};
  const need = Math.ceil(edgePx(sizeOf(null, layout)) + belowPlot(layout, width - (m.l || 0) - (m.r || 0), true)
                         + legendUnder(layout, data, width));
  const spare = (m.b || 0) - need;
  if (!(spare >= 1)) return layout;
  const margin = Object.assign({}, m, {b: need});
  return Object.assign({}, layout, {margin, height: layout.height && layout.height - spare});
}

function colorbarBelow(layout, data, width) {
  // [layout, data] with each colour bar under the plot, where drawn NARROW_WIDTH wide or less (a phone): beside it,
  // it took as much of the width as the plot (a teacher's walk at 390 px: view 3's weights had ~150 px, the colour bar
  // and the row sums the rest, the keys' short labels turned on their side). The right margin is the server's for that
  // (viz.theme NARROW_COLORBAR: the row sums' room only; view 3's five matrices keep one, their columns in line); the
  // bottom one holds what is under the plot, measured here, and the bars with their numbers, and the figure grows by
  // what that gains, so the plot keeps its height. One bar is as long as the plot; several (view 6's outputs and their
  // |A − B|, each of its own scale) share its length side by side, in their order, two letters apart, each its title
  // and bar in its slot (each as long as the plot, they were drawn on top of each other, titles and numbers).
  const narrow = (layout.meta || {}).narrow_colorbar;
  if (!narrow || !width || width > NARROW_WIDTH) return [layout, data];
  const margin = Object.assign({}, layout.margin, {r: narrow.r});
  const bars = Object.keys(layout).filter((key) => /^coloraxis\d*$/.test(key) && layout[key]
                                                   && layout[key].showscale !== false)
    .sort((a, b) => Number(a.slice(9) || 1) - Number(b.slice(9) || 1));  // coloraxis, coloraxis2, ...: their order
  const heatmaps = data.map((t) => t.type === "heatmap" && !t.coloraxis && t.showscale !== false);
  const shown = bars.map((key) => layout[key].colorbar || {}).concat(data.filter((_, i) => heatmaps[i])
                                                                         .map((t) => t.colorbar || {}));
  const out = Object.assign({}, layout, {margin});
  if (!shown.length) return [out, data];  // view 3's mask: the others' right margin only
  // the bar, its numbers and their pads
  const bar = Math.max(...shown.map((b) => (b.thickness || 30) + 1.3 * sizeOf(b.tickfont, layout) + 14));
  const size = sizeOf(null, layout), edge = edgePx(size);
  const plotW = width - (margin.l || 0) - margin.r;
  const n = shown.length, gap = n > 1 ? 2 * size / plotW : 0;  // a gap of two letters between slots, of the plot
  const slot = (1 - (n - 1) * gap) / n;
  margin.b = Math.max(Math.ceil(edge + belowPlot(layout, plotW) + bar), margin.b || 0);
  if (out.height) out.height += margin.b - ((layout.margin || {}).b || 0);
  // at the figure's bottom edge, its title beside it, left ("side: right" draws it there; plotly.js fits title and bar
  // in len): plotly.js 4.1.1 set a title over an h bar onto the bar, and one under it by the figure's height, onto its
  // numbers; hung from the plot instead (yref paper), the bar pushed the bottom margin by far more than it took (view
  // 4's layer 0 plot, 5 rows, squeezed to ~60 px over a blank band)
  const below = (colorbar, i) => Object.assign({}, colorbar, {orientation: "h", xref: "paper",
    x: i * (slot + gap) + slot / 2, xanchor: "center", yref: "container", y: 0, yanchor: "bottom", len: slot,
    lenmode: "fraction",
    title: Object.assign({}, (colorbar || {}).title, {side: "right"})});
  bars.forEach((key, i) => { out[key] = Object.assign({}, layout[key], {colorbar: below(layout[key].colorbar, i)}); });
  let i = bars.length;
  return [out, data.map((t, j) => (heatmaps[j] ? Object.assign({}, t, {colorbar: below(t.colorbar, i++)}) : t))];
}

function shrink(gd, k, height, fullscreen) {
  // k < 1: the chart drawn `height` px tall is shown at k times its size (a CSS transform, which
  // plotly.js's hover, zoom and selection follow), its box as tall as what is shown.
  const box = gd.parentElement;
  gd.style.transform = k < 1 ? `scale(${k})` : "";
  gd.style.transformOrigin = k < 1 ? "0 0" : "";
  box.style.overflow = k < 1 ? "hidden" : "";
  box.style.height = k < 1 && !fullscreen ? `${Math.ceil(height * k)}px` : "";
}

const writesInCells = (trace) => trace.type === "heatmap" && trace.texttemplate;  // values, and marks (see-through)

function raiseFonts(obj, least) {
  // obj (a copy where changed) with every font in it ("font", "tickfont", "textfont" ...) at no less than `least` px;
  // arrays of numbers and strings (tick values, a heatmap's z) are left as they are, not walked
  if (!obj || typeof obj !== "object") return obj;
  if (Array.isArray(obj)) {
    if (!obj.some((o) => o && typeof o === "object")) return obj;
    const out = obj.map((o) => raiseFonts(o, least));
    return out.some((o, i) => o !== obj[i]) ? out : obj;
  }
  let out = obj;
  for (const [key, value] of Object.entries(obj)) {
    if (!value || typeof value !== "object" || key === "meta" || key === "template") continue;
    const raised = /font$/i.test(key) && !Array.isArray(value)
      ? (typeof value.size === "number" && value.size < least ? Object.assign({}, value, {size: least}) : value)
      : raiseFonts(value, least);
    if (raised === value) continue;
    if (out === obj) out = Object.assign({}, obj);
    out[key] = raised;
  }
  return out;
}

const MOST_RAISED = 1.35;  // readableType leaves a figure whose text it would raise by more than this as laid out

function readableType(layout, data, k) {
  // [layout, data] in which no text is shown under SMALLEST_PX: shown shrunk (k < 1), a chart's type is shown at k
  // times its size (a teacher's walk on a 390 px phone, the default theme drawn 480 px wide at ~0.75: view 5's note
  // "largest weight 0.463; without ÷√d_k it would be 0.928" at ~8 px, every tick label at ~10.4). Every font of the
  // layout (title, notes, subplot titles, axes' labels and titles, colour bars, legend, hover) and the texts traces
  // write is drawn at SMALLEST_PX / k or more; the values in cells are readableCells' (it keeps them at the theme's
  // cell type on the screen, or leaves them to the hover). The top margin grows by what the title's, the notes' and
  // the top subplot titles' lines gain (the plot keeps its height); the other margins grow where plotly.js finds
  // them short (automargin); notes and titles wrap again at their new size (fitTitle, after this). Where the figure's
  // text would grow by more than MOST_RAISED (a slide chart, laid out for 1280 px, on a phone at ~0.28: x 1.8) it
  // would no longer fit the margins and cells laid out for it: that figure is left as laid out.
  const font = layout.font || {};
  const base = font.size || 12;
  const least = Math.ceil(100 * SMALLEST_PX / k) / 100;
  if (!(k < 1) || least > MOST_RAISED * base) return [layout, data];
  let out = raiseFonts(layout, least);
  if (!(font.size >= least)) out = Object.assign({}, out, {font: Object.assign({}, font, {size: least})});  // inherited
  const gain = (f) => Math.max(0, least - ((f || {}).size || base));  // px a text's type grows by
  const title = layout.title || {};
  let grow = title.text ? gain(title.font) * (1.4 + 1.3 * brs(title.text)) : 0;  // viz.theme._fit_title's heights
  const top = (layout.annotations || []).filter((a) => a.name !== "notes" && a.text && a.yref === "paper"
    && a.yanchor === "bottom" && a.y >= 0.98);  // subplot titles over the top row: the notes sit above them
  const lift = Math.max(0, ...top.map((a) => 1.3 * (brs(a.text) + 1) * gain(a.font)));
  (layout.annotations || []).filter((a) => a.name === "notes" && a.text)
    .forEach((a) => { grow += 1.3 * (brs(a.text) + 1) * gain(a.font); });
  grow = Math.ceil(grow + lift);
  if (grow > 0) {
    const margin = out.margin || {};
    out = Object.assign({}, out, {margin: Object.assign({}, margin, {t: (margin.t || 0) + grow})});
    if (out.height) out.height += grow;
    if (lift) out.annotations = out.annotations.map((a) => a.name === "notes"
      ? Object.assign({}, a, {yshift: (a.yshift || 0) + lift}) : a);
  }
  const traces = data.map((trace) => {
    const {textfont, ...rest} = trace;  // a cell's values: readableCells'
    const raised = raiseFonts(Object.fromEntries(["colorbar", "hoverlabel", "insidetextfont", "outsidetextfont",
      "legendgrouptitle"].filter((key) => key in rest).map((key) => [key, rest[key]])), least);
    const own = textfont && !writesInCells(trace) ? raiseFonts({textfont}, least).textfont : textfont;
    const changed = Object.keys(raised).some((key) => raised[key] !== trace[key]) || own !== textfont;
    return changed ? Object.assign({}, trace, raised, own === undefined ? {} : {textfont: own}) : trace;
  });
  return [out, traces];
}

function readableCells(data, layout, k, type) {
  // Shown shrunk (k < 1), the values and marks written in cells ("1.64", "−∞") would be shown at k times the theme's
  // cell type (viz.theme.cell_type_px): a slide chart beside the open sidebar of a 1280 px projector, at 0.64, wrote
  // the slide's cell type (19 px then, 21 now) as 12. They are drawn at type / k instead, shown at the theme's own, where they still fit their
  // cells as drawn, by the server's rule (viz.theme.fit_cell_values: the widest with room either side, a line
  // high); else they are left out, as the server leaves out what does not fit (the hover keeps every value).
  if (!(k < 1) || !type) return data;
  const size = type / k;
  const m = layout.margin || {};
  const plotW = (layout.width || 0) - (m.l || 0) - (m.r || 0), plotH = (layout.height || 0) - (m.t || 0) - (m.b || 0);
  const family = familyOf(layout);
  return data.map((trace) => {
    // the values, and the marks in masked and NaN cells ("−∞": a see-through heatmap's text, viz.heatmap)
    const values = writesInCells(trace) && Array.isArray(trace.text);
    const font = trace.textfont || {};
    if (!values || (font.size || 0) * k >= type) return trace;
    const xa = layout["xaxis" + (trace.xaxis || "x").slice(1)] || {};
    const ya = layout["yaxis" + (trace.yaxis || "y").slice(1)] || {};
    if (!Array.isArray(xa.range) || !Array.isArray(ya.range)) return trace;
    const [x0, x1] = xa.domain || [0, 1], [y0, y1] = ya.domain || [0, 1];
    let w = plotW * (x1 - x0) / Math.abs(xa.range[1] - xa.range[0]);  // a cell: one position of each axis
    let h = plotH * (y1 - y0) / Math.abs(ya.range[1] - ya.range[0]);
    if (ya.scaleanchor) w = h = Math.min(w, h);
    const texts = trace.text.flat();
    const widest = Math.max(0, ...texts.map((t) => textWidth(String(t || ""), size, font.family || family)));
    if (h >= size + 2 && w >= widest + Math.max(4, CELL_PAD_EM * size)) {
      return Object.assign({}, trace, {textfont: Object.assign({}, font, {size})});
    }
    const {text, texttemplate, ...rest} = trace;
    return rest;
  });
}

function tokenHover(figure) {
  // A heatmap's hover names its cell by its axis labels, "query 30:家", also where the ticks skip it
  // (plotly.js shows %{y} as the tick's text only at a tick, else the bare position "query 30"). The
  // figure carries each axis's labels once (meta.hover_labels, viz/heatmap.py grid_heatmaps); here
  // every cell gets its pair in customdata, which the hover template then reads.
  for (const trace of figure.data || []) {
    const labels = trace.meta && trace.meta.hover_labels;
    if (!labels || typeof trace.hovertemplate !== "string") continue;
    trace.customdata = labels.y.map((y) => labels.x.map((x) => [y, x]));
    trace.hovertemplate = trace.hovertemplate.split("%{y}").join("%{customdata[0]}")
                                             .split("%{x}").join("%{customdata[1]}");
  }
  return figure;
}

function shrinkFactor(gd, room) {
  // < 1 where the room is narrower than the width the figure is laid out for (its own, or its theme's design)
  const {figure, design} = gd.__lab.spec;
  const laidOut = figure.layout.width || design || 0;
  return room && laidOut > room ? room / laidOut : 1;
}

function sizedLayout(layout, room, k, fullscreen) {
  // The layout at the size the figure is drawn (before the CSS scale k): the whole screen in full screen; else its
  // own, its width the room's and its height the app's where it sets none
  if (fullscreen) return Object.assign({}, layout, {width: window.innerWidth / k, height: window.innerHeight / k});
  return Object.assign({}, layout, {width: layout.width || (room ? room / k : undefined),
                                    height: layout.height || APP_HEIGHT / k});
}

function toolbarConfig(config, touch) {
  // The figure's plotly.js config with the app's toolbar: the camera saves crisp heatmaps (saveSvg) where plotly.js's
  // own toImage left them to the viewer's smoothing, a button goes full screen, box and lasso select go (nothing in
  // the app reads a selection, and each was one more Tab stop per chart), and on a touch screen what a finger does not
  // use (TOUCH_REMOVED)
  return Object.assign({}, config, {
    modeBarButtonsToRemove: ["toImage", "select2d", "lasso2d"].concat(touch ? TOUCH_REMOVED : []),
    modeBarButtonsToAdd: [
      {name: "crisp-svg", title: "Download plot", icon: window.Plotly.Icons.camera, click: saveSvg},
      {name: "fullscreen", title: FULLSCREEN_NAME, icon: FULLSCREEN_ICON, click: toggleFullscreen},
    ],
  });
}

function toolbarRoom(gd, k, fullscreen, touch) {
  // px at the right end of the title's lines kept for plotly.js's toolbar (0: none). In full screen the title keeps
  // clear of it (top right, shown while the pointer is on the chart): a projector's slide title laid out for 1280 px
  // ran under it. So it does on a touch screen (a phone, a tablet), where no pointer hovers and plotly.js shows the
  // toolbar all the time: there the toolbar keeps only the buttons a finger uses (TOUCH_REMOVED goes), so that the
  // title keeps most of a phone's width. Before plotly.js has drawn a toolbar in this chart, the widest one drawn so
  // far at its scale stands for it; before any, a guess (touchToolbar), and draw() draws the chart again (`again`)
  // once its own is there where that was off: short (a narrow-screen walk: the guess of 100 px for a touch screen's
  // 134 ran 820 px titles 12-31 px under it) or long (a keyboard walk: 140 for 134 wrapped view 5's title a line early
  // on a phone, and the chart came back from full screen a line shorter than it left, its own toolbar measured then;
  // its placeholder was a line taller than the chart drawn). All in the chart's own px, as the title is laid out: the
  // toolbar is inside the chart, and shown at its scale k with it (a phone walk: divided by k, as if the screen's, 134
  // px read as 180 at 0.75, and titles kept ~45-95 px clear of it where 8 were meant).
  if (!fullscreen && !touch) return 0;
  const guess = touch ? touchToolbar(k) : 300;
  return ((gd.querySelector(".modebar") || {}).offsetWidth || toolbarSeen.get(scaleKey(k)) || guess) + 8;
}

function automarginLeft(layout) {
  // px of left margin that plotly.js's automargin takes for the y labels of the panels at the plot's left edge: the
  // longest label, its tick and the gap to it (0.2 em + 1 px), and the axis title beside them (its standoff and a line
  // of 1.45 em), as its bounding boxes measure them. Reckoned a few px over rather than under (a 320 px phone: 36-40 px
  // of title and gap measured, 41.6 reckoned): a margin that is enough is kept as it is, one short is pushed.
  const family = familyOf(layout);
  let need = 0;
  for (const [name, y] of Object.entries(layout)) {
    if (!/^yaxis\d*$/.test(name) || !y || !y.automargin || y.side === "right" || y.showticklabels === false) continue;
    if (!Array.isArray(y.ticktext) || !y.ticktext.length) continue;
    const x = layout["xaxis" + String(y.anchor || "x").slice(1)] || {};
    if ((x.domain || [0, 1])[0] > 0.01) continue;  // a panel right of another: its labels lie between them
    const size = sizeOf(y.tickfont, layout), font = (y.tickfont || {}).family || family;
    const widest = Math.max(...y.ticktext.flatMap((t) => String(t).split(/<br\s*\/?>/i))
      .map((line) => textWidth(line, size, font)));
    let depth = widest + (y.ticks === "outside" ? (y.ticklen === undefined ? 5 : y.ticklen) : 0) + 0.2 * size + 1;
    const title = y.title || {};
    if (String(title.text || "").trim()) {
      depth += (title.standoff === undefined ? 15 : title.standoff) + LINE_EM * sizeOf(title.font, layout) * (brs(title.text) + 1);
    }
    need = Math.max(need, Math.ceil(depth));
  }
  return need;
}

function fitted(gd, room, k, fullscreen, toolbar, left = 0) {
  // [layout, traces, the traces before colorbarBelow]: the figure fitted to the size it is drawn at, before the CSS
  // scale k (sizedLayout), as draw() draws it but for its row's top (rowTop) and print's colours; placeholder() too.
  // left: px more left margin than laid out, where plotly.js's automargin took them as drawn last (draw)
  const {figure, wrapped, cellType} = gd.__lab.spec;
  const sized = sizedLayout(figure.layout, room, k, fullscreen);
  if (left > 0) sized.margin = Object.assign({}, sized.margin, {l: ((sized.margin || {}).l || 0) + left});
  const laidOut = figure.layout.width || wrapped;
  let [readable, traces] = readableType(sized, figure.data || [], k);
  if (readable !== sized) {
    // its type raised, the y labels may need more than the left margin laid out: the margin plotly.js's automargin
    // will take (automarginLeft), so that the title and notes, which start at the plot, are wrapped for it (a review:
    // wrapped for the margin laid out and drawn again after plotly.js moved the plot, two view 7 charts at 320 px came
    // out a line, 14 px, taller than the height held for them, and the page jumped)
    const l = (readable.margin || {}).l || 0, need = automarginLeft(readable);
    if (need > l) readable = Object.assign({}, readable, {margin: Object.assign({}, readable.margin, {l: need})});
  }
  let titled = fitTitle(readable, sized.width, laidOut, toolbar);
  if (k < 1 || sized.width < laidOut) titled = fitLowerTitles(titled, figure.layout, sized.width);  // shrunk, narrower
  let [layout, under] = colorbarBelow(legendBelow(titled, sized.width), traces, sized.width);
  layout = fitBottom(layout, under, sized.width, laidOut);
  if (fullscreen) {
    layout.height = window.innerHeight / k;  // the screen's, whatever the title takes
    layout = clockRanges(layout, traces, sized.width, laidOut);  // a phone's full screen: 457 px at 320, 18.3 px type
  }
  else {
    const smallest = Math.max(cellType || 0, SMALLEST_PX) / k;  // thinTicks': the cells' type, as shown
    layout = roundPanels(clockRanges(narrowPanels(layout, sized.width, laidOut, smallest), traces, sized.width,
                                            laidOut), sized.width);
  }
  return [layout, under, traces];
}

function sizing(gd) {
  // What draw() draws gd at now: in full screen or not, the room it has, its CSS scale k, on a touch screen or not, the
  // px its title keeps for the toolbar (toolbarRoom), the size drawn at (gd.__lab.left's key) and the left margin
  // plotly.js took there before. --lab-scale: k, for what is sized for the screen inside the chart (ui/style.py: a
  // touch screen's toolbar buttons, 25 px to tap as shown), set before the toolbar is measured (a review: a chart drawn
  // again at 390 px after 320 read its toolbar at 320's scale, 157 px for 134, and wrapped its title early)
  const fullscreen = fullScreen(gd), room = roomWidth(gd), k = shrinkFactor(gd, room), touch = touchScreen();
  gd.style.setProperty("--lab-scale", String(k));
  const toolbar = toolbarRoom(gd, k, fullscreen, touch);
  const at = `${sizeKey(gd)} ${k}`;
  const left = (gd.__lab.left || {}).at === at ? gd.__lab.left.px : 0;
  return {fullscreen, room, k, touch, toolbar, at, left};
}

function reckonTop(gd) {
  // gd's own top margin as draw() will draw it now, before it is drawn: its twins are then drawn level with it
  const {room, k, fullscreen, toolbar, left} = sizing(gd);
  gd.__lab.ownTop = (fitted(gd, room, k, fullscreen, toolbar, left)[0].margin || {}).t || 0;
}

function draw(gd, again = false) {
  // The figure's own size, its width the container's unless it sets one; the whole screen in full screen.
  // Where that is narrower than the figure's design width (spec.design, design_width in Python: 1280 px
  // for slides), it is drawn at that width and shown shrunk to fit, as its export looks, rather than
  // with its title cut and its labels crowded.
  const {config, row, cellType} = gd.__lab.spec;
  const box = gd.parentElement;
  waiting.delete(gd);  // drawn now (also as a twin of the chart drawn, or in full screen): it waits no more
  delete box.dataset.waiting;
  gd.__lab.size = sizeKey(gd);
  const {fullscreen, room, k, touch, toolbar, at, left} = sizing(gd);
  gd.__lab.scale = k;
  let [layout, under, traces] = fitted(gd, room, k, fullscreen, toolbar, left);
  gd.__lab.ownTop = (layout.margin || {}).t || 0;
  gd.__lab.top = row && !fullscreen ? rowTop(row) : 0;
  if (gd.__lab.top > gd.__lab.ownTop) {  // the plot keeps its height: it starts and ends level with its twin's
    layout.margin = Object.assign({}, layout.margin, {t: gd.__lab.top});
    layout.height += gd.__lab.top - gd.__lab.ownTop;
  }
  box.style.background = fullscreen ? (layout.paper_bgcolor || "white") : "";  // not the browser's black
  // the toolbar's focus ring (ui/style.py: currentColor) in the figure's text colour, which reads on the figure
  // whatever the page's (a dark figure on a light page, and back); plotly.js's own ring was 1 px black
  gd.style.color = (layout.font || {}).color || "";
  shrink(gd, k, layout.height, fullscreen);
  let data = readableCells(under, layout, k, cellType);
  if (printing) [layout, data] = printDark(layout, data);  // a dark figure on paper: the default theme's colours
  // its colour bars moved under the plot or back beside it (colorbarBelow: a new width across NARROW_WIDTH, full
  // screen): drawn afresh. plotly.js 4.1.1's react, a bar turned from upright to flat in the same call as a new size,
  // threw "Something went wrong with axis scaling" (a 1500 px window narrowed to 900: view 3's charts, 480 px wide,
  // left blank or half drawn)
  const barsBelow = under !== traces;
  if (gd._fullLayout && gd.__lab.barsBelow !== undefined && gd.__lab.barsBelow !== barsBelow) window.Plotly.purge(gd);
  gd.__lab.barsBelow = barsBelow;
  // a failure that comes later (the promise rejected, not thrown: paint catches that) is said in the chart's place too
  return window.Plotly.react(gd, data, layout, toolbarConfig(config, touch)).then(() => {
    say(gd, "");
    const drawn = toolbar ? (gd.querySelector(".modebar") || {}).offsetWidth || 0 : 0;  // layout px: no CSS scale
    toolbarSeen.set(scaleKey(k), Math.max(toolbarSeen.get(scaleKey(k)) || 0, drawn));
    // plotly.js's automargin moves the plot right of the left margin where the y labels need more (readableType raised
    // them: view 7's step charts on a 320 px phone, 22 px), and the title and notes start at the plot, wrapped for the
    // margin: "head 0" ran 7 px past the chart's right edge. The margin it took is kept for this size and figure
    // (gd.__lab.left), and the chart drawn again where its titles wrap otherwise with it
    const drawnLeft = (layout.margin || {}).l || 0;
    const pushed = Math.round(((gd._fullLayout || {})._size || {}).l - drawnLeft);
    const more = drawnLeft + pushed - (((gd.__lab.spec.figure.layout || {}).margin || {}).l || 0);  // than laid out
    if (pushed > 0) gd.__lab.left = {at, px: more};
    const rewrapped = pushed > 1 && titleTexts(fitted(gd, room, k, fullscreen, toolbar, more)[0])
      !== titleTexts(layout);
    // wrapped for a bar too short, or too long (a title a line longer than its next draw's): drawn again, once
    const bar = toolbar && drawn && Math.abs(drawn + 8 - toolbar) > 1;
    if (!again && (bar || rewrapped)) drawRow(gd, true);
    else describe(gd);
  }).catch((err) => say(gd, couldNot(err)));
}

const couldNot = (err) => "This chart could not be drawn: " + ((err && err.message) || String(err));

const titleTexts = (layout) => [(layout.title || {}).text].concat((layout.annotations || []).map((a) => a.text))
  .join("\n");  // what draw() wraps again: the title, notes and subplot titles

function plainText(markup) {
  // A figure's title or note as a screen reader should say it: its <br> a space, its tags gone, its entities
  // read (an inert document: DOMParser runs no script and loads nothing, whatever the user's words hold); a
  // subscript read as one ("XW<sub>Q</sub>": "XW sub Q", not "XWQ").
  const html = String(markup || "").replace(/<br\s*\/?>/gi, " ").replace(/<sub>/gi, " sub ");
  return (new DOMParser().parseFromString(html, "text/html").body.textContent || "").replace(/\s+/g, " ").trim();
}

let captions = 0;  // ids for the captions a chart is described by

function describe(gd) {
  // For a screen reader: the chart is one figure, named by its figure's title and notes (what the plot
  // says in words) and described by the caption below it. plotly.js's SVGs are hidden from it: their tick
  // labels were read as an image's name ("−10 −5 0 5 10 … 0:你 1:喜") and the title twice. The toolbar,
  // outside them, stays reachable.
  const {figure, title} = gd.__lab.spec;
  const notes = ((figure.layout || {}).annotations || []).filter((a) => a.name === "notes").map((a) => a.text);
  const said = [((figure.layout || {}).title || {}).text].concat(notes).map(plainText).filter(Boolean).join(". ");
  const box = gd.parentElement;
  box.setAttribute("role", "figure");
  box.setAttribute("aria-label", said || title || "chart");
  if (!gd.__lab.caption.id) gd.__lab.caption.id = `lab-caption-${++captions}`;
  if (gd.__lab.caption.hidden) box.removeAttribute("aria-describedby");
  else box.setAttribute("aria-describedby", gd.__lab.caption.id);
  gd.querySelectorAll("svg.main-svg").forEach((svg) => svg.setAttribute("aria-hidden", "true"));
  // and the SVG plotly.js measures text in, off the screen at the page's end: read as an image with no name
  const tester = document.getElementById("js-plotly-tester");
  if (tester) tester.setAttribute("aria-hidden", "true");
  // box zoom and pan work by dragging the mouse: no Tab stop (zoom in/out, reset, download and full screen keep one),
  // and not in a screen reader's list of the toolbar's buttons, which is what its arrow keys go through (rove)
  gd.querySelectorAll('.modebar-btn[data-attr="dragmode"]').forEach((b) => {
    b.setAttribute("tabindex", "-1");
    b.setAttribute("aria-hidden", "true");
  });
  nameFullscreenButton(gd);  // what pressing it does now
  rove(gd);
  return gd;
}

// A chart's toolbar is one Tab stop (WAI-ARIA's toolbar pattern): each of its six buttons was one, 36 stops on view 3
// and 48 on view 6 between a keyboard and the next control (a keyboard walk). Tab reaches the button used last (the
// first at first), ← → Home End move between the buttons (the head's keys do not flip heads there), Tab leaves.
// A button focused by a mouse click lets ← → flip heads, as before; in full screen, where the chart's buttons are all
// there is, Tab goes round every one of them and ← → flip heads (a projector: README).
const TOOLBAR_NAME = "Chart tools";
const isTool = (el) => el.classList.contains("modebar-btn") && el.dataset.attr !== "dragmode";
const tools = (gd) => [...gd.querySelectorAll(".modebar-btn")].filter(isTool);

function rove(gd, at = gd.__lab.tool || 0) {
  // the toolbar's one Tab stop: its button `at` (kept by index: full screen renames its button)
  const bar = gd.querySelector(".modebar"), buttons = tools(gd);
  if (!bar || !buttons.length) return;
  bar.setAttribute("aria-label", TOOLBAR_NAME);
  gd.__lab.tool = Math.min(Math.max(0, at), buttons.length - 1);
  buttons.forEach((b, i) => b.setAttribute("tabindex", i === gd.__lab.tool ? "0" : "-1"));
}

function toolbarKeys(gd) {
  gd.addEventListener("focusin", (event) => {  // a button focused (Tab, the arrows, a click) is the stop from now on
    const at = tools(gd).indexOf(event.target);
    if (at < 0) return;
    // focused by a click, or from the keyboard (Chromium's :focus-visible, as the focus comes: at a key's press it
    // turns on whatever focused the button)
    gd.__lab.keyed = event.target.matches(":focus-visible");
    if (at !== gd.__lab.tool) rove(gd, at);
  });
  gd.addEventListener("keydown", (event) => {
    const buttons = tools(gd), at = buttons.indexOf(event.target);
    if (at < 0 || fullScreen(gd) || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    if (!gd.__lab.keyed) return;  // clicked with the mouse: ← → flip heads, as before
    const to = {ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: buttons.length - 1}[event.key];
    if (to === undefined) return;
    event.preventDefault();
    event.stopPropagation();  // not on to the page's ← → (Streamlit's shortcuts listen on the document)
    buttons[(to + buttons.length) % buttons.length].focus();
  });
}

function drawRow(gd, again = false) {
  // Draw gd, then its twins again where the row's top margin changed: a twin drawn before this figure
  // came, or at another width (a title wrapped again there takes another number of lines). While a chart is in full
  // screen the page's are hidden behind it: levelled as it comes back (its box hears fullscreenchange: follow), not
  // drawn twice unseen (a review: a chart of a pair going full screen drew its twin at the twin's own top, and again
  // level with it on leaving)
  const row = gd.__lab.spec.row;
  // twins that a new width will draw again (each at its ResizeObserver's turn): their top margins there reckoned
  // first, so that gd is drawn level with them at once (a review: a pair's first chart levelled with its twin's top at
  // the old width, and the twin was drawn twice, as a stale twin and again to level the first)
  if (row && !document.fullscreenElement) {
    twins(row).filter((g) => g !== gd && g._fullLayout && sizeKey(g) !== g.__lab.size).forEach(reckonTop);
  }
  draw(gd, again);
  for (let pass = 0; row && !document.fullscreenElement && pass < 3; pass++) {
    const stale = twins(row).filter((g) => g._fullLayout && g.__lab.top !== rowTop(row));
    if (!stale.length) break;
    stale.forEach((g) => draw(g));
  }
}

// Charts off the screen wait. A new sentence redraws every chart of a view, ~50-100 ms each at 32 tokens
// on two cores (six in the attention view, of which a laptop's screen shows one or two): the charts on
// the screen (or within AHEAD_PX of it) are drawn at once, the others one per idle moment of the page
// (requestIdleCallback), the nearest to the screen first, so that a key or a click never waits behind them,
// or at once when scrolled near. While a chart waits for its new figure its box carries data-waiting and,
// after half a second, looks stale as Streamlit's elements do (CSS); tests and screenshots wait until
// none does. A new size (the window, the sidebar) redraws every chart at once: one drawn at the old width
// would stick out of the narrower page.
const AHEAD_PX = 200;
const IDLE_WAIT_MS = 1000;  // an off-screen chart is drawn within this even if the page is never idle
const waiting = new Set();
const sights = new Map();  // scroll container -> its IntersectionObserver
let idleId = 0;

function scroller(box) {
  // What the page scrolls in: Streamlit's main area (not the window), or the window elsewhere.
  return box.closest('[data-testid="stMain"]');
}

function hidden(gd) {
  // Another chart is in full screen: this one is behind it.
  return Boolean(document.fullscreenElement) && !fullScreen(gd);
}

function distance(gd) {
  // px between the chart's box and the visible part of its scroll container (0: on the screen).
  const root = scroller(gd.parentElement);
  const view = root ? root.getBoundingClientRect() : {top: 0, bottom: window.innerHeight};
  const r = gd.parentElement.getBoundingClientRect();
  return Math.max(0, view.top - r.bottom, r.top - view.bottom);
}

function sightline(box) {
  // One IntersectionObserver per scroll container (its root: a rootMargin widens only the root, so with the
  // window as root the main area's own clip would leave no margin). It keeps gd.__lab.inView and draws a
  // waiting chart that comes near the screen. It reports each box once when first observed, asynchronously.
  const root = scroller(box);
  if (!sights.has(root)) {
    sights.set(root, new IntersectionObserver((entries) => {
      for (const entry of entries) {
        const gd = entry.target.querySelector("div.lab-chart");
        if (!gd || !gd.__lab) continue;
        gd.__lab.inView = entry.isIntersecting;
        if (entry.isIntersecting && waiting.has(gd) && !hidden(gd)) paint(gd);
      }
      nextIdle();
    }, {root, rootMargin: `${AHEAD_PX}px 0px`}));
  }
  return sights.get(root);
}

document.addEventListener("fullscreenchange", () => {  // back from full screen: what it hid is on the screen again
  if (document.fullscreenElement) return;
  for (const gd of [...waiting]) if (gd.isConnected && distance(gd) <= AHEAD_PX) paint(gd);
});

document.addEventListener("keydown", (event) => {
  // In full screen only the chart is on the screen: Tab and Shift+Tab go round its own controls (the toolbar),
  // not on to the page hidden behind it.
  const box = document.fullscreenElement;
  if (event.key !== "Tab" || !box || !box.classList.contains("lab-chart-box")) return;
  const stops = [...box.querySelectorAll("a, button, input, [tabindex]")].filter((el) => el.tabIndex >= 0 || isTool(el));
  event.preventDefault();
  if (!stops.length) return;
  const at = stops.indexOf(document.activeElement);
  const next = event.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : (at + 1) % stops.length;
  stops[next].focus();
});

function later(fn) {
  return window.requestIdleCallback ? window.requestIdleCallback(fn, {timeout: IDLE_WAIT_MS}) : setTimeout(fn, 50);
}

function nextIdle() {
  // One waiting chart per idle moment, the nearest to the screen first, until none waits.
  if (idleId || !waiting.size) return;
  idleId = later(() => {
    idleId = 0;
    for (const g of waiting) if (!g.isConnected) waiting.delete(g);
    if (waiting.size) {
      const gaps = [...waiting].map((g) => [distance(g), g]);
      paint(gaps.reduce((a, b) => (b[0] < a[0] ? b : a))[1]);
    }
    nextIdle();
  });
}

function schedule(gd) {
  // Draw gd now if it is on the screen (or in full screen); else when it comes near or the page is idle.
  waiting.add(gd);
  gd.parentElement.dataset.waiting = "";
  if (gd.__lab.inView === undefined) gd.__lab.inView = distance(gd) <= AHEAD_PX;  // new: the observer not yet heard
  if (fullScreen(gd) || (gd.__lab.inView && !hidden(gd))) paint(gd);
  else nextIdle();
}

function paint(gd, level = true) {
  // Draw gd (and, where level, its row: drawRow), or say why it cannot be drawn; the first time, follow its size from
  // then on
  try {
    if (level) drawRow(gd);
    else draw(gd);
    say(gd, "");
  } catch (err) {
    say(gd, couldNot(err));
  }
  gd.parentElement.style.minHeight = "";  // the placeholder height of a chart not yet drawn
  if (!gd.__lab.observer) follow(gd);
}

function follow(gd) {
  // After its first draw a chart follows the page's width (its column), and the screen's size in full screen (its
  // box): drawn again where that changes what it is drawn at (sizeKey), and as it goes full screen and comes back in
  // its row, where it is levelled again
  const box = gd.parentElement, parent = box.parentElement;
  gd.__lab.observer = new ResizeObserver(() => {
    equalize(gd.__lab.spec.row);
    if (parent.clientWidth && sizeKey(gd) !== gd.__lab.size) drawRow(gd);
  });
  gd.__lab.observer.observe(parent);
  gd.__lab.observer.observe(box);
  box.addEventListener("fullscreenchange", () => drawRow(gd));
}

// Printed (Ctrl+P, the app menu's Print, Save as PDF), a chart is drawn again at the paper's width: the browser lays
// the page out anew for the paper, narrower than the screen, but fires no resize, and no ResizeObserver runs while it
// prints, so each chart kept the screen's width and was cut at the paper's right edge (a print walk: view 3's colour
// bars, a slide chart's right third). Chromium lays the page out for the paper, then says so to matchMedia("print")
// listeners, whose drawing is printed; beforeprint comes first, on the screen's layout (where the page was emulated
// as print, the only one). Charts still waiting to be drawn (off the screen) are drawn too: they printed blank. A dark
// figure (the dark theme) is drawn in the default theme's colours (PRINT_COLOURS, PRINT_TEMPLATE): light paper, as a
// printed page is expected to be; light text on it was unreadable, its black background a sheet of ink. Back from
// printing, every chart is drawn again for the screen.
let printing = false;

function printColour(value) {
  // a dark theme's colour ("#edebe8", "rgba(237,235,232,0.1)") as the default theme has it; any other as it is
  const hex = PRINT_COLOURS[value.toLowerCase()];
  if (hex) return hex;
  const m = /^rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*(,\s*[\d.]+\s*)?\)$/.exec(value);
  if (!m) return value;
  const key = "#" + [m[1], m[2], m[3]].map((c) => Number(c).toString(16).padStart(2, "0")).join("");
  const to = PRINT_COLOURS[key];
  if (!to) return value;
  const rgb = [1, 3, 5].map((i) => parseInt(to.slice(i, i + 2), 16)).join(",");
  return m[4] ? `rgba(${rgb}${m[4].replace(/\s/g, "")})` : `rgb(${rgb})`;
}

function forPaper(obj) {
  // obj (a copy where changed) with the dark theme's colours in it as the default theme's; colour scales, which
  // show numbers and are the same in every theme, and arrays of numbers are left as they are
  if (typeof obj === "string") return printColour(obj);
  if (!obj || typeof obj !== "object") return obj;
  if (Array.isArray(obj)) {
    if (!obj.some((o) => o && (typeof o === "object" || typeof o === "string"))) return obj;
    const out = obj.map(forPaper);
    return out.some((o, i) => o !== obj[i]) ? out : obj;
  }
  let out = obj;
  for (const [key, value] of Object.entries(obj)) {
    if (key === "template" || key === "meta" || /colorscale$/i.test(key)  // the user's words and the numbers too
        || /^(text|ticktext|hovertext|hovertemplate|texttemplate|name|customdata|x|y|z)$/.test(key)) continue;
    const paper = forPaper(value);
    if (paper === value) continue;
    if (out === obj) out = Object.assign({}, obj);
    out[key] = paper;
  }
  return out;
}

function printDark(layout, data) {
  // [layout, data] of a dark figure in the default theme's colours, for paper
  const dark = (layout.paper_bgcolor || "").toLowerCase() === PRINT_COLOURS.__dark_paper__;
  if (!dark) return [layout, data];
  return [Object.assign(forPaper(layout), {template: PRINT_TEMPLATE}), forPaper(data)];
}

function redrawForPrint(now) {
  // every chart of the page drawn again, at its box's width as laid out now (printing: for paper)
  // back on the screen, said twice (afterprint, then the media query, or the other way round): drawn once; printing,
  // drawn at each (beforeprint comes on the screen's layout, the media query on the paper's)
  if (!window.Plotly || (!now && !printing)) return;
  printing = now;
  const charts = [...document.querySelectorAll("div.lab-chart")].filter((gd) => gd.__lab && gd.__lab.spec);
  // every chart's own top margin at its new width first, so that each is drawn once, level with its twins (rowTop):
  // drawn in turn, each levelling its row (drawRow), a pair's second chart was drawn twice, by its twin and by itself
  charts.forEach(reckonTop);
  for (const gd of charts) paint(gd, false);  // waiting ones too
  for (const row of new Set(charts.map((gd) => gd.__lab.spec.row))) if (row) equalize(row);
}

if (window.matchMedia && !window.__attentionLabPrint) {  // once per page, however often this script is run
  window.__attentionLabPrint = true;
  window.matchMedia("print").addEventListener("change", (event) => redrawForPrint(event.matches));
  window.addEventListener("beforeprint", () => redrawForPrint(true));
  window.addEventListener("afterprint", () => redrawForPrint(false));
}

function placeholder(gd) {
  // The height a chart not yet drawn will take: its layout as draw() fits it (fitted: titles and panel titles wrapped
  // again, a legend or colour bars put under the plot, the bottom margin and round panels cut to what they need), its
  // top level with its twins' (rowTop), shrunk as draw() shrinks it: what is on the screen is known before it draws,
  // and the page does not jump when it does (a phone walk: 15-32 px a chart, views 2-7, its title wrapped again).
  const {row} = gd.__lab.spec;
  const room = roomWidth(gd), k = shrinkFactor(gd, room);
  const [layout] = fitted(gd, room, k, false, toolbarRoom(gd, k, false, touchScreen()));
  const top = row ? rowTop(row) - ((layout.margin || {}).t || 0) : 0;
  return Math.ceil((layout.height + Math.max(0, top)) * k);
}

function mount(parentElement) {
  // title (h3), box (what full screen shows) > gd (plotly's div) + a line for errors, caption;
  // a cleanup for the unmount
  const title = document.createElement("h3");
  title.className = "lab-chart-title";
  const box = document.createElement("div");
  box.className = "lab-chart-box";
  const gd = document.createElement("div");
  gd.className = "lab-chart";
  const message = document.createElement("div");
  message.className = "lab-chart-message";
  message.setAttribute("role", "status");  // why it could not be drawn, said to a screen reader as it comes (say)
  const caption = document.createElement("div");
  caption.className = "lab-chart-caption";
  box.append(gd, message);
  parentElement.append(title, box, caption);
  // gd.__lab, the chart's own state: text (the figure's JSON as it came) and spec (parsed: figure, config, title,
  // caption, row, design, wrapped, cellType; ui/chart.py chart), size (sizeKey as drawn last), observer (its
  // ResizeObserver from the first draw on: follow), inView (near the screen: sightline), message, title and caption
  // (its elements), tool (which of its toolbar's buttons is its Tab stop: rove) and keyed (whether the keyboard
  // focused the button that has the focus: toolbarKeys); set by draw: scale (the CSS scale
  // k), ownTop and top (its own top margin and its row's: rowTop), barsBelow (its colour bars under the plot:
  // colorbarBelow), left (the left margin plotly.js took beyond the layout's, at a size, for this figure: fitted);
  // cleanup, for the unmount
  gd.__lab = {text: null, spec: null, size: null, observer: null, inView: undefined, left: null, message, title,
              caption, tool: 0};
  sightline(box).observe(box);
  toolbarKeys(gd);
  gd.__lab.cleanup = () => {  // the element left the page (another view): free plotly's state
    if (gd.__lab.observer) gd.__lab.observer.disconnect();
    waiting.delete(gd);
    sightline(box).unobserve(box);
    if (window.Plotly) window.Plotly.purge(gd);
    title.remove();
    box.remove();
    caption.remove();
  };
  return gd;
}

function label(element, text) {
  // Plain text, never HTML (titles can hold the user's words); an empty one takes no space.
  element.textContent = text || "";
  element.hidden = !text;
}

function equalize(row) {
  // Charts side by side (one row) give their titles the tallest one's height, so that a title that
  // wraps to two lines does not push its chart below its twin's. Runs on every title change and resize.
  if (!row) return;
  const titles = twins(row).map((g) => g.__lab.title);
  titles.forEach((t) => { t.style.minHeight = ""; });
  const boxes = titles.filter((t) => !t.hidden).map((t) => t.getBoundingClientRect());
  const tops = boxes.map((b) => b.top);
  const level = boxes.length > 1 && Math.max(...tops) - Math.min(...tops) < 2;  // not stacked (narrow screen)
  const tallest = Math.max(0, ...boxes.map((b) => b.height));
  titles.forEach((t) => { t.style.minHeight = level ? `${tallest}px` : ""; });
}

function say(gd, text) {
  gd.__lab.message.textContent = text;
}

function stackBelow(parentElement, spec) {
  // Twin charts (a row, in st.columns, which wrap) stack, each the full width, where either column would be
  // narrower than STACK_REM rem or than STACK_FRACTION of the figure's design width: a slide chart (1280 px) side
  // by side would be shown with its large type shrunk below the default theme's; at half of a laptop's width a
  // heatmap squeezes its cells.
  const column = spec.row ? parentElement.closest('[data-testid="stColumn"]') : null;
  if (column) column.style.minWidth = `min(100%, max(${STACK_REM}rem, ${(spec.design || 0) * STACK_FRACTION}px))`;
}

export default function ({parentElement, data}) {
  const gd = parentElement.querySelector("div.lab-chart") || mount(parentElement);
  const text = decode(data);
  if (text === gd.__lab.text) return gd.__lab.cleanup;  // the same figure: nothing to draw
  gd.__lab.text = text;
  gd.__lab.left = null;  // the left margin plotly.js took for the figure before
  gd.__lab.spec = JSON.parse(text);
  tokenHover(gd.__lab.spec.figure);
  label(gd.__lab.title, gd.__lab.spec.title);
  label(gd.__lab.caption, gd.__lab.spec.caption);
  gd.__lab.title.dataset.row = gd.__lab.spec.row || "";
  stackBelow(parentElement, gd.__lab.spec);
  equalize(gd.__lab.spec.row);
  gd.parentElement.dataset.waiting = "";  // until drawn with this figure (plotly.js may still be loading)
  if (!gd._fullLayout) gd.parentElement.style.minHeight = `${placeholder(gd)}px`;  // not drawn yet: hold its place
  loadPlotly().then(() => {
    if (gd.__lab.text !== text) return;  // a newer figure came while plotly.js loaded
    schedule(gd);
  }, (err) => {
    delete gd.parentElement.dataset.waiting;  // it will not be drawn: it waits no more
    say(gd, "This chart could not be drawn: plotly.js did not load from " + err.message +
      ". The app serves it from its static folder: server.enableStaticServing must stay on " +
      "(.streamlit/config.toml next to app.py).");
  });
  return gd.__lab.cleanup;
}
