// api.js — the dashboard's only way to the daemon: the public HTTP API,
// with the key the user typed once (kept in sessionStorage, so it lives as
// long as the tab) sent as Authorization: Bearer.

const KEY = 'banditd.key';

export function getKey() {
  try {
    return sessionStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

export function setKey(k) {
  try {
    if (k) sessionStorage.setItem(KEY, k);
    else sessionStorage.removeItem(KEY);
  } catch {
    /* storage disabled: the key lasts until reload */
  }
}

export class ApiError extends Error {
  constructor(status, problem) {
    const detail = problem?.detail || problem?.title || `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.problem = problem;
  }
}

// One request. Resolves { status, etag, body } for 2xx and 304 (body null
// for 304), throws ApiError otherwise (with the problem+json when sent), or
// a TypeError when the daemon cannot be reached.
export async function api(path, { method = 'GET', body, etag } = {}) {
  const headers = { Accept: 'application/json' };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (etag) headers['If-None-Match'] = etag;
  // no-store: the browser's cache must not answer our If-None-Match for us;
  // we want to see the 304.
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
  });
  if (res.status === 304) return { status: 304, etag: res.headers.get('ETag') || etag, body: null };
  const type = res.headers.get('Content-Type') || '';
  const json = type.includes('json') && res.status !== 204 ? await res.json().catch(() => null) : null;
  if (!res.ok) throw new ApiError(res.status, json);
  return { status: res.status, etag: res.headers.get('ETag'), body: json };
}

export const expPath = (id) => `/v1/experiments/${encodeURIComponent(id)}`;

// Save what path answers as a file named filename (an export), sending the
// key: a link cannot carry an Authorization header. The body is held in
// memory until saved. Throws like api().
export async function download(path, filename) {
  const headers = {};
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(path, { headers, cache: 'no-store', credentials: 'omit' });
  if (!res.ok) {
    const type = res.headers.get('Content-Type') || '';
    throw new ApiError(res.status, type.includes('json') ? await res.json().catch(() => null) : null);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  // The click has started the download by now; the object URL can go.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
