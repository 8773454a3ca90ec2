// @ts-check
// Chat bridges: each platform's status and logins, and every login flow the bridge offers:
// QR codes (drawn here, replaced as the bridge rotates them, with the time left), pairing codes,
// user input (phone, code, password…), pasted cookies; log out.
import * as api from '../api.js';
import { on, platformName, state } from '../state.js';
import { h, replace, field } from '../ui/dom.js';
import { busy, errorBox, toast } from '../ui/notice.js';
import { qrImage } from '../ui/qr.js';

/** A finished login's message, kept in redrawn cards for a while. @type {Map<string, {text: string, until: number}>} */
const notices = new Map();

/** @param {HTMLElement} main */
export function render(main) {
  const list = h('div', { class: 'stack' }, h('p', { class: 'muted' }, 'Loading bridges…'));
  main.append(
    h('h1', null, 'Bridges'),
    h('p', { class: 'muted' }, 'Connect your chat apps; their conversations then appear in the inbox.'),
    list,
  );
  /** Platforms with a login in progress are not redrawn under the user's hands. */
  const busyPlatforms = new Set();
  async function load() {
    try {
      /** @type {Schemas['BridgeList']} */
      const { bridges } = await api.get('/api/bridges');
      if (!bridges.length)
        return replace(
          list,
          h(
            'p',
            null,
            'No bridge is configured on this server. Its operator adds them ' +
              'in the [bridges] section of the configuration.',
          ),
        );
      for (const b of bridges) {
        if (busyPlatforms.has(b.platform)) continue;
        const old = list.querySelector(`[data-platform="${b.platform}"]`);
        const card = bridgeCard(b, load, busyPlatforms);
        if (old) old.replaceWith(card);
        else list.append(card);
      }
      // The loading note only (a card's own muted lines stay).
      list.querySelector(':scope > p.muted')?.remove();
    } catch (e) {
      replace(list, errorBox(e));
    }
  }
  load();
  const off = on('sync', (ev) => {
    if (ev.type === 'bridge.state') load();
  });
  return off;
}

/** @param {Schemas['Bridge']} b @param {() => void} reload @param {Set<string>} inFlow */
function bridgeCard(b, reload, inFlow) {
  const name = platformName(b.platform);
  const flowArea = h('div', { class: 'flow' });
  const notice = notices.get(b.platform);
  if (notice && Date.now() < notice.until) flowArea.append(h('p', { class: 'ok', role: 'status' }, notice.text));
  const status = !b.configured
    ? 'Not configured on this server'
    : !b.reachable
      ? `Bridge unreachable${b.problem ? `: ${b.problem}` : ''}`
      : b.connected
        ? 'Connected'
        : 'Not connected';
  const logins = b.logins.map((l) =>
    h(
      'li',
      null,
      h('strong', null, l.remoteName || l.id),
      ` — ${stateWords(l.stateEvent)}`,
      l.error ? h('span', { class: 'error' }, ` ${l.error}`) : null,
      ' ',
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          'aria-label': `Log out ${l.remoteName || l.id} from ${name}`,
          onclick: (/** @type {Event} */ ev) =>
            busy(/** @type {HTMLElement} */ (ev.currentTarget), flowArea, async () => {
              await api.post(`/api/bridges/${b.platform}/logout`, { loginId: l.id });
              toast(`Logged out of ${name}`);
              reload();
            }),
        },
        'Log out',
      ),
    ),
  );
  const connect = h(
    'button',
    { type: 'button', disabled: !b.configured || !b.reachable },
    b.connected ? `Add another ${name} login` : `Connect ${name}`,
  );
  connect.addEventListener('click', () =>
    chooseFlow(
      b.platform,
      flowArea,
      () => {
        inFlow.delete(b.platform);
        reload();
      },
      inFlow,
    ),
  );
  return h(
    'section',
    { class: 'card', dataset: { platform: b.platform }, 'aria-labelledby': `bridge-${b.platform}` },
    h('h2', { id: `bridge-${b.platform}` }, name),
    h('p', { class: 'bridge-status' }, status),
    b.configured ? null : setupHint(b),
    logins.length ? h('ul', null, logins) : null,
    connect,
    flowArea,
  );
}

/**
 * Where an unconfigured bridge is explained: the docs section for administrators (who can set it
 * up), a pointer to them for everyone else.
 * @param {Schemas['Bridge']} b
 */
function setupHint(b) {
  if (!state.user?.isAdmin || !b.setupDocs)
    return h('p', { class: 'muted bridge-setup' }, 'The administrator of this server can set it up.');
  return h(
    'p',
    { class: 'muted bridge-setup' },
    'To set it up, run its mautrix bridge and add it to the configuration: ',
    h('code', null, b.setupDocs),
    ' explains how (in the source, and under /usr/share/doc/switchboard/ when installed from the package).',
  );
}

