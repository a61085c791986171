// A model's (or a person's) text as Markdown, safely: marked turns it into
// HTML, highlight.js colours its code blocks, and DOMPurify sanitises the
// result before it becomes DOM. Raw HTML the text holds is never markup: the
// renderer writes it back out as escaped text, so `<img onerror>` or
// `<script>` in an answer shows as those characters; DOMPurify is the second
// wall (a `javascript:` link or an attribute that Markdown builds).
// Markdown images are shown as links, not loaded: the page's policy allows
// no outside image, and a model's answer should not make the browser fetch.

import hljs from './vendor/highlight.js';
import { Marked } from './vendor/marked.js';
import DOMPurify from './vendor/purify.js';

/** @param {string} text */
function escape(text) {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const parser = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html({ text, block }) {
      const shown = escape(text);
      return block ? `<p class="raw-html">${shown}</p>\n` : shown;
    },
    code({ text, lang }) {
      const language = (lang ?? '').match(/^[\w+#.-]+/)?.[0] ?? '';
      const known = language && hljs.getLanguage(language) ? language : '';
      const body = known ? hljs.highlight(text, { language: known, ignoreIllegals: true }).value : escape(text);
      const label = language ? `<span class="code-lang">${escape(language)}</span>` : '';
      return `<pre class="code">${label}<code class="hljs${known ? ` language-${known}` : ''}">${body}</code></pre>\n`;
    },
    image({ href, title, text }) {
      const words = text || href;
      return `<a href="${escape(href)}" class="md-image"${title ? ` title="${escape(title)}"` : ''}>image: ${escape(words)}</a>`;
    },
    // A task list's box is a character: a disabled checkbox without a label
    // is a control no one can use or name.
    checkbox({ checked }) {
      return checked ? '☑ ' : '☐ ';
    },
  },
});

/** What survives sanitising: plain HTML (no SVG or MathML), no style (the policy forbids it), no forms. */
const PURIFY = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'img', 'video', 'audio', 'iframe'],
  FORBID_ATTR: ['style', 'id', 'name', 'tabindex'],
  RETURN_DOM_FRAGMENT: /** @type {true} */ (true),
};

/**
 * The text as a Markdown block (a div.md).
 * @param {string} text
 * @returns {HTMLElement}
 */
export function markdown(text) {
  const root = document.createElement('div');
  root.className = 'md';
  const html = /** @type {string} */ (parser.parse(text, { async: false }));
  const fragment = DOMPurify.sanitize(html, PURIFY);
  // The line breaks between blocks are not text of the message.
  for (const node of [...fragment.childNodes]) {
    if (node.nodeType === Node.TEXT_NODE && !node.textContent?.trim()) node.remove();
  }
  for (const link of fragment.querySelectorAll('a')) {
    if (link.hasAttribute('href')) {
      // Away from the viewer, and the page it opens cannot reach back.
      link.target = '_blank';
      link.rel = 'noopener noreferrer';
    }
  }
  // A wide table scrolls inside its own box (reachable by keyboard), not the page.
  for (const table of fragment.querySelectorAll('table')) {
    const box = document.createElement('div');
    box.className = 'table-box';
    box.tabIndex = 0;
    box.setAttribute('role', 'region');
    box.setAttribute('aria-label', 'table');
    table.replaceWith(box);
    box.append(table);
  }
  root.append(fragment);
  return root;
}
