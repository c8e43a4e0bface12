/**
 * The SDK check's scripted run of the TypeScript client (openapi-fetch over the types generated
 * from the repository SDK document, generated/sdk/types/repository.ts; scripts/sdk-check.sh):
 * log in, create a repository with only its name (the defaults stay optional), find it in the list,
 * and branch on the typed error `code` of a second create with the same name (409 `conflict`).
 *
 *   node --import tsx test/sdk/repository-smoke.ts <base URL> <email>   (the password on stdin)
 */
import { randomUUID } from "node:crypto";
import { text } from "node:stream/consumers";
import createClient from "openapi-fetch";
import type { paths } from "../../generated/sdk/types/repository.ts";

const [baseUrl, email] = process.argv.slice(2);
if (!baseUrl || !email) throw new Error("usage: repository-smoke.ts <base URL> <email> (password on stdin)");
const password = (await text(process.stdin)).split("\n")[0]!;

const client = createClient<paths>({ baseUrl });
const login = await client.POST("/auth/login", { body: { email, password } });
if (!login.data) throw new Error(`login: ${login.response.status} ${JSON.stringify(login.error)}`);
const auth = { headers: { Authorization: `Bearer ${login.data.accessToken}` } };

const name = `ts-sdk-${randomUUID().slice(0, 8)}`;
const created = await client.POST("/repository", { body: { name }, ...auth });
if (!created.data) throw new Error(`createRepository: ${created.response.status} ${created.error.code}`);
if (created.data.defaultBranch !== "main") throw new Error(`createRepository: default branch ${created.data.defaultBranch}`);

// `error.code` is the union of the operation's documented codes: a code the contract does not
// document here would not compile (TS2367), so this also checks the enum.
const again = await client.POST("/repository", { body: { name }, ...auth });
if (again.error?.code !== "conflict") throw new Error(`createRepository again: expected 409 conflict, got ${again.response.status}`);

const list = await client.GET("/repository", { params: { query: { page: 1, pageSize: 100 } }, ...auth });
if (!list.data) throw new Error(`listRepositories: ${list.response.status} ${list.error.code}`);
if (!list.data.items.some((r) => r.id === created.data.id)) throw new Error(`listRepositories: ${name} is not listed`);
console.log(`typescript client: logged in, created ${name}, listed ${list.data.totalCount} repositories`);
