// @ts-check
// The one fetch client: bearer header from memory, one silent refresh on 401 through the
// HttpOnly `sb_refresh` cookie (the page never sees the refresh token), JSON errors turned into
// ApiError {status, error, message}. Only same-origin relative URLs.

/** Header that asks the server for the cookie session (and is required on the cookie path). */
const CLIENT_HEADER = { 'X-Switchboard-Client': 'web' };

export class ApiError extends Error {
  /** @param {number} status @param {string} error @param {string} message */
  constructor(status, error, message) {
    super(message);
    this.status = status;
    this.error = error;
  }
}

/** @type {{ accessToken: string, refreshToken: string }} */
const session = { accessToken: '', refreshToken: '' };
/** @type {Promise<boolean> | null} */
let refreshing = null;
/** @type {() => void} */
let onSignedOut = () => {};

/** Called when the session is gone (refresh refused). @param {() => void} fn */
export function onSessionLost(fn) {
  onSignedOut = fn;
}

/** Marker (not a secret) that this browser has a session cookie worth trying on load. */
const HINT = 'switchboard.session';
let renewTimer = 0;

/**
 * Stores the tokens of a sign-in / switch answer.
 * @param {{accessToken: string, refreshToken?: string, expiresIn?: number}} body
 */
export function setSession(body) {
  session.accessToken = body.accessToken;
  // A server that sets the cookie answers "" here; an older one hands it over and we keep it
  // in memory only (never in storage).
  session.refreshToken = body.refreshToken || '';
  localStorage.setItem(HINT, '1');
  scheduleRenewal(body.expiresIn);
}

/** Renews the access token before it expires, so calls rarely meet a 401. @param {number | undefined} seconds */
function scheduleRenewal(seconds) {
  clearTimeout(renewTimer);
  if (seconds && seconds > 30) renewTimer = window.setTimeout(() => refresh(), (seconds - 20) * 1000);
}

export function clearSession() {
  session.accessToken = '';
  session.refreshToken = '';
  localStorage.removeItem(HINT);
  clearTimeout(renewTimer);
}

/** Whether a session cookie may exist (skips a refresh that can only fail on a first visit). */
export function mayHaveSession() {
  return localStorage.getItem(HINT) === '1';
}

export function accessToken() {
  return session.accessToken;
}

/** Exchanges the refresh cookie for an access token; false when there is no valid session. */
export function refresh() {
  if (!refreshing) {
    refreshing = (async () => {
      try {
        const body = session.refreshToken ? { refreshToken: session.refreshToken } : {};
        const resp = await fetch('/api/auth/refresh', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...CLIENT_HEADER },
          body: JSON.stringify(body),
          credentials: 'same-origin',
        });
        if (!resp.ok) {
          localStorage.removeItem(HINT);
          return false;
        }
        const data = await resp.json();
        session.accessToken = data.accessToken;
        scheduleRenewal(data.expiresIn);
        return true;
      } catch {
        return false;
      } finally {
        setTimeout(() => (refreshing = null), 0);
      }
    })();
  }
  return refreshing;
}

/**
 * Turns a failed response into an ApiError with words a person can read.
 * @param {Response} resp
 */
async function toError(resp) {
  let code = `http_${resp.status}`;
  let message = resp.statusText || `The server answered ${resp.status}.`;
  try {
    const body = await resp.json();
    if (body && typeof body.error === 'string') code = body.error;
    if (body && typeof body.message === 'string') message = body.message;
  } catch {
    /* not JSON */
  }
  return new ApiError(resp.status, code, message);
}

/**
 * @typedef {{
 *   body?: any,
 *   headers?: Record<string, string>,
 *   query?: Record<string, string | number | boolean | null | undefined>,
 *   signal?: AbortSignal,
 *   raw?: boolean,
 *   auth?: boolean,
 * }} RequestOptions
 */

/**
 * Builds `/api/...?query` from a path and query values (empty ones left out).
 * @param {string} path @param {RequestOptions['query']} query
 */
function url(path, query) {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `${path}?${s}` : path;
}

/**
 * Sends one request; on 401 refreshes once and repeats.
 * @param {string} method @param {string} path @param {RequestOptions} [opts]
 * @returns {Promise<Response>}
 */
export async function send(method, path, opts = {}) {
  const attempt = () => {
    /** @type {Record<string, string>} */
    const headers = { ...CLIENT_HEADER, ...(opts.headers || {}) };
    if (opts.auth !== false && session.accessToken) headers.Authorization = `Bearer ${session.accessToken}`;
    /** @type {BodyInit | undefined} */
    let body;
    if (opts.body instanceof FormData) body = opts.body;
    else if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    return fetch(url(path, opts.query), { method, headers, body, signal: opts.signal, credentials: 'same-origin' });
  };
  let resp = await attempt();
  if (resp.status === 401 && opts.auth !== false && path !== '/api/auth/refresh') {
    if (await refresh()) resp = await attempt();
    else {
      clearSession();
      onSignedOut();
    }
  }
  if (!resp.ok) throw await toError(resp);
  return resp;
}

/**
 * A JSON request; resolves to the parsed body.
 * @param {string} method @param {string} path @param {RequestOptions} [opts] @returns {Promise<any>}
 */
export async function request(method, path, opts) {
  const resp = await send(method, path, opts);
  if (resp.status === 204) return null;
  return resp.json();
}

/** @param {string} path @param {RequestOptions} [opts] */
export const get = (path, opts) => request('GET', path, opts);
/** @param {string} path @param {any} [body] @param {RequestOptions} [opts] */
export const post = (path, body, opts) => request('POST', path, { ...opts, body: body ?? {} });
/** @param {string} path @param {any} [body] */
export const put = (path, body) => request('PUT', path, { body: body ?? {} });
/** @param {string} path @param {any} [body] */
export const patch = (path, body) => request('PATCH', path, { body: body ?? {} });
/** @param {string} path @param {RequestOptions} [opts] */
export const del = (path, opts) => request('DELETE', path, opts);

/** A path segment (room ids hold `!`, `:`). @param {string} s */
export const seg = (s) => encodeURIComponent(s);

/** Words for an error caught anywhere. @param {unknown} e */
export function describe(e) {
  if (e instanceof ApiError) {
    if (e.status === 429) return `Too many requests: ${e.message}`;
    if (e.status >= 500) return `The server could not do it (${e.error}): ${e.message}`;
    return e.message || e.error;
  }
  if (e instanceof TypeError) return 'The server cannot be reached. Check your connection and try again.';
  return e instanceof Error ? e.message : String(e);
}
