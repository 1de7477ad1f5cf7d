// audit.mjs — the GraphQL-over-HTTP audit suite of graphql-http (the reference
// implementation of the spec) against a real `baton serve`. api_test.go starts the instance,
// runs this script and fails on any result that is not "ok": MUST, SHOULD and MAY alike.
//
// Baton refuses requests without a bearer token, and the audits send none: every request
// goes through a fetch that adds `Authorization: Bearer <token>` and changes nothing else,
// since the audits are about the protocol, not about authentication. What Baton answers
// without a token is checked after the audits, with the same requests minus the header.
//
// Lines on stdout are JSON objects:
//   {"event":"audits","count":N}                      before the first result
//   {"event":"result","id","name","status","reason","response":{status,contentType,body}}
//   {"event":"unauthenticated","requests":[{what,status,contentType,wwwAuthenticate,body}]}
// Environment:
//   BATON_URL    the GraphQL endpoint (http://127.0.0.1:port/graphql)
//   BATON_TOKEN  a token of the OPERATOR role or higher (some audits introspect)
import { serverAudits } from 'graphql-http';

const env = (name) => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is not set`);
  return v;
};
const URL_ = env('BATON_URL');
const TOKEN = env('BATON_TOKEN');

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

// withToken is fetch with the bearer token added to whatever headers the audit sends.
function withToken(input, init = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${TOKEN}`);
  return fetch(input, { ...init, headers });
}

// describe returns what a failed audit's response showed, for the test's report.
async function describe(res) {
  if (!res) return null;
  let body = '';
  try {
    body = (await res.clone().text()).slice(0, 600);
  } catch {
    body = '(body already read)';
  }
  return { status: res.status, contentType: res.headers.get('content-type'), body };
}

async function audits() {
  const list = serverAudits({ url: URL_, fetchFn: withToken });
  out({ event: 'audits', count: list.length });
  // One at a time: the report reads in the suite's order, and a slow CI machine is not
  // flooded with sixty requests at once.
  for (const a of list) {
    const r = await a.fn();
    out({ event: 'result', id: r.id, name: r.name, status: r.status, reason: r.reason ?? null, response: await describe(r.response) });
  }
}

// unauthenticated sends a few of the audits' requests without the token.
async function unauthenticated() {
  const query = JSON.stringify({ query: '{ __typename }' });
  const get = new URL(URL_);
  get.searchParams.set('query', '{ __typename }');
  const requests = [
    { what: 'POST, Accept: application/graphql-response+json', url: URL_, init: { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' }, body: query } },
    { what: 'POST, Accept: application/json', url: URL_, init: { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: query } },
    { what: 'POST without Accept', url: URL_, init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: query } },
    { what: 'GET, Accept: application/graphql-response+json', url: get.toString(), init: { headers: { accept: 'application/graphql-response+json' } } },
  ];
  const results = [];
  for (const r of requests) {
    const res = await fetch(r.url, r.init);
    results.push({
      what: r.what,
      accept: r.init.headers.accept ?? '',
      status: res.status,
      contentType: res.headers.get('content-type'),
      wwwAuthenticate: res.headers.get('www-authenticate'),
      body: await res.text(),
    });
  }
  out({ event: 'unauthenticated', requests: results });
}

audits()
  .then(unauthenticated)
  .then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`audit.mjs: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
