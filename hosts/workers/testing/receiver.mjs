// The other end of everything the esign Worker sends in the tests (miniflare routes all
// its outgoing fetches here: `outboundService`): webhook targets, the mail API and the
// SMS gateway. It records each request and answers:
//
// - https://hooks.test/flaky: 500 the first time, then 200 (the retry is seen);
// - https://hooks.test/gone: 410;
// - https://hooks.test/down: 503, always (the delivery waits, then is given up);
// - mail for refused@example.com: 422 (the provider refuses the address for good);
// - any other request: 200.
//
// `GET http://receiver/_seen` lists what it received (the test reads it through
// miniflare's `getWorker`).

const seen = []; // one isolate in local development: module state outlives requests
let flaky = 0;

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.hostname === 'receiver' && url.pathname === '/_seen') return Response.json(seen);
    const body = await request.text();
    let status = 200;
    if (url.href === 'https://hooks.test/flaky') status = flaky++ === 0 ? 500 : 200;
    if (url.href === 'https://hooks.test/gone') status = 410;
    if (url.href === 'https://hooks.test/down') status = 503;
    if (url.hostname === 'mail.test' && body.includes('"to":"refused@example.com"')) status = 422;
    seen.push({ url: url.href, method: request.method, headers: Object.fromEntries(request.headers), body, status, at: Date.now() });
    return new Response(status === 200 ? '{"ok":true}' : 'no', { status, headers: { 'content-type': 'application/json' } });
  },
};
