/**
 * A hosted page's answer to a query that breaks the contract. Parameters the page does not declare
 * (a link's tracking tags) are no reason to refuse it: the page answers as without them. A declared
 * one that is too long or not one of its values makes the link not valid: a 400 page that leads on,
 * and nothing is done with the query.
 */
import { UNKNOWN_FIELD } from "../../../server/http/contract-checks.ts";
import type { HttpProblem } from "../../../server/http/problem.ts";
import { messagePage } from "../views/messages.ts";
import { page } from "./hosted-pages.ts";

/** Whether every contract failure is a query parameter the page does not declare. */
export const onlyUnknownParameters = (problem: HttpProblem): boolean =>
  problem.errors?.every((e) => e.field.startsWith("query.") && e.message === UNKNOWN_FIELD) ?? false;

/** The 400 page of a link whose declared query parameters break the contract, with the way on. */
export const linkNotValidPage = (title: string, link: { href: string; label: string }) =>
  page(400, messagePage({ title, heading: "This link is not valid", message: "The address has a value this page does not accept.", link }));
