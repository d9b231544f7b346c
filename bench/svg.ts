/**
 * A small SVG line-chart writer (no dependency): panels side by side sharing a logarithmic x axis
 * (offered load), each with a linear y axis from 0, series drawn solid, dashed or dotted, a legend.
 */

export interface Series {
  label: string;
  color: string;
  /** true: dashed; 'dotted': dotted. */
  dashed?: boolean | 'dotted';
  points: [number, number][];
}

export interface Panel {
  title: string;
  yLabel: string;
  series: Series[];
  /** Vertical markers (e.g. the knee), x in data units. */
  markers?: { x: number; label: string; color: string }[];
}

const W = 460;
const H = 320;
const M = { l: 58, r: 16, t: 34, b: 46 };

const dash = (s: Series): string => (s.dashed === 'dotted' ? ' stroke-dasharray="2 3"' : s.dashed ? ' stroke-dasharray="6 4"' : '');

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function panelSvg(p: Panel, xs: number[], ox: number): string {
  const [xmin, xmax] = [Math.min(...xs), Math.max(...xs)];
  const lx = (x: number): number => (xmax === xmin ? 0.5 : (Math.log(x) - Math.log(xmin)) / (Math.log(xmax) - Math.log(xmin)));
  const ymax = niceMax(Math.max(...p.series.flatMap((s) => s.points.map(([, y]) => y)).filter(Number.isFinite), 0));
  const px = (x: number): number => ox + M.l + lx(x) * (W - M.l - M.r);
  const py = (y: number): number => M.t + (1 - y / ymax) * (H - M.t - M.b);
  const out: string[] = [];
  out.push(`<text x="${ox + W / 2}" y="18" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`);
  for (let i = 0; i <= 5; i++) {
    const y = (ymax * i) / 5;
    out.push(`<line x1="${ox + M.l}" x2="${ox + W - M.r}" y1="${py(y)}" y2="${py(y)}" stroke="#ddd"/>`);
    out.push(`<text x="${ox + M.l - 6}" y="${py(y) + 4}" text-anchor="end">${+y.toFixed(1)}</text>`);
  }
  for (const x of xs) {
    out.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${M.t}" y2="${H - M.b}" stroke="#eee"/>`);
    out.push(`<text x="${px(x)}" y="${H - M.b + 16}" text-anchor="middle">${x}</text>`);
  }
  out.push(`<text x="${ox + M.l + (W - M.l - M.r) / 2}" y="${H - 8}" text-anchor="middle">offered load (concurrent flows, log scale)</text>`);
  out.push(`<text transform="translate(${ox + 14},${M.t + (H - M.t - M.b) / 2}) rotate(-90)" text-anchor="middle">${esc(p.yLabel)}</text>`);
  out.push(`<rect x="${ox + M.l}" y="${M.t}" width="${W - M.l - M.r}" height="${H - M.t - M.b}" fill="none" stroke="#999"/>`);
  for (const [i, m] of (p.markers ?? []).entries()) {
    out.push(`<line x1="${px(m.x)}" x2="${px(m.x)}" y1="${M.t}" y2="${H - M.b}" stroke="${m.color}" stroke-dasharray="2 3"/>`);
    out.push(`<text x="${px(m.x) + 3}" y="${M.t + 12 + 12 * i}" fill="${m.color}">${esc(m.label)}</text>`);
  }
  for (const s of p.series) {
    const pts = s.points.filter(([, y]) => Number.isFinite(y));
    const d = pts.map(([x, y], i) => `${i ? 'L' : 'M'}${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash(s)}/>`);
    for (const [x, y] of pts) out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${s.color}"/>`);
  }
  return out.join('\n');
}

/** Panels side by side, one legend under them (from the first panel's series). */
export function lineChartSvg(title: string, panels: Panel[], subtitle = ''): string {
  const xs = [...new Set(panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x))))].sort((a, b) => a - b);
  const legend = panels[0]?.series ?? [];
  const width = W * panels.length;
  const height = H + 40 + 20 * Math.ceil(legend.length / 2);
  const body = panels.map((p, i) => `<g transform="translate(0,36)">${panelSvg(p, xs, i * W)}</g>`).join('\n');
  const leg = legend
    .map((s, i) => {
      const x = 60 + (i % 2) * 360;
      const y = H + 56 + 20 * Math.floor(i / 2);
      return `<line x1="${x}" x2="${x + 30}" y1="${y - 4}" y2="${y - 4}" stroke="${s.color}" stroke-width="2"${dash(s)}/><text x="${x + 38}" y="${y}">${esc(s.label)}</text>`;
    })
    .join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="16" text-anchor="middle" font-size="13" font-weight="bold">${esc(title)}</text>`,
    `<text x="${width / 2}" y="32" text-anchor="middle" fill="#555">${esc(subtitle)}</text>`,
    body,
    leg,
    '</svg>',
    '',
  ].join('\n');
}
