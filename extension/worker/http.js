// HTTP for Python (py/margin/platform/browser.py `BrowserTransport`), through the bridge: fetch with a
// streaming body reader and abort. Every request to a provider goes out from here.
//
// Rules:
// 1. Python picks the handle, so it can abort a request whose headers have not arrived yet.
// 2. Never follow a redirect: it could carry the conversation and its key to an address the user
//    never typed (py/margin/platform/ports.py, rule 4; a file a page names is read by the page
//    itself, docs/security.md).
//    'manual' rather than 'error' so the refusal can be told apart from a network failure.
// 3. No cookies, no cache: credentials 'omit', cache 'no-store'.
// 4. A failure is named by its kind: 'timeout', 'aborted' or 'connect' before the headers,
//    'broken' (a cut stream) or 'aborted' after them, 'redirect' for rule 2's refusal.

import { failed, reply } from './wire.js';

const responses = new Map(); // handle -> {reader, decoder, controller}; reader null until headers

function transportKind(controller) {
  if (controller.signal.reason === 'timeout') return 'timeout';
  if (controller.signal.aborted) return 'aborted';
  return 'connect';
}

export async function httpOpen(handle, specJson) {
  let spec;
  try {
    spec = JSON.parse(specJson);
  } catch (error) {
    return failed('bad_request', error);
  }
  const controller = new AbortController();
  const entry = { reader: null, decoder: new TextDecoder(), controller };
  responses.set(handle, entry);
  const timer = setTimeout(() => controller.abort('timeout'), spec.timeoutMs || 60000);
  try {
    const response = await fetch(spec.url, {
      method: spec.method,
      headers: spec.headers,
      body: spec.body ?? undefined,
      signal: controller.signal,
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'manual', // rule 2
    });
    clearTimeout(timer);
    if (response.type === 'opaqueredirect') {
      responses.delete(handle);
      return failed('redirect', '');
    }
    entry.reader = response.body ? response.body.getReader() : null;
    const headers = {};
    response.headers.forEach((value, key) => { headers[key] = value; });
    return reply({ status: response.status, headers });
  } catch (error) {
    clearTimeout(timer);
    responses.delete(handle);
    return failed(transportKind(controller), error);
  }
}

// The next piece of the body as text, or null at its end.
export async function httpRead(handle) {
  const entry = responses.get(handle);
  if (!entry?.reader) {
    responses.delete(handle);
    return reply(null);
  }
  try {
    const { done, value } = await entry.reader.read();
    if (done) {
      responses.delete(handle);
      const tail = entry.decoder.decode();
      return reply(tail || null);
    }
    return reply(entry.decoder.decode(value, { stream: true }));
  } catch (error) {
    responses.delete(handle);
    // After the headers, a failure means the connection died mid-body: a cut stream.
    return failed(entry.controller.signal.aborted ? 'aborted' : 'broken', error);
  }
}

export async function httpAbort(handle) {
  const entry = responses.get(handle);
  responses.delete(handle);
  if (entry) entry.controller.abort('stopped');
  return reply(null);
}
