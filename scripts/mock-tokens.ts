/**
 * The repository mock's token rule (X-MOCK-5): the service's rule for whose tokens it takes (X-RB-13,
 * X-RB-14), so that a page that works on the mock works on the service. Prism only checks that a
 * token is present; this front step looks at the Bearer token of each operation that takes a user or
 * an agent token before Prism answers:
 * - a JWT of the mock's own issuer (the issuer of the documented example tokens) made for the
 *   operation's token system (`aud`) goes on to Prism, as the mock cannot verify the examples'
 *   placeholder signatures;
 * - a JWT of the trusted issuer, when the mock is given one (as `REPOSITORY_TRUSTED_ISSUER` gives the
 *   service one), on a user operation: verified exactly as the service verifies it
 *   (handlers/repository/domain/trusted-issuer.ts: signature by the issuer's JWKS, `typ`, `iss`,
 *   `aud`, expiry, the scope), and refused with the service's detail when a check fails;
 * - any other JWT (another issuer, or a token of the other system): 401 `invalid_token` with the
 *   service's detail saying it is not a token of this service and how to get one;
 * - a token that is not a JWT goes on to Prism: a placeholder such as `Bearer x` keeps working
 *   against the mock (the service would call it malformed).
 */
import type Koa from "koa";
import { decodeJwt } from "jose";
import { systemClock } from "../server/clock.ts";
import { unauthenticated } from "../server/domain/errors.ts";
import { asProblem } from "../server/http/problem.ts";
import type { ContractDocument } from "../support/contract/documents.ts";
import { matchOperation } from "../support/contract/validator.ts";
import { FOREIGN_TOKEN_DETAIL } from "../handlers/repository/domain/foreign-tokens.ts";
import { AUDIENCE, REALM } from "../handlers/repository/domain/tokens.ts";
import { createTrustedIssuer, type TrustedIssuerSettings } from "../handlers/repository/domain/trusted-issuer.ts";

/** The security schemes of the repository document whose tokens the rule looks at, and the token system of each. */
const SYSTEMS = { UserAuth: "access", AgentAuth: "agent" } as const;
type System = (typeof SYSTEMS)[keyof typeof SYSTEMS];

/** The claims of a JWT, decoded and not verified; undefined when the text is not a JWT. */
function claimsOf(token: string): Record<string, unknown> | undefined {
  try {
    return decodeJwt(token);
  } catch {
    return undefined;
  }
}

/** The issuer of the example tokens a document gives (`eyJ…` strings among its examples): the mock's own tokens. */
export function exampleIssuer(document: ContractDocument): string | undefined {
  const issuers = new Set<string>();
  const visit = (node: unknown): void => {
    if (typeof node === "string") {
      const iss = node.startsWith("eyJ") ? claimsOf(node)?.iss : undefined;
      if (typeof iss === "string") issuers.add(iss);
    } else if (node && typeof node === "object") for (const value of Object.values(node)) visit(value);
  };
  visit(document.definition);
  if (issuers.size > 1) throw new Error(`${document.name}: example tokens of several issuers (${[...issuers].join(", ")})`);
  return [...issuers][0];
}

/** The token system an operation takes (by its security scheme), or undefined when it takes no Bearer token of one. */
function systemOf(document: ContractDocument, method: string, path: string): System | undefined {
  const operation = matchOperation(document, method, path);
  for (const requirement of operation?.security ?? []) {
    for (const scheme of Object.keys(requirement)) {
      if (scheme in SYSTEMS) return SYSTEMS[scheme as keyof typeof SYSTEMS];
    }
  }
  return undefined;
}

/** The front step for the repository mock; `trusted` is the issuer it trusts, as the service's setting names one. */
export function repositoryTokenRule(document: ContractDocument, trusted?: TrustedIssuerSettings): Koa.Middleware {
  const ownIssuer = exampleIssuer(document);
  const verifier = trusted ? createTrustedIssuer(trusted, { clock: systemClock }) : undefined;
  const refuse = (detail: string) => asProblem(unauthenticated(REALM, detail, "invalid_token"))!;
  return async (ctx, next) => {
    const token = /^Bearer (\S+)$/i.exec(ctx.get("authorization"))?.[1];
    const system = token ? systemOf(document, ctx.method, ctx.path) : undefined;
    const claims = token && system ? claimsOf(token) : undefined;
    if (!token || !system || !claims) return next();
    if (verifier && system === "access" && claims.iss === verifier.issuer) {
      try {
        await verifier.verify(token);
      } catch (err) {
        throw asProblem(err) ?? err;
      }
      return next();
    }
    if (claims.iss === ownIssuer && claims.aud === AUDIENCE[system]) return next();
    throw refuse(FOREIGN_TOKEN_DETAIL[system]);
  };
}
