// @ts-check
// Sign-in by e-mail code (POST /api/auth/code, then /api/auth/verify as the web client, so the
// refresh token arrives as an HttpOnly cookie and never in page scripts).
import * as api from '../api.js';
import { enter } from '../router.js';
import { h, field } from '../ui/dom.js';
import { busy } from '../ui/notice.js';

/** @param {HTMLElement} main */
export function render(main) {
  const out = h('div', { class: 'out' });
  const email = field('E-mail address', { type: 'email', name: 'email', required: true, autocomplete: 'email' });
  const askForm = h(
    'form',
    { class: 'card', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title' }, 'Sign in to Switchboard'),
    h('p', null, 'We send a 6-digit code to your e-mail address. A new address creates an account.'),
    email,
    h('button', { type: 'submit' }, 'Send code'),
  );
  main.append(askForm, out);
  askForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const address = /** @type {HTMLInputElement} */ (email.querySelector('input')).value.trim();
    busy(askForm, out, async () => {
      await api.post('/api/auth/code', { email: address }, { auth: false });
      askForm.hidden = true;
      showCodeForm(main, out, address);
    });
  });
  /** @type {HTMLInputElement} */ (email.querySelector('input')).focus();
}

/** @param {HTMLElement} main @param {HTMLElement} out @param {string} address */
function showCodeForm(main, out, address) {
  const code = field('6-digit code', {
    name: 'code',
    inputmode: 'numeric',
    pattern: '[0-9]{6}',
    maxlength: 6,
    required: true,
    autocomplete: 'one-time-code',
  });
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'code-title' },
    h('h1', { id: 'code-title' }, 'Enter your code'),
    h('p', null, 'The code was sent to ', h('strong', null, address), '. It is valid for a few minutes.'),
    code,
    h('button', { type: 'submit' }, 'Sign in'),
    h('button', { type: 'button', class: 'link', onclick: () => location.assign('/signin') }, 'Use another address'),
  );
  main.insertBefore(form, out);
  const input = /** @type {HTMLInputElement} */ (code.querySelector('input'));
  input.focus();
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    busy(form, out, async () => {
      const signed = await api.post('/api/auth/verify', { email: address, code: input.value.trim() }, { auth: false });
      api.setSession(signed);
      await enter();
    });
  });
}
