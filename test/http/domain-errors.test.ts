/**
 * Domain errors (server/domain/errors.ts) and their HTTP answers (server/http/problem.ts `problemOf`):
 * each kind keeps the status, code, detail and headers the services answered before the domain
 * stopped throwing HTTP problems, so the contracts did not move.
 */
import { describe, expect, it } from "vitest";
import {
  conflict,
  forbidden,
  invalid,
  notFound,
  rateLimited,
  refused,
  unauthenticated,
  badCredentials,
} from "../../server/domain/errors.ts";
import { bearerChallenge, problemOf } from "../../server/http/problem.ts";

describe("problemOf", () => {
  it("maps each kind to its status, keeping code, detail and field errors", () => {
    const errors = [{ field: "body.to[0]", message: "suppressed (manual)" }];
    const cases = [
      [invalid("validation_failed", "Bad.", errors), 400, "validation_failed"],
      [badCredentials("invalid_credentials", "Wrong."), 401, "invalid_credentials"],
      [forbidden("Not yours.", "not_an_admin"), 403, "not_an_admin"],
      [notFound("No such thing."), 404, "not_found"],
      [conflict("Taken.", "email_taken"), 409, "email_taken"],
      [refused("recipient_suppressed", "Suppressed.", errors), 422, "recipient_suppressed"],
      [rateLimited("Slow down.", 7), 429, "rate_limited"],
    ] as const;
    for (const [err, status, code] of cases) {
      const problem = problemOf(err);
      expect(problem.status).toBe(status);
      expect(problem.toBody()).toMatchObject({ status, code, detail: err.message });
      expect("errors" in problem.toBody()).toBe(err.errors !== undefined);
    }
    expect(problemOf(badCredentials("invalid_credentials", "Wrong.")).headers).toEqual({});
  });

  it("an unauthenticated error carries the same RFC 6750 challenge as bearerChallenge", () => {
    for (const error of [undefined, "invalid_token"] as const) {
      const detail = 'The access token "x" expired.';
      const expected = bearerChallenge("identity", detail, error);
      const problem = problemOf(unauthenticated("identity", detail, error));
      expect(problem.headers).toEqual(expected.headers);
      expect(problem.toBody()).toEqual(expected.toBody());
    }
    expect(problemOf(unauthenticated("identity", "Missing.")).headers["WWW-Authenticate"]).toBe('Bearer realm="identity"');
  });

  it("rate_limited sends Retry-After, and the RateLimit-* headers when a budget is named", () => {
    expect(problemOf(rateLimited("Later.", 30)).headers).toEqual({ "Retry-After": "30" });
    expect(problemOf(rateLimited("Later.", 2, 5)).headers).toEqual({
      "Retry-After": "2",
      "RateLimit-Limit": "5",
      "RateLimit-Remaining": "0",
      "RateLimit-Reset": "2",
    });
  });
});
