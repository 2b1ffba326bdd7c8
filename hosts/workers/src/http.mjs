// HTTP in and out of the engine: a Fetch API `Request` as the WIT's `request` (the body
// bounded, `multipart/form-data` decoded by the runtime's own `formData()`, as the Rust
// host decodes it before the engine sees it) and the engine's `response` as a
// `Response`. Errors in DESIGN.md §4's shape.

import { formParts } from '../../js/form-parts.mjs';

/** The Rust host's default limit on request bodies (ESIGN_MAX_BODY_BYTES). */
const MAX_BODY_BYTES = 25 << 20;

export function errorResponse(status, error, description) {
  return Response.json({ error, description, status }, { status });
}

/** The engine's request for `request`, or the error `Response` that answers it. */
export async function engineRequest(request, env) {
  const url = new URL(request.url);
  const max = Number(env.ESIGN_MAX_BODY_BYTES || MAX_BODY_BYTES);
  const tooLarge = () => errorResponse(413, 'payload_too_large', `the request body is larger than the limit of ${max} bytes`);
  if (Number(request.headers.get('content-length') ?? 0) > max) return tooLarge();
  let body = await readBounded(request, max);
  if (body === null) return tooLarge();
  const contentType = request.headers.get('content-type') ?? '';
  let parts = [];
  if (/^multipart\/form-data/i.test(contentType)) {
    try {
      parts = await formParts(contentType, body);
    } catch (e) {
      return errorResponse(400, 'invalid_multipart', `the multipart/form-data body is malformed: ${e.message}`);
    }
    body = new Uint8Array();
  }
  return {
    method: request.method,
    path: url.pathname,
    query: url.search.slice(1),
    headers: [...request.headers].map(([k, v]) => [k.toLowerCase(), v]),
    body,
    parts,
    origin: 'http',
    remoteAddr: request.headers.get('cf-connecting-ip') ?? '127.0.0.1',
  };
}

/** The body, or null when it is longer than `max` bytes. */
async function readBounded(request, max) {
  if (!request.body) return new Uint8Array();
  const chunks = [];
  let size = 0;
  for await (const chunk of request.body) {
    size += chunk.length;
    if (size > max) return null;
    chunks.push(chunk);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** The engine's response as a `Response` (without `x-esign-route`, the route template
 *  the engine names for a host's metrics). */
export function toResponse(res) {
  const headers = new Headers();
  for (const [k, v] of res.headers) if (k !== 'x-esign-route') headers.append(k, v);
  const empty = res.status === 204 || res.status === 304 || res.body.length === 0;
  return new Response(empty ? null : res.body, { status: res.status, headers });
}