/** @param {string} s */
function stateWords(s) {
  return (
    {
      CONNECTED: 'connected',
      CONNECTING: 'connecting',
      BACKFILLING: 'catching up',
      BAD_CREDENTIALS: 'signed out by the platform: log in again',
      TRANSIENT_DISCONNECT: 'temporarily disconnected',
      UNKNOWN_ERROR: 'error',
      LOGGED_OUT: 'logged out',
    }[s] || s.toLowerCase()
  );
}

/** @param {string} platform @param {HTMLElement} area @param {() => void} done @param {Set<string>} inFlow */
async function chooseFlow(platform, area, done, inFlow) {
  replace(area, h('p', { class: 'muted' }, 'Loading login methods…'));
  try {
    /** @type {Schemas['BridgeLoginFlows']} */
    const { flows } = await api.get(`/api/bridges/${platform}/flows`);
    replace(
      area,
      h('p', null, 'Choose how to log in:'),
      h(
        'div',
        { class: 'chips' },
        flows.map((f) =>
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              title: f.description,
              onclick: () => startFlow(platform, f, area, done, inFlow),
            },
            f.name,
          ),
        ),
      ),
      h(
        'ul',
        { class: 'muted' },
        flows.map((f) => h('li', null, `${f.name}: ${f.description}`)),
      ),
    );
  } catch (e) {
    replace(area, errorBox(e));
  }
}

/**
 * @param {string} platform
 * @param {Schemas['BridgeLoginFlow']} flow
 * @param {HTMLElement} area
 * @param {() => void} done
 * @param {Set<string>} inFlow
 */
async function startFlow(platform, flow, area, done, inFlow) {
  inFlow.add(platform);
  replace(area, h('p', { class: 'muted' }, `Starting ${flow.name}…`));
  try {
    /** @type {Schemas['BridgeLoginStarted']} */
    const started = await api.post(`/api/bridges/${platform}/login/start`, { flowId: flow.id });
    await runSteps(platform, started.loginProcessId, started.step, started.timeout, area);
    done();
  } catch (e) {
    inFlow.delete(platform);
    replace(
      area,
      errorBox(e),
      h(
        'button',
        { type: 'button', class: 'secondary', onclick: () => chooseFlow(platform, area, done, inFlow) },
        'Try again',
      ),
    );
  }
}

/**
 * Shows each step until the login completes (resolves) or fails (throws an Error in words).
 * @param {string} platform @param {string} processId @param {Schemas['BridgeLoginStep']} step
 * @param {Schemas['BridgeLoginTimeout'] | undefined} timeout @param {HTMLElement} area
 */
async function runSteps(platform, processId, step, timeout, area) {
  for (;;) {
    if (step.type === 'complete') {
      replace(area, h('p', { class: 'ok', role: 'status' }, `${platformName(platform)} is connected.`));
      notices.set(platform, { text: `${platformName(platform)} is connected.`, until: Date.now() + 60000 });
      toast(`${platformName(platform)} connected`);
      return;
    }
    /** @type {Schemas['BridgeLoginProgress']} */
    let progress;
    if (step.type === 'display_and_wait') progress = await displayAndWait(platform, processId, step, timeout, area);
    else if (step.type === 'user_input' || step.type === 'cookies')
      progress = await submitFields(platform, processId, step, area);
    else throw new Error(`This login method needs a step the web app cannot do (${step.type}); use another method.`);
    if (progress.complete) {
      step = { type: 'complete', stepId: '', instructions: '' };
      continue;
    }
    if (progress.expired) throw new Error('The login timed out before it was finished. Start again.');
    if (!progress.step) throw new Error('The bridge ended the login without an answer. Start again.');
    step = progress.step;
    timeout = progress.timeout;
  }
}

/**
 * @param {string} platform
 * @param {string} processId
 * @param {Schemas['BridgeLoginStep']} step
 * @param {Schemas['BridgeLoginTimeout'] | undefined} timeout
 * @param {HTMLElement} area
 */
