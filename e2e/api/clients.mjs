// clients.mjs — Baton's GraphQL subscriptions through the reference clients, against two real
// `baton serve` instances sharing PostgreSQL and Redis. api_test.go starts the instances and
// runs this script; it exits non-zero with a message on stderr when a check fails.
//
// Both clients connect to instance B:
//   - graphql-ws, the reference client of the graphql-transport-ws protocol;
//   - subscriptions-transport-ws, a client of the legacy protocol (subprotocol "graphql-ws").
// Each subscribes to runEvents, then the script starts JOB on instance A. Each client must see
// its STARTED and FINISHED events, and, subscribed to runProgress of the run, a snapshot,
// at least two distinct progress updates and the final SUCCEEDED state, then the end of the
// subscription. The script then prints {"event":"ready-for-revoke"} and waits for the
// server to close both connections with code 4401 once the test revokes the token.
//
// Lines on stdout are JSON objects: {"event": ...}. Environment:
//   BATON_A, BATON_B   base URLs of the two instances (http://127.0.0.1:port)
//   BATON_TOKEN        an operator token
//   BATON_JOB          the job to follow (a run lasting a few seconds)
//   BATON_WARMUP_JOB   a quick job, started until runEvents is seen to deliver
//   BATON_TIMEOUT_MS   how long any one wait may last (default 30000)
import WebSocket from 'ws';
import { createClient } from 'graphql-ws';
import legacy from 'subscriptions-transport-ws';

const { SubscriptionClient } = legacy;

const env = (name, def) => {
  const v = process.env[name] ?? def;
  if (v === undefined || v === '') throw new Error(`${name} is not set`);
  return v;
};
const A = env('BATON_A');
const B = env('BATON_B');
const TOKEN = env('BATON_TOKEN');
const JOB = env('BATON_JOB');
const WARMUP_JOB = env('BATON_WARMUP_JOB');
const TIMEOUT = Number(env('BATON_TIMEOUT_MS', '30000'));

const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
const wsURL = (base) => base.replace(/^http/, 'ws') + '/graphql';
const check = (ok, msg) => {
  if (!ok) throw new Error(msg);
};

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function within(promise, what, ms = TIMEOUT) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Stream collects the results of one subscription for reading in order.
class Stream {
  constructor(label) {
    this.label = label;
    this.items = [];
    this.ended = false;
    this.error = null;
    this.waiter = null;
  }
  push(result) {
    this.items.push(result);
    this.wake();
  }
  end(error) {
    this.ended = true;
    this.error = error ?? null;
    this.wake();
  }
  wake() {
    const w = this.waiter;
    this.waiter = null;
    w?.resolve();
  }
  // next returns the next result's data, or null once the subscription has completed.
  async next() {
    while (this.items.length === 0 && !this.ended) {
      this.waiter = deferred();
      await within(this.waiter.promise, `the next result of ${this.label}`);
    }
    if (this.items.length > 0) {
      const r = this.items.shift();
      check(!r.errors?.length, `${this.label}: errors ${JSON.stringify(r.errors)}`);
      return r.data;
    }
    check(!this.error, `${this.label}: ${describe(this.error)}`);
    return null;
  }
}

function describe(err) {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && 'code' in err) return `closed ${err.code} ${err.reason}`;
  return JSON.stringify(err);
}

const connectionParams = { authorization: `Bearer ${TOKEN}` };

// transportClient connects with graphql-ws (graphql-transport-ws).
function transportClient(url) {
  const connected = deferred();
  const closed = deferred();
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    connectionParams,
    lazy: false,
    retryAttempts: 0,
    onNonLazyError: () => {}, // reported through `closed`
    on: {
      connected: () => connected.resolve(),
      closed: (ev) => {
        closed.resolve({ code: ev?.code, reason: ev?.reason });
        connected.reject(new Error(`graphql-ws: closed before the ack: ${ev?.code} ${ev?.reason}`));
      },
    },
  });
  return {
    name: 'graphql-ws',
    connected: connected.promise,
    closed: closed.promise,
    subscribe(query, variables) {
      const s = new Stream(`graphql-ws ${query.slice(0, 40)}`);
      client.subscribe({ query, variables }, { next: (r) => s.push(r), error: (e) => s.end(e), complete: () => s.end() });
      return s;
    },
    dispose: () => client.dispose(),
  };
}

// legacyClient connects with subscriptions-transport-ws (subprotocol graphql-ws).
function legacyClient(url) {
  const connected = deferred();
  const closed = deferred();
  const client = new SubscriptionClient(url, { connectionParams, reconnect: false, lazy: false }, WebSocket);
  client.onConnected(() => connected.resolve());
  // The client does not pass the close code on: read it from its socket.
  client.client.addEventListener('close', (ev) => {
    closed.resolve({ code: ev.code, reason: ev.reason });
    connected.reject(new Error(`subscriptions-transport-ws: closed before the ack: ${ev.code} ${ev.reason}`));
  });
  return {
    name: 'subscriptions-transport-ws',
    connected: connected.promise,
    closed: closed.promise,
    subscribe(query, variables) {
      const s = new Stream(`subscriptions-transport-ws ${query.slice(0, 40)}`);
      client.request({ query, variables }).subscribe({ next: (r) => s.push(r), error: (e) => s.end(e), complete: () => s.end() });
      return s;
    },
    dispose: () => client.close(),
  };
}

