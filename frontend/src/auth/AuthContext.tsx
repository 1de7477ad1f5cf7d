// Who is logged in. AuthGate shows the login page until a token is accepted, then provides the
// urql client and the viewer (name and role from `me`) to everything below it.
import { Button, Center, Loader, Stack, Text } from '@mantine/core';
import { createContext, useCallback, useContext, useEffect, useMemo, useState, useSyncExternalStore, type ReactNode } from 'react';
import { Provider, useQuery } from 'urql';

import { createBatonClient, type BatonClient, type SocketState } from '../api/client';
import { MeQuery } from '../api/viewer';
import { ErrorAlert } from '../components/QueryState';
import type { Role } from '../gql/graphql';
import { roleAtLeast, roleReason } from '../model/status';
import { LoginPage } from '../pages/LoginPage';
import { clearToken, loadToken, saveToken } from './session';

export interface Viewer {
  name: string;
  role: Role;
}

interface AuthValue {
  viewer: Viewer;
  token: string;
  logout: () => void;
  baton: BatonClient;
}

const AuthContext = createContext<AuthValue | null>(null);
const ViewerContext = createContext<Viewer | null>(null);
const SignedOutContext = createContext<boolean>(false);

/** SIGNED_OUT_REASON is why every action is disabled once the server refused the token. */
export const SIGNED_OUT_REASON = 'Signed out: the server refused this token (revoked or expired). Sign in again to act.';

/**
 * ViewerProvider supplies the viewer alone: what role checks read (and what tests render with).
 * signedOut: the server refused the token; the page stays readable, every action is disabled.
 */
export function ViewerProvider({ viewer, signedOut = false, children }: { viewer: Viewer; signedOut?: boolean; children: ReactNode }) {
  return (
    <SignedOutContext.Provider value={signedOut}>
      <ViewerContext.Provider value={viewer}>{children}</ViewerContext.Provider>
    </SignedOutContext.Provider>
  );
}

/** useSignedOut reports whether the server refused the token while the console was open. */
export function useSignedOut(): boolean {
  return useContext(SignedOutContext);
}

function useAuth(): AuthValue {
  const v = useContext(AuthContext);
  if (!v) throw new Error('useAuth outside AuthGate');
  return v;
}

/** useViewer returns the logged-in token's name and role. */
export function useViewer(): Viewer {
  const v = useContext(ViewerContext);
  if (!v) throw new Error('useViewer outside AuthGate');
  return v;
}

/** useToken returns the bearer token (for the playground). */
export function useToken(): string {
  return useAuth().token;
}

/** useLogout returns a function that forgets the token. */
export function useLogout(): () => void {
  return useAuth().logout;
}

/** useSocketState follows the subscription socket: connecting, connected, reconnecting, closed. */
export function useSocketState(): SocketState {
  const { baton } = useAuth();
  return useSyncExternalStore(baton.socket.subscribe, baton.socket.get);
}

/**
 * useOnReconnect calls fn whenever the subscription socket connects again after a drop: events
 * sent meanwhile were missed, so live views refetch their snapshot.
 */
export function useOnReconnect(fn: () => void): void {
  const state = useSocketState();
  const [seen, setSeen] = useState<SocketState>(state);
  useEffect(() => {
    if (state === seen) return;
    if (state === 'connected' && seen === 'reconnecting') fn();
    setSeen(state);
  }, [state, seen, fn]);
}

/**
 * The role check every action uses: null when allowed, else the reason in words (a refused
 * token first: no role acts then).
 */
export function useRoleReason(needed: Role): string | null {
  const { role } = useViewer();
  const signedOut = useSignedOut();
  if (signedOut) return SIGNED_OUT_REASON;
  return roleReason(role, needed);
}

/** useCan reports whether the viewer has at least the role. */
export function useCan(needed: Role): boolean {
  return roleAtLeast(useViewer().role, needed);
}

function ViewerLoader({
  token,
  logout,
  baton,
  signedOut,
  children,
}: {
  token: string;
  logout: () => void;
  baton: BatonClient;
  signedOut: boolean;
  children: ReactNode;
}) {
  const [{ data, error, fetching }, refetch] = useQuery({ query: MeQuery, requestPolicy: 'network-only' });
  const value = useMemo<AuthValue | null>(
    () => (data ? { viewer: { name: data.me.name, role: data.me.role }, token, logout, baton } : null),
    [data, token, logout, baton],
  );
  // Refused before the viewer was known: nothing to keep on screen, back to the login page.
  useEffect(() => {
    if (signedOut && !data) logout();
  }, [signedOut, data, logout]);
  if (value) {
    return (
      <AuthContext.Provider value={value}>
        <ViewerProvider viewer={value.viewer} signedOut={signedOut}>
          {children}
        </ViewerProvider>
      </AuthContext.Provider>
    );
  }
  if (error && !fetching) {
    return (
      <Center h="100vh" p="md">
        <Stack maw={560} w="100%">
          <ErrorAlert error={error} />
          <Button onClick={() => refetch({ requestPolicy: 'network-only' })}>Try again</Button>
          <Button variant="subtle" onClick={logout}>
            Use another token
          </Button>
        </Stack>
      </Center>
    );
  }
  return (
    <Center h="100vh">
      <Stack align="center">
        <Loader />
        <Text c="dimmed">Checking your token…</Text>
      </Stack>
    </Center>
  );
}

/**
 * AuthGate renders the login page until a token is stored and accepted, then children. A token
 * the server refuses later (revoked or expired: HTTP UNAUTHENTICATED, WebSocket 4401) puts the
 * console in the signed-out state: what is on screen stays readable, every action is disabled,
 * the live socket stops retrying, and a banner offers to sign in again. A token refused before
 * the viewer loaded goes straight back to the login page.
 */
export function AuthGate({ children }: { children: ReactNode }) {
  const [token, setToken] = useState<string | null>(() => loadToken());
  const [loginError, setLoginError] = useState<string | null>(null);
  const [signedOut, setSignedOut] = useState(false);

  const logout = useCallback(() => {
    clearToken();
    setSignedOut(false);
    setToken(null);
  }, []);
  const rejected = useCallback(() => {
    // A reload must not try the refused token again.
    clearToken();
    setLoginError('The server did not accept this token: it may be mistyped, revoked or expired.');
    setSignedOut(true);
  }, []);

  const baton = useMemo(() => (token ? createBatonClient({ token, onUnauthenticated: rejected }) : null), [token, rejected]);
  useEffect(() => () => baton?.dispose(), [baton]);

  if (!token || !baton) {
    return (
      <LoginPage
        error={loginError}
        onLogin={(t) => {
          saveToken(t);
          setLoginError(null);
          setSignedOut(false);
          setToken(t);
        }}
      />
    );
  }
  return (
    <Provider value={baton.client}>
      <ViewerLoader token={token} logout={logout} baton={baton} signedOut={signedOut}>
        {children}
      </ViewerLoader>
    </Provider>
  );
}
