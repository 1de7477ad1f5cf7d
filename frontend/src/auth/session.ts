// The token lives in sessionStorage: it survives reloads of this tab and is gone when the tab
// closes. It is never put in a URL or in localStorage.
const KEY = 'baton.token';

export function loadToken(): string | null {
  try {
    return window.sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  window.sessionStorage.setItem(KEY, token);
}

export function clearToken(): void {
  window.sessionStorage.removeItem(KEY);
}
