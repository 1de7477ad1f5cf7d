// The GraphQL client: urql over HTTP for queries and mutations, graphql-ws (the
// graphql-transport-ws protocol) for subscriptions. The bearer token goes in the
// Authorization header and in connection_init's payload.
import { cacheExchange, Client, fetchExchange, mapExchange, subscriptionExchange } from '@urql/core';
import { createClient as createWSClient, type Client as WSClient } from 'graphql-ws';

/**
 * The state of the subscription socket, for the header's live indicator. 'refused': the server
 * closed it for the token (4401: unknown, revoked or expired; 4403: refused) and the client
 * stopped retrying.
 */
export type SocketState = 'connecting' | 'connected' | 'reconnecting' | 'closed' | 'refused';

/**
 * Close codes the server refuses a token with: 4401 (unknown, revoked or expired), which
 * graphql-ws treats as fatal and never retries. (4403, too many connections for the token,
 * may pass on a later try: it is retried.)
 */
export const TOKEN_REFUSED_CODES: readonly number[] = [4401];

function closeCode(e: unknown): number | null {
  if (typeof e === 'object' && e !== null && 'code' in e) {
    const c = (e as { code: unknown }).code;
    return typeof c === 'number' ? c : null;
  }
  return null;
}

/** A small observable value (for useSyncExternalStore). */
export class Store<T> {
  private listeners = new Set<() => void>();
  constructor(private value: T) {}
  get = (): T => this.value;
  set(v: T): void {
    if (Object.is(v, this.value)) return;
    this.value = v;
    for (const l of this.listeners) l();
  }
  subscribe = (l: () => void): (() => void) => {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  };
}

export interface BatonClient {
  client: Client;
  socket: Store<SocketState>;
  ws: WSClient;
  dispose: () => void;
}

export interface ClientOptions {
  token: string;
  /** Called once when the server rejects the token (HTTP UNAUTHENTICATED or WebSocket 4401). */
  onUnauthenticated: () => void;
  /** Base URL; default: this page's origin. */
  origin?: string;
  /** The WebSocket implementation (tests pass their own); default: the browser's. */
  webSocketImpl?: unknown;
}

/** graphqlURL is the API endpoint at origin, http(s) or ws(s). */
export function graphqlURL(origin: string, ws: boolean): string {
  const u = new URL('/graphql', origin);
  if (ws) u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.toString();
}

/** authHeader is the Authorization header value for a token. */
export function authHeader(token: string): string {
  return `Bearer ${token}`;
}

function isAuthCode(code: unknown): boolean {
  return code === 'UNAUTHENTICATED';
}

/** createBatonClient builds the urql client for one token. */
export function createBatonClient(opts: ClientOptions): BatonClient {
  const origin = opts.origin ?? window.location.origin;
  const socket = new Store<SocketState>('connecting');
  let everConnected = false;
  let refused = false;
  // The token is refused once: later events of the closing socket change nothing, and no
  // reconnect is attempted (graphql-ws stops on 4401 by itself; 4403 is stopped here).
  const refuse = () => {
    if (refused) return;
    refused = true;
    socket.set('refused');
    opts.onUnauthenticated();
  };
  const ws = createWSClient({
    url: graphqlURL(origin, true),
    connectionParams: () => ({ authorization: authHeader(opts.token) }),
    lazy: true,
    lazyCloseTimeout: 3000,
    keepAlive: 15_000,
    retryAttempts: Infinity,
    ...(opts.webSocketImpl ? { webSocketImpl: opts.webSocketImpl } : {}),
    shouldRetry: (e) => {
      const code = closeCode(e);
      if (code !== null && TOKEN_REFUSED_CODES.includes(code)) {
        refuse();
        return false;
      }
      return !refused;
    },
    on: {
      connecting: () => {
        if (!refused) socket.set(everConnected ? 'reconnecting' : 'connecting');
      },
      connected: () => {
        everConnected = true;
        if (!refused) socket.set('connected');
      },
      closed: (e) => {
        // A fatal close (4401) never reaches shouldRetry: it is seen here first.
        const code = closeCode(e);
        if (code !== null && TOKEN_REFUSED_CODES.includes(code)) {
          refuse();
          return;
        }
        if (!refused) socket.set(everConnected ? 'reconnecting' : 'closed');
      },
    },
  });

  const client = new Client({
    url: graphqlURL(origin, false),
    preferGetMethod: false,
    fetchOptions: () => ({ headers: { Authorization: authHeader(opts.token) } }),
    exchanges: [
      mapExchange({
        onError(error) {
          const status = (error.response as { status?: number } | undefined)?.status;
          if (status === 401 || error.graphQLErrors.some((e) => isAuthCode(e.extensions['code']))) {
            refuse();
          }
        },
      }),
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query ?? '' };
          return {
            subscribe(sink) {
              const unsubscribe = ws.subscribe(input, sink);
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });

  return {
    client,
    socket,
    ws,
    dispose: () => {
      void ws.dispose();
    },
  };
}
