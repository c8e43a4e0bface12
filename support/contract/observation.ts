/**
 * One line of the contract coverage record: what the recorder (conformance/harness/contract-recorder.ts)
 * writes while the suite runs, one JSON object a line, and what the coverage report
 * (scripts/contract-coverage.ts) reads back. The one shape both sides agree on.
 */
export interface Observation {
  /** `response`: a service answered the suite; `webhook`: a receiver got our request and answered it. */
  kind: "response" | "webhook";
  /** The service's name (responses) or the receiver document's (webhooks). */
  service: string;
  /** null when no declared operation matched (unknown paths, preflights, pages outside the document). */
  document: string | null;
  operationId: string | null;
  method: string;
  /** The request path without its query (unmatched answers only; matched ones are named by operation). */
  path?: string;
  /** The declared status the answer falls under, or the bare number. */
  status: string;
  contentType: string;
  /** Every way the answer (or, for webhooks, our request) breaks the document. */
  errors: string[];
  /** For webhooks: whether the receiver's answer is one the document declares (a test may play a misbehaving receiver). */
  declaredAnswer?: boolean;
  file?: string;
  test?: string;
}
