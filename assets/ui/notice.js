// @ts-check
// Messages for the user: a polite status line and error boxes with words, never a blank screen.
import { h } from './dom.js';
import { describe } from '../api.js';

/** An inline error box for `e` (role=alert so screen readers announce it). @param {unknown} e */
export function errorBox(e) {
  return h('p', { class: 'error', role: 'alert' }, describe(e));
}

let timer = 0;
/** Shows `text` briefly in the page's status region. @param {string} text @param {boolean} [isError] */
export function toast(text, isError = false) {
  const region = document.getElementById('toast');
  if (!region) return;
  region.textContent = text;
  region.className = isError ? 'toast error' : 'toast';
  region.hidden = false;
  clearTimeout(timer);
  timer = window.setTimeout(() => (region.hidden = true), 4000);
}

/**
 * Runs `fn` for a form or button: disables `el` meanwhile and shows the error in words in `out`.
 * @param {HTMLElement} el @param {HTMLElement | null} out @param {() => Promise<void>} fn
 */
export async function busy(el, out, fn) {
  const controls = el instanceof HTMLFormElement ? [...el.elements] : [el];
  for (const c of controls) /** @type {any} */ (c).disabled = true;
  if (out) out.replaceChildren();
  try {
    await fn();
  } catch (e) {
    if (out) out.replaceChildren(errorBox(e));
    else toast(describe(e), true);
  } finally {
    for (const c of controls) /** @type {any} */ (c).disabled = false;
  }
}