// startJob starts name on base over HTTP, and returns the run id, or null if it is already
// running (when allowBusy).
async function startJob(base, name, allowBusy = false) {
  const res = await fetch(base + '/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({
      query: 'mutation($input: StartJobInput!) { startJob(input: $input) { run { id status } userErrors { code message } } }',
      variables: { input: { name } },
    }),
  });
  const body = await res.json();
  check(res.ok && !body.errors, `startJob ${name}: HTTP ${res.status} ${JSON.stringify(body)}`);
  const p = body.data.startJob;
  if (p.userErrors.length > 0) {
    check(allowBusy && p.userErrors[0].code === 'ALREADY_RUNNING', `startJob ${name}: ${JSON.stringify(p.userErrors)}`);
    return null;
  }
  return p.run.id;
}

const EVENTS = 'subscription { runEvents { kind run { id jobName status } } }';
const PROGRESS = 'subscription($id: ID!) { runProgress(runId: $id) { id status progress { processed total } } }';
const ACTIVE = new Set(['STARTING', 'RUNNING']);

// followProgress checks one client's runProgress of run id and returns what it saw.
async function followProgress(stream, id, name) {
  const snap = (await stream.next())?.runProgress;
  check(snap && snap.id === id, `${name}: snapshot ${JSON.stringify(snap)}`);
  check(ACTIVE.has(snap.status), `${name}: the snapshot of a run just started is ${snap.status}: make the job longer`);
  const processed = [snap.progress.processed];
  let last = snap;
  while (ACTIVE.has(last.status)) {
    const d = await stream.next();
    check(d !== null, `${name}: runProgress ended before the final state`);
    last = d.runProgress;
    check(last.id === id, `${name}: a state of another run ${JSON.stringify(last)}`);
    if (ACTIVE.has(last.status)) processed.push(last.progress.processed);
  }
  check(last.status === 'SUCCEEDED', `${name}: the run ended ${last.status}`);
  check(last.progress.total !== null && last.progress.processed === last.progress.total, `${name}: final state ${JSON.stringify(last)}`);
  const distinct = new Set(processed.filter((n) => n > 0));
  check(distinct.size >= 2, `${name}: progress updates ${JSON.stringify(processed)}: want at least two distinct ones`);
  check((await stream.next()) === null, `${name}: runProgress went on after the final state`);
  return { updates: processed.length, final: last.status, processed: last.progress.processed };
}

// followEvents reads one client's runEvents until run id finished, and returns the kinds.
async function followEvents(stream, id, name) {
  const kinds = [];
  for (;;) {
    const d = await stream.next();
    check(d !== null, `${name}: runEvents ended`);
    const e = d.runEvents;
    if (e.run.id !== id) continue; // the warm-up runs
    kinds.push(e.kind);
    if (e.kind === 'FINISHED') break;
  }
  check(kinds[0] === 'STARTED', `${name}: run events ${kinds}: want STARTED first`);
  return kinds;
}

async function main() {
  const clients = [transportClient(wsURL(B)), legacyClient(wsURL(B))];
  await within(Promise.all(clients.map((c) => c.connected)), 'connection_ack from both clients');
  out({ event: 'connected', clients: clients.map((c) => c.name) });

  // runEvents has no snapshot: start quick runs on A until both clients have seen an event,
  // so that the subscriptions are known to be in place before the run they must report.
  const events = clients.map((c) => c.subscribe(EVENTS));
  const deadline = Date.now() + TIMEOUT;
  while (!events.every((s) => s.items.length > 0)) {
    check(Date.now() < deadline, 'runEvents on B delivered nothing of the warm-up runs started on A');
    await startJob(A, WARMUP_JOB, true);
    await new Promise((resolve) => {
      const wait = setInterval(() => {
        if (events.every((s) => s.items.length > 0) || Date.now() > deadline) {
          clearInterval(wait);
          resolve();
        }
      }, 50);
      setTimeout(() => {
        clearInterval(wait);
        resolve();
      }, 2000);
    });
  }

  const id = await startJob(A, JOB);
  out({ event: 'started', job: JOB, run: id, on: A });
  const progress = clients.map((c) => c.subscribe(PROGRESS, { id }));
  const results = await Promise.all(
    clients.map(async (c, i) => ({
      client: c.name,
      progress: await followProgress(progress[i], id, c.name),
      events: await followEvents(events[i], id, c.name),
    })),
  );
  out({ event: 'followed', results });

  // The test revokes the token now: both connections must be closed with 4401.
  out({ event: 'ready-for-revoke' });
  const closes = await within(Promise.all(clients.map((c) => c.closed)), 'the server to close both connections after the revocation');
  clients.forEach((c, i) => {
    check(closes[i].code === 4401, `${c.name}: closed with ${closes[i].code} ${closes[i].reason}, want 4401`);
  });
  out({ event: 'revoked', closes: clients.map((c, i) => ({ client: c.name, ...closes[i] })) });
  clients.forEach((c) => c.dispose());
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`clients.mjs: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
