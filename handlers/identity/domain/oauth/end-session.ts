/**
 * OpenID Connect RP-Initiated Logout 1.0: what a logout request asks for, checked before anything
 * is ended (X-ID-LOGOUT-2, X-ID-LOGOUT-3). A request that breaks a rule ends nothing: the caller
 * shows an error page, so a half-valid request never signs the user out without telling where to.
 */
import { compactVerify, decodeProtectedHeader, errors as joseErrors } from "jose";
import { invalid } from "../../../../server/domain/errors.ts";
import type { KeyRing } from "../../../../server/keys/ring.ts";
import type { Application, ApplicationStore } from "../../storage/applications.ts";

/** The parameters of §2 this server acts on; `ui_locales` and unknown ones are ignored. */
export interface EndSessionRequest {
  idTokenHint?: string | undefined;
  clientId?: string | undefined;
  postLogoutRedirectUri?: string | undefined;
  state?: string | undefined;
}

/** A checked logout request: whose ID token it carried, which application asked, and where to go after. */
export interface EndSessionPlan {
  /** The `sub` of the ID token hint, when one was given. */
  hintSubject?: string;
  application?: Application;
  /** The registered post-logout redirect URI with `state` appended, when one was asked for. */
  redirectTo?: string;
}

const bad = (detail: string) => invalid("invalid_request", detail);

export function createEndSession(deps: { issuer: string; keys: KeyRing; applications: Pick<ApplicationStore, "findByClientId"> }) {
  /**
   * X-ID-LOGOUT-2: an ID token this issuer signed with a key of its ring (expired allowed, as §2
   * says the OP should accept one). Only signature, `iss`, `sub` and `aud` are checked; the
   * algorithm is the ring's, never the token's choice.
   */
  async function hintClaims(hint: string): Promise<{ sub: string; aud: string[] }> {
    let payload: Record<string, unknown>;
    try {
      const header = decodeProtectedHeader(hint);
      // An access token (`at+jwt`) names the client too: only an ID token (`JWT`) is a hint.
      if (header.alg !== deps.keys.alg || header.typ !== "JWT") throw bad("The id_token_hint is not an ID token of this server.");
      const key = await deps.keys.verificationKey(header.kid);
      if (!key) throw bad("The id_token_hint is not an ID token of this server.");
      const verified = await compactVerify(hint, key.publicKey, { algorithms: [deps.keys.alg] });
      payload = JSON.parse(new TextDecoder().decode(verified.payload)) as Record<string, unknown>;
    } catch (err) {
      if (err instanceof joseErrors.JOSEError || err instanceof SyntaxError || err instanceof TypeError)
        throw bad("The id_token_hint is not an ID token of this server.");
      throw err;
    }
    const aud = typeof payload.aud === "string" ? [payload.aud] : Array.isArray(payload.aud) ? payload.aud.map(String) : [];
    if (payload.iss !== deps.issuer || typeof payload.sub !== "string" || !aud.length)
      throw bad("The id_token_hint is not an ID token of this server.");
    return { sub: payload.sub, aud };
  }

  /** Checks the request (X-ID-LOGOUT-2, X-ID-LOGOUT-3); throws 400 `invalid_request` when it breaks a rule. */
  async function check(req: EndSessionRequest): Promise<EndSessionPlan> {
    const plan: EndSessionPlan = {};
    let clientId = req.clientId;
    if (req.idTokenHint) {
      const claims = await hintClaims(req.idTokenHint);
      plan.hintSubject = claims.sub;
      if (clientId !== undefined && !claims.aud.includes(clientId)) throw bad("The client_id is not the audience of the id_token_hint.");
      clientId ??= claims.aud[0];
    }
    if (clientId !== undefined) {
      const application = await deps.applications.findByClientId(clientId);
      if (!application?.enabled) throw bad("The client_id is not an application of this server.");
      plan.application = application;
    }
    if (req.postLogoutRedirectUri !== undefined) {
      if (!plan.application) throw bad("A post_logout_redirect_uri needs the client_id or an id_token_hint that names the application.");
      // Exact string comparison, as §3 requires: no normalisation, no loopback port leeway.
      if (!plan.application.postLogoutRedirectUris.includes(req.postLogoutRedirectUri))
        throw bad("The post_logout_redirect_uri is not registered for this application.");
      const url = new URL(req.postLogoutRedirectUri);
      if (req.state !== undefined) url.searchParams.append("state", req.state);
      plan.redirectTo = url.href;
    }
    return plan;
  }

  return { check };
}

export type EndSession = ReturnType<typeof createEndSession>;
