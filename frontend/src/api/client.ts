// The GraphQL client: urql over HTTP for queries and mutations, graphql-ws (the
// graphql-transport-ws protocol) for subscriptions. The bearer token goes in the
// Authorization header and in connection_init's payload.
import { cacheExchange, Client, fetchExchange, mapExchange, subscriptionExchange } from '@urql/core';
import { createClient as createWSClient, type Client as WSClient } from 'graphql-ws';

/** The state of the subscription socket, for the header's live indicator. */
export type SocketState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

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
  /** Called when the server rejects the token (HTTP UNAUTHENTICATED or WebSocket 4401/4403). */
  onUnauthenticated: () => void;
  /** Base URL; default: this page's origin. */
  origin?: string;
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
  const ws = createWSClient({
    url: graphqlURL(origin, true),
    connectionParams: () => ({ authorization: authHeader(opts.token) }),
    lazy: true,
    lazyCloseTimeout: 3000,
    keepAlive: 15_000,
    retryAttempts: Infinity,
    shouldRetry: (e) => {
      const code = typeof e === 'object' && e !== null && 'code' in e ? (e as { code: unknown }).code : null;
      if (code === 4401 || code === 4403) {
        opts.onUnauthenticated();
        return false;
      }
      return true;
    },
    on: {
      connecting: () => socket.set(everConnected ? 'reconnecting' : 'connecting'),
      connected: () => {
        everConnected = true;
        socket.set('connected');
      },
      closed: () => socket.set(everConnected ? 'reconnecting' : 'closed'),
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
            opts.onUnauthenticated();
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