async function displayAndWait(platform, processId, step, timeout, area) {
  const d = step.displayAndWait || { type: 'nothing' };
  const name = platformName(platform);
  let shown;
  if (d.type === 'qr' && d.data) shown = qrImage(d.data, `QR code to scan with ${name}`);
  else if (d.type === 'code' || d.type === 'emoji')
    shown = h(
      'p',
      { class: 'secret', 'aria-label': `${d.type === 'code' ? 'Pairing code' : 'Emoji'} to enter in ${name}` },
      d.data || '',
    );
  else shown = h('p', { class: 'muted' }, 'Waiting for the bridge…');
  const left = h('p', { class: 'muted timeleft', role: 'timer', 'aria-live': 'off' });
  const ends = timeout ? Date.now() + timeout.remainingSeconds * 1000 : 0;
  const tick = () => {
    if (!ends) return;
    const s = Math.max(0, Math.round((ends - Date.now()) / 1000));
    left.textContent = `Time left: ${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  };
  tick();
  const timer = window.setInterval(tick, 1000);
  replace(
    area,
    h(
      'div',
      { class: 'stack', dataset: { processId, stepId: step.stepId } },
      h(
        'p',
        null,
        step.instructions ||
          (d.type === 'qr' ? `Scan this code with ${name} on your phone.` : 'Follow the instructions on your phone.'),
      ),
      shown,
      left,
    ),
  );
  try {
    // The bridge answers a long poll when the code changes, the login completes or fails.
    return await api.post(`/api/bridges/${platform}/login/wait`, { loginProcessId: processId, stepId: step.stepId });
  } finally {
    clearInterval(timer);
  }
}

/**
 * Collects user_input fields or pasted cookies, then sends them.
 * @param {string} platform
 * @param {string} processId
 * @param {Schemas['BridgeLoginStep']} step
 * @param {HTMLElement} area
 */
function submitFields(platform, processId, step, area) {
  const isCookies = step.type === 'cookies';
  const spec = /** @type {any} */ (isCookies ? step.cookies : step.userInput) || {};
  /** @type {any[]} */
  const fields = Array.isArray(spec.fields) ? spec.fields : [];
  const out = h('div', { class: 'out' });
  const inputs = fields.map((f) => {
    if (isCookies) {
      const names = (f.sources || []).map((/** @type {any} */ s) => `${s.type} “${s.name}”`).join(' or ');
      return field(`${f.id}${f.required ? '' : ' (optional)'}`, {
        name: f.id,
        required: !!f.required,
        autocomplete: 'off',
        'aria-description': names,
      });
    }
    if (f.type === 'select' && Array.isArray(f.options)) {
      return field(f.name || f.id, {
        tag: 'select',
        name: f.id,
        options: f.options.map((/** @type {string} */ o) => [o, o]),
        value: f.default_value,
      });
    }
    const type =
      { password: 'password', email: 'email', phone_number: 'tel', url: 'url' }[/** @type {string} */ (f.type)] ||
      'text';
    return h(
      'div',
      null,
      field(f.name || f.id, {
        type,
        name: f.id,
        required: true,
        value: f.default_value,
        pattern: f.pattern,
        autocomplete: f.type === '2fa_code' ? 'one-time-code' : 'off',
      }),
      f.description ? h('p', { class: 'muted' }, f.description) : null,
    );
  });
  const help = isCookies ? cookieHelp(spec, fields) : null;
  const form = h(
    'form',
    { class: 'stack' },
    h(
      'p',
      null,
      step.instructions || (isCookies ? 'Paste the cookies of your signed-in browser session.' : 'Fill in:'),
    ),
    help,
    inputs,
    h('button', { type: 'submit' }, 'Continue'),
    out,
  );
  replace(area, form);
  return new Promise((resolve) => {
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      /** @type {Record<string, string>} */
      const data = {};
      for (const f of fields) {
        const el = /** @type {HTMLInputElement | null} */ (form.elements.namedItem(f.id));
        if (el && el.value !== '') data[f.id] = el.value.trim();
      }
      busy(form, out, async () => {
        resolve(
          await api.post(`/api/bridges/${platform}/login/step`, {
            loginProcessId: processId,
            stepId: step.stepId,
            stepType: step.type,
            data,
          }),
        );
      });
    });
  });
}

/** Where a cookie field's value is found (cookie or local-storage names), else its id. @param {any} f */
function cookieSources(f) {
  return (f.sources || []).map((/** @type {any} */ s) => `${s.name} (${s.type})`).join(' / ') || f.id;
}

/** Where to find the cookies the bridge asks for. @param {any} spec @param {any[]} fields */
function cookieHelp(spec, fields) {
  return h(
    'details',
    { class: 'help', open: true },
    h('summary', null, 'How to find these values'),
    h(
      'ol',
      null,
      h('li', null, 'In another tab, sign in at ', h('code', null, String(spec.url || 'the platform’s website')), '.'),
      h(
        'li',
        null,
        'Open the developer tools (F12), tab Application (Chrome) or Storage ' +
          '(Firefox), then Cookies / Local storage for that site.',
      ),
      h('li', null, `Copy the value of ${fields.map(cookieSources).join(', ')} into the fields below.`),
      h(
        'li',
        null,
        'These values sign you in: paste them only here, and sign out of that browser session afterwards if you wish.',
      ),
    ),
  );
}
