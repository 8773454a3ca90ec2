// @ts-check
// A mail's sanitised HTML in a sandboxed iframe (no allow-scripts). The app's CSP applies to
// the frame too, so nothing is written as markup that CSP would refuse: inline styles are
// applied through CSSOM, and remote images are held back (the reader can open them as links;
// the app's img-src allows no other origin).
import { h } from './dom.js';

/** @param {string} html sanitised by the server @returns {{frame: HTMLIFrameElement, remote: string[]}} */
export function mailFrame(html) {
  // Parsing a `style` attribute is already an inline style under the app's CSP (DOMParser
  // documents share it): rename the attribute in the markup first (the server's serializer
  // quotes every attribute, and `<` only opens tags), then apply the styles through CSSOM.
  const renamed = html.replace(/(<[a-z][a-z0-9]*\b[^<>]*?\s)style\s*=/gi, '$1data-sb-style=');
  const parsed = new DOMParser().parseFromString(renamed, 'text/html');
  /** @type {string[]} */
  const remote = [];
  for (const img of parsed.body.querySelectorAll('img')) {
    const src = img.getAttribute('src') || '';
    if (!src.startsWith('data:')) {
      if (src) remote.push(src);
      img.removeAttribute('src');
      img.removeAttribute('srcset');
      img.replaceWith(parsed.createTextNode(`[image${img.alt ? `: ${img.alt}` : ''}]`));
    }
  }
  for (const a of parsed.body.querySelectorAll('a[href]')) {
    a.setAttribute('target', '_blank');
    a.setAttribute('rel', 'noopener noreferrer');
  }
  const frame = h('iframe', {
    class: 'mailbody',
    title: 'Message body',
    sandbox: 'allow-same-origin allow-popups allow-popups-to-escape-sandbox',
    srcdoc: '<!doctype html><html><head><meta charset="utf-8"></head><body></body></html>',
  });
  frame.addEventListener(
    'load',
    () => {
      const doc = frame.contentDocument;
      if (!doc) return;
      doc.body.replaceChildren(...[...parsed.body.childNodes].map((n) => doc.importNode(n, true)));
      doc.body.style.cssText =
        'font-family: system-ui, sans-serif; margin: 8px; color: #111; background: #fff; overflow-wrap: anywhere;';
      for (const el of doc.querySelectorAll('[data-sb-style]')) {
        /** @type {HTMLElement} */ (el).style.cssText = el.getAttribute('data-sb-style') || '';
        el.removeAttribute('data-sb-style');
      }
      frame.style.height = `${Math.min(4000, doc.documentElement.scrollHeight + 24)}px`;
    },
    { once: true },
  );
  return { frame, remote };
}
