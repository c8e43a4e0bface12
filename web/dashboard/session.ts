/**
 * The access token and the pending sign-in, kept in sessionStorage: this tab only, gone when it
 * closes (never localStorage, which every tab and every later visit would share).
 */
const TOKEN_KEY = "identity-dashboard.token";
const PENDING_KEY = "identity-dashboard.pending";

interface StoredToken {
  accessToken: string;
  expiresAt: number;
}

/** What the tab remembers between sending the admin to /oauth/authorize and the answer. */
export interface PendingSignIn {
  verifier: string;
  state: string;
  back: string;
}

const read = <T>(key: string): T | null => JSON.parse(sessionStorage.getItem(key) ?? "null") as T | null;

export function currentToken(): string | undefined {
  const stored = read<StoredToken>(TOKEN_KEY);
  // A minute of margin: a token about to expire would fail halfway through an edit.
  if (!stored || stored.expiresAt - 60_000 < Date.now()) return undefined;
  return stored.accessToken;
}

export function storeToken(accessToken: string, expiresInSeconds: number): void {
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify({ accessToken, expiresAt: Date.now() + expiresInSeconds * 1000 } satisfies StoredToken));
}

export const clearToken = () => sessionStorage.removeItem(TOKEN_KEY);

export const savePending = (pending: PendingSignIn) => sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));

/** The pending sign-in, removed as it is read: an authorization response is used once. */
export function takePending(): PendingSignIn | null {
  const pending = read<PendingSignIn>(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  return pending;
}
