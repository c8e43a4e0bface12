/**
 * Pushed authorization requests (RFC 9126, X-ID-PAR-1..6): a client sends its authorization
 * request's parameters to `POST /oauth/par` first and gets a `request_uri` to send the browser
 * with. The `request_uri` carries 256 random bits; only its SHA-256 is stored, with the parameters,
 * the client that pushed them and an expiry; the authorization endpoint takes it once.
 */
import type { Clock } from "../../../../server/clock.ts";
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { Application } from "../../storage/applications.ts";
import type { PushedRequestStore } from "../../storage/pushed-requests.ts";

/** RFC 9126 §2.2: the URN prefix of every `request_uri` the server hands out. */
export const REQUEST_URI_PREFIX = "urn:ietf:params:oauth:request_uri:";

/** The deployment's choices (handlers/identity/config.ts). */
export interface PushedRequestSettings {
  /** Seconds a `request_uri` can be used (`expires_in`). */
  lifetimeSeconds: number;
  /** Every application must push its requests (X-ID-PAR-5). */
  requiredForAll: boolean;
}

export type PushedParameters = Record<string, string>;

export function createPushedRequests(deps: { store: PushedRequestStore; clock: Clock; settings: PushedRequestSettings }) {
  const { store, clock, settings } = deps;

  /** Stores validated parameters for `application`; the answer of `POST /oauth/par` (RFC 9126 §2.2). */
  async function push(application: Application, parameters: PushedParameters): Promise<{ request_uri: string; expires_in: number }> {
    const now = clock.now();
    const requestUri = `${REQUEST_URI_PREFIX}${randomSecret()}`;
    await store.insert({
      request_uri_hash: sha256Hex(requestUri),
      application_id: application.id,
      parameters: JSON.stringify(parameters),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + settings.lifetimeSeconds * 1000).toISOString(),
      consumed_at: null,
    });
    return { request_uri: requestUri, expires_in: settings.lifetimeSeconds };
  }

  /**
   * The parameters pushed under `requestUri` by `application`, marked used: undefined when the URI
   * is unknown, expired, already used or pushed by another client (X-ID-PAR-3, X-ID-PAR-4). Of
   * concurrent uses exactly one gets them (the store's conditional update).
   */
  async function take(application: Application, requestUri: string): Promise<PushedParameters | undefined> {
    if (!requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > 255) return undefined;
    const parameters = await store.take(sha256Hex(requestUri), application.id, clock.now().toISOString());
    return parameters === undefined ? undefined : (JSON.parse(parameters) as PushedParameters);
  }

  /** X-ID-PAR-5: this application may start an authorization only with a pushed request. */
  const required = (application: Application): boolean => settings.requiredForAll || application.requirePushedAuthorizationRequests;

  return { push, take, required, requiredForAll: settings.requiredForAll };
}

export type PushedRequests = ReturnType<typeof createPushedRequests>;
