/** API keys (X-EM-2): full-access keys manage keys, a test key only test keys (X-EM-27); the first comes from `npm run admin -- email create-api-key`. */
import { paging } from "../../server/http/handler-inputs.ts";
import { HttpProblem } from "../../server/http/problem.ts";
import { toApiKey } from "./shared/mappers.ts";
import { fullAccess, type EmailHandlers } from "./email-handlers.ts";

export const apiKeyHandlers: Pick<EmailHandlers, "createApiKey" | "listApiKeys" | "revokeApiKey"> = {
  async createApiKey({ auth, body }, { apiKeys }) {
    const caller = fullAccess(auth);
    // A test key can only make test keys: it must never become a way to reach a real relay.
    if (caller.test && body.mode !== "test") throw new HttpProblem(403, "forbidden", "A test key can only create test keys.");
    const { row, key } = await apiKeys.create({ name: body.name, permission: body.permission, test: body.mode === "test" });
    return { status: 201, body: { ...toApiKey(row), key } };
  },
  async listApiKeys({ auth, query }, { apiKeys }) {
    const caller = fullAccess(auth);
    const { page, pageSize } = paging(query);
    const { items, totalCount } = await apiKeys.list(caller, page, pageSize);
    return { status: 200, body: { items: items.map(toApiKey), totalCount, page, pageSize } };
  },
  async revokeApiKey({ auth, params }, { apiKeys }) {
    await apiKeys.revoke(fullAccess(auth), params.apiKeyId);
    return { status: 204 };
  },
};
