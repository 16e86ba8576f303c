(() => {
  if (window.__prefillDecodeSketch) { window.__prefillDecodeSketch(); return; }
  const NS = 'http://www.w3.org/2000/svg';
  const thumb = (key) => {
    const el = document.querySelector('.st-key-' + key + ' [data-testid=stSliderThumbValue]');
    const n = el ? parseInt(el.innerText, 10) : NaN;
    return Number.isFinite(n) ? n : null;
  };
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const fill = (words, p, o) => words.replace('{p}', p).replace('{o}', o);
  function draw(box, d, p, o) {
    const rows = p + o - 1, cols = o, cell = Math.max(4, Math.min(22, 640 / cols, 420 / rows));
    const left = 90, top = 54, height = top + rows * cell + 40;
    const width = Math.max(left + cols * (cell + 4) + 40, 640);  // room for the title line
    const svg = el('svg', {viewBox: `0 0 ${width} ${height}`, width, height, role: 'img',
                           'font-family': d.font, 'aria-label': fill(d.alt, p, o)});
    svg.style.maxWidth = '100%';
    svg.style.height = 'auto';
    svg.append(el('text', {x: 10, y: 22, 'font-size': 15, 'font-weight': 'bold', fill: d.ink}, fill(d.subtitle, p, o)));
    for (let c = 0; c < cols; c++) {
      const x = left + c * (cell + 4);
      svg.append(el('text', {x: x + cell / 2, y: top - 8, 'font-size': 12, 'text-anchor': 'middle',
                             fill: c ? d.decode : d.prefill}, c ? 'D' + c : 'P'));
      const first = c ? p + c - 1 : 0;
      for (let r = 0; r <= (c ? first : p - 1); r++) {
        const colour = r < first ? d.cached : (c ? d.decode : d.prefill);
        svg.append(el('rect', {x, y: top + r * cell, width: cell, height: Math.max(cell - 1, 2), rx: 2, fill: colour}));
      }
    }
    svg.append(el('text', {x: 10, y: top + 14, 'font-size': 12, fill: d.muted}, d.positions));
    box.replaceChildren(svg);
  }
  function update() {
    const data = document.querySelector('.pd-sketch-data');
    const figure = document.querySelector('.st-key-sketch_figure [data-testid=stImage], .st-key-sketch_figure img');
    if (!data || !figure) return;
    const d = JSON.parse(data.dataset.sketch);
    const p = thumb('demo_prompt_len'), o = thumb('demo_output_len');
    let box = document.querySelector('.pd-sketch-live');
    if (!box) {
      box = document.createElement('div');
      box.className = 'pd-sketch-live';
      box.hidden = true;
      figure.parentElement.insertBefore(box, figure);
    }
    const dragging = p !== null && o !== null && (p !== d.p || o !== d.o);
    if (dragging && box.dataset.drawn !== p + ',' + o) { draw(box, d, p, o); box.dataset.drawn = p + ',' + o; }
    box.hidden = !dragging;
    figure.style.display = dragging ? 'none' : '';
  }
  window.__prefillDecodeSketch = update;
  new MutationObserver(update).observe(document.body, {subtree: true, childList: true, characterData: true});
  update();
})();
