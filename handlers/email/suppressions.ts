/** The suppression list (EM-8, EM-9, X-EM-14): read, add by hand, lift (complaints only with force); the caller's mode's list only (X-EM-27). */
import { paging } from "../../server/http/handler-inputs.ts";
import { notFound } from "../../server/http/problem.ts";
import { toSuppression } from "./shared/mappers.ts";
import { fullAccess, type EmailHandlers } from "./email-handlers.ts";

export const suppressionHandlers: Pick<EmailHandlers, "listSuppressions" | "addSuppression" | "getSuppression" | "deleteSuppression"> = {
  async listSuppressions({ auth, query }, { suppressions }) {
    const { test } = fullAccess(auth);
    const { page, pageSize } = paging(query);
    const { items, totalCount } = await suppressions.list(test, query.reason, page, pageSize);
    return { status: 200, body: { items: items.map(toSuppression), totalCount, page, pageSize } };
  },
  async addSuppression({ auth, body }, { suppressions }) {
    const { test } = fullAccess(auth);
    const { row, created } = await suppressions.addManual(test, body.email);
    return created ? { status: 201, body: toSuppression(row) } : { status: 200, body: toSuppression(row) };
  },
  async getSuppression({ auth, params }, { suppressions }) {
    const { test } = fullAccess(auth);
    const row = await suppressions.find(test, params.email);
    if (!row) throw notFound("This address is not suppressed.");
    return { status: 200, body: toSuppression(row) };
  },
  async deleteSuppression({ auth, params, query }, { suppressions }) {
    const { test } = fullAccess(auth);
    await suppressions.remove(test, params.email, query.force ?? false);
    return { status: 204 };
  },
};
