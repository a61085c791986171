// A program's output with its terminal colours: the SGR escapes
// (ESC [ … m) become spans with classes (ansi-fg-1, ansi-bold, …, coloured
// by app.css), every other escape is dropped, and the text itself only ever
// becomes text nodes — an escape can change a colour, never add markup.

/** @typedef {{fg: string | null, bg: string | null, bold: boolean, dim: boolean, italic: boolean, underline: boolean}} Style */

// ESC [ params final (CSI), ESC ] … BEL or ESC \ (OSC, e.g. a hyperlink's
// address), or any other two-byte escape.
const ESCAPE = /\x1b(?:\[([0-9;:?]*)([\x40-\x7e])|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x40-\x5f]?)/g;

/** @returns {Style} */
const plain = () => ({ fg: null, bg: null, bold: false, dim: false, italic: false, underline: false });

/** @param {Style} style @param {string} params */
function apply(style, params) {
  const codes = params === '' ? [0] : params.split(/[;:]/).map((part) => Number(part) || 0);
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i];
    if (code === 0) Object.assign(style, plain());
    else if (code === 1) style.bold = true;
    else if (code === 2) style.dim = true;
    else if (code === 3) style.italic = true;
    else if (code === 4) style.underline = true;
    else if (code === 22) style.bold = style.dim = false;
    else if (code === 23) style.italic = false;
    else if (code === 24) style.underline = false;
    else if (code >= 30 && code <= 37) style.fg = String(code - 30);
    else if (code >= 90 && code <= 97) style.fg = String(code - 90 + 8);
    else if (code === 39) style.fg = null;
    else if (code >= 40 && code <= 47) style.bg = String(code - 40);
    else if (code >= 100 && code <= 107) style.bg = String(code - 100 + 8);
    else if (code === 49) style.bg = null;
    else if (code === 38 || code === 48) {
      // 256 colours (5;N) map to the 16 named ones when they are; true
      // colour (2;R;G;B) is skipped: the page keeps its own palette.
      const target = code === 38 ? 'fg' : 'bg';
      if (codes[i + 1] === 5) {
        const n = codes[i + 2] ?? 0;
        style[target] = n < 16 ? String(n) : null;
        i += 2;
      } else if (codes[i + 1] === 2) {
        style[target] = null;
        i += 4;
      }
    }
  }
}

/** @param {Style} style */
function classes(style) {
  const names = [];
  if (style.fg !== null) names.push(`ansi-fg-${style.fg}`);
  if (style.bg !== null) names.push(`ansi-bg-${style.bg}`);
  if (style.bold) names.push('ansi-bold');
  if (style.dim) names.push('ansi-dim');
  if (style.italic) names.push('ansi-italic');
  if (style.underline) names.push('ansi-underline');
  return names.join(' ');
}

/**
 * Whether the text holds an escape at all (most output does not).
 * @param {string} text
 */
export function hasEscapes(text) {
  return text.includes('\x1b');
}

/**
 * The text with its colours, as nodes to put in a <pre>.
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function ansiText(text) {
  const out = document.createDocumentFragment();
  const style = plain();
  let last = 0;
  const emit = (/** @type {string} */ piece) => {
    if (!piece) return;
    const names = classes(style);
    if (!names) {
      out.append(piece);
      return;
    }
    const span = document.createElement('span');
    span.className = names;
    span.textContent = piece;
    out.append(span);
  };
  for (const match of text.matchAll(ESCAPE)) {
    const at = match.index ?? 0;
    emit(text.slice(last, at));
    if (match[2] === 'm') apply(style, match[1] ?? '');
    last = at + match[0].length;
  }
  // Other control characters (a bell, a backspace) are not shown.
  emit(text.slice(last));
  for (const node of out.childNodes) {
    if (node.textContent) node.textContent = node.textContent.replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, '');
  }
  return out;
}
