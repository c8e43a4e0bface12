/**
 * The layering check (scripts/check-layers.ts, a step of `npm test`): the real tree passes, and a
 * temporary copy of the handlers with a module that breaks a rule fails, naming it: domain modules,
 * browser code, the arrows between app/, server/ and handlers/, sibling handler modules, one
 * service importing another, the storage rules (engine statements only from that engine's
 * store implementations, the dialect only where implementations are chosen, storage no domain),
 * the benchmarks reaching a service only through its doors, and the tooling folders importing
 * each other or support/ importing the project.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkLayers } from "../../scripts/check-layers.ts";

const root = join(import.meta.dirname, "../..");

describe("layering check", () => {
  let copy = "";
  beforeAll(() => {
    copy = mkdtempSync(join(tmpdir(), "check-layers-"));
    cpSync(join(root, "handlers"), join(copy, "handlers"), { recursive: true });
    cpSync(join(root, "web"), join(copy, "web"), { recursive: true });
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it("no domain module of the tree imports Koa, server/http, a handler, HTML views or knex", () => {
    expect(checkLayers(root)).toEqual([]);
  });

  it("a copy of the tree passes until a domain module breaks the rule, then fails naming the file and each import", () => {
    expect(checkLayers(copy)).toEqual([]);
    writeFileSync(
      join(copy, "handlers/email/domain/leak.ts"),
      [
        'import type { Knex } from "knex";',
        'import Koa from "koa";',
        'export { HttpProblem } from "../../../server/http/problem.ts";',
        'const page = await import("../../identity/views/layout.ts");',
        'import { conflict } from "../../../server/domain/errors.ts";',
        'import type { Tx } from "../../../server/storage/transaction.ts";',
        'import type { EmailDeps } from "../email-handlers.ts";',
        'import { createRenderer } from "./rendering.ts";',
      ].join("\n"),
    );
    writeFileSync(join(copy, "handlers/identity/domain/oauth/deep.ts"), 'import type { Context } from "koa";\n');
    const found = checkLayers(copy).map((v) => `${v.file} ${v.specifier}`);
    expect(found.sort()).toEqual(
      [
        "handlers/email/domain/leak.ts knex",
        "handlers/email/domain/leak.ts koa",
        "handlers/email/domain/leak.ts ../../../server/http/problem.ts",
        "handlers/email/domain/leak.ts ../../identity/views/layout.ts",
        "handlers/email/domain/leak.ts ../email-handlers.ts",
        "handlers/identity/domain/oauth/deep.ts koa",
      ].sort(),
    );
  });

  it("browser code (web/) that reaches server code or a Node built-in fails, naming the file and each import", () => {
    expect(checkLayers(copy).filter((v) => v.file.startsWith("web/"))).toEqual([]);
    writeFileSync(
      join(copy, "web/dashboard/leak.ts"),
      [
        'import { readFileSync } from "node:fs";',
        'import { createHash } from "crypto";',
        'import { config } from "../../server/config.ts";',
        'import type { paths } from "../../generated/types/identity.ts";',
        'import type { components } from "../../generated/sdk/types/identity.ts";',
        'import createClient from "openapi-fetch";',
        'import { h } from "./dom.ts";',
      ].join("\n"),
    );
    const found = checkLayers(copy)
      .filter((v) => v.file.startsWith("web/"))
      .map((v) => `${v.file} ${v.specifier}`);
    expect(found.sort()).toEqual(
      [
        "web/dashboard/leak.ts node:fs",
        "web/dashboard/leak.ts crypto",
        "web/dashboard/leak.ts ../../server/config.ts",
        "web/dashboard/leak.ts ../../generated/types/identity.ts",
      ].sort(),
    );
  });
  it("server/ importing handlers/ or app/, anything but app/ importing app/, and a handler module importing a sibling fail, naming each import", () => {
    mkdirSync(join(copy, "server"), { recursive: true });
    writeFileSync(
      join(copy, "server/leak.ts"),
      [
        'import { createIdentityService } from "../handlers/identity/service.ts";',
        'import { SERVICE_FACTORIES } from "../app/services.ts";',
        'import { systemClock } from "./clock.ts";',
      ].join("\n"),
    );
    writeFileSync(
      join(copy, "handlers/identity/leak.ts"),
      [
        'import { tokenHandlers } from "./token.ts";',
        'import type { IdentityHandlers } from "./identity-handlers.ts";',
        'import { page } from "./shared/hosted-pages.ts";',
        'import { repositoryHandlers } from "../repository/repositories.ts";',
        'import { main } from "../../app/main.ts";',
      ].join("\n"),
    );
    writeFileSync(join(copy, "handlers/identity/shared/leak.ts"), 'import { authorizeHandlers } from "../authorize.ts";\n');
    const found = checkLayers(copy)
      .filter((v) => v.file.startsWith("server/") || /^handlers\/identity\/(shared\/)?leak\.ts$/.test(v.file))
      .map((v) => `${v.file} ${v.specifier}`);
    expect(found.sort()).toEqual(
      [
        "server/leak.ts ../handlers/identity/service.ts",
        "server/leak.ts ../app/services.ts",
        "handlers/identity/leak.ts ./token.ts",
        "handlers/identity/leak.ts ../../app/main.ts",
        "handlers/identity/shared/leak.ts ../authorize.ts",
        "handlers/identity/leak.ts ../repository/repositories.ts",
      ].sort(),
    );
  });

  it("a service importing another service fails from any of its folders, naming each import; its own folders and server/ pass", () => {
    mkdirSync(join(copy, "handlers/identity/domain/webhooks"), { recursive: true });
    writeFileSync(
      join(copy, "handlers/identity/domain/webhooks/cross.ts"),
      [
        'import { emailWebhookEvents } from "../../../email/domain/webhooks.ts";',
        'import type { EmailDeps } from "../../../email/email-handlers.ts";',
        'import { createWebhookEngine } from "../../../../server/webhooks/engine.ts";',
        'import { identityEvents } from "../events.ts";',
      ].join("\n"),
    );
    mkdirSync(join(copy, "handlers/email/storage"), { recursive: true });
    writeFileSync(
      join(copy, "handlers/email/storage/cross.ts"),
      [
        'import { userQueries } from "../../identity/storage/users.ts";',
        'export * from "../../repository/shared/tokens.ts";',
        'import { emailQueries } from "./messages.ts";',
      ].join("\n"),
    );
    writeFileSync(join(copy, "handlers/repository/cross.ts"), 'const m = await import("../identity/token.ts");\n');
    const cross = checkLayers(copy).filter((v) => /cross\.ts$/.test(v.file));
    expect(cross.map((v) => `${v.file} ${v.specifier}`).sort()).toEqual(
      [
        "handlers/identity/domain/webhooks/cross.ts ../../../email/domain/webhooks.ts",
        "handlers/identity/domain/webhooks/cross.ts ../../../email/email-handlers.ts",
        "handlers/email/storage/cross.ts ../../identity/storage/users.ts",
        "handlers/email/storage/cross.ts ../../repository/shared/tokens.ts",
        "handlers/repository/cross.ts ../identity/token.ts",
      ].sort(),
    );
    for (const v of cross) expect(v.why).toMatch(/another service \(handlers\/(identity|email|repository)\/\)/);
    // The domain module importing the email handler module breaks two rules, reported once with both.
    expect(cross.find((v) => v.specifier === "../../../email/email-handlers.ts")!.why).toMatch(/handler layer; another service/);
  });

  it("the SQLite or PostgreSQL statement layer imported outside a store's implementation for that engine fails, naming each import", () => {
    mkdirSync(join(copy, "handlers/email/storage/sqlite"), { recursive: true });
    mkdirSync(join(copy, "handlers/email/storage/postgres"), { recursive: true });
    const sqlite = 'import { withPrepared } from "../../../../server/storage/sqlite/statements.ts";';
    const postgres = 'import { pgPrepared } from "../../../../server/storage/postgres/statements.ts";';
    writeFileSync(join(copy, "handlers/email/storage/sqlite/keys.ts"), `${sqlite}\n${postgres}\n`);
    writeFileSync(join(copy, "handlers/email/storage/postgres/keys.ts"), `${sqlite}\n${postgres}\n`);
    writeFileSync(
      join(copy, "handlers/email/storage/engines.ts"),
      [
        'import { groupCommit } from "../../../server/storage/sqlite/group-commit.ts";',
        'import { pgPrepared } from "../../../server/storage/postgres/statements.ts";',
        'import { defineTable } from "../../../server/storage/schema.ts";',
      ].join("\n"),
    );
    writeFileSync(join(copy, "handlers/email/engines.ts"), 'import { withPrepared } from "../../server/storage/sqlite/statements.ts";\n');
    const found = checkLayers(copy).filter((v) => /engines\.ts$|storage\/(sqlite|postgres)\/keys\.ts$/.test(v.file));
    expect(found.map((v) => `${v.file} ${v.specifier}`).sort()).toEqual(
      [
        "handlers/email/storage/sqlite/keys.ts ../../../../server/storage/postgres/statements.ts",
        "handlers/email/storage/postgres/keys.ts ../../../../server/storage/sqlite/statements.ts",
        "handlers/email/storage/engines.ts ../../../server/storage/sqlite/group-commit.ts",
        "handlers/email/storage/engines.ts ../../../server/storage/postgres/statements.ts",
        "handlers/email/engines.ts ../../server/storage/sqlite/statements.ts",
      ].sort(),
    );
    for (const v of found) expect(v.why).toMatch(/(sqlite|postgres) statements: only a store's/);
  });

  it("the dialect helpers imported anywhere but a storage/index.ts, a migration or server/storage fail, naming each import", () => {
    mkdirSync(join(copy, "handlers/repository/storage/migrations"), { recursive: true });
    const dialect = (up: number) => `import { isPostgres } from "${"../".repeat(up)}server/storage/dialect.ts";\n`;
    writeFileSync(join(copy, "handlers/repository/storage/index.ts"), dialect(3));
    writeFileSync(join(copy, "handlers/repository/storage/migrations/0099-later.ts"), dialect(4));
    writeFileSync(join(copy, "handlers/repository/storage/builds2.ts"), dialect(3));
    writeFileSync(join(copy, "handlers/repository/domain/dialect-leak.ts"), dialect(3));
    writeFileSync(join(copy, "handlers/repository/dialect-leak.ts"), dialect(2));
    const found = checkLayers(copy).filter((v) => v.specifier.endsWith("server/storage/dialect.ts"));
    expect(found.map((v) => v.file).sort()).toEqual(
      [
        "handlers/repository/storage/builds2.ts",
        "handlers/repository/domain/dialect-leak.ts",
        "handlers/repository/dialect-leak.ts",
      ].sort(),
    );
    for (const v of found) expect(v.why).toMatch(/dialect helpers/);
  });

  it("a storage module importing a domain module fails, naming the import; the allow-listed imports still break the rule", () => {
    mkdirSync(join(copy, "handlers/identity/storage/sqlite"), { recursive: true });
    writeFileSync(join(copy, "handlers/identity/storage/up.ts"), 'import { grantEndsAt } from "../domain/oauth/grant-end.ts";\n');
    writeFileSync(join(copy, "handlers/identity/storage/sqlite/up.ts"), 'import type { Session } from "../../domain/oauth/sessions.ts";\n');
    const found = checkLayers(copy).filter((v) => /storage\/(sqlite\/)?up\.ts$/.test(v.file));
    expect(found.map((v) => `${v.file} ${v.specifier}`).sort()).toEqual(
      [
        "handlers/identity/storage/sqlite/up.ts ../../domain/oauth/sessions.ts",
        "handlers/identity/storage/up.ts ../domain/oauth/grant-end.ts",
      ].sort(),
    );
    for (const v of found) expect(v.why).toMatch(/storage never imports the domain/);
  });

  it("a tooling folder importing another (conformance/, scripts/, bench/, fuzz/) or support/ importing the project fails, naming each import; support/ and npm packages pass", () => {
    const files: Record<string, string[]> = {
      "conformance/harness/leak.ts": [
        'import { freePort } from "../../scripts/lib/free-port.ts";',
        'import { contractDocuments } from "../../support/contract/documents.ts";',
        'import { createIdentityService } from "../../handlers/identity/service.ts";',
        'import { request } from "./http.ts";',
      ],
      "scripts/leak.ts": [
        'import type { Observation } from "../conformance/harness/contract-recorder.ts";',
        'import { freePort } from "../support/free-port.ts";',
        'import { loadConfig } from "../server/config.ts";',
      ],
      "bench/leak.ts": ['const m = await import("../scripts/prism.ts");', 'import { freePort } from "../support/free-port.ts";'],
      "fuzz/leak.ts": ['export * from "../conformance/harness/api.ts";'],
      "support/leak.ts": [
        'import { loadConfig } from "../server/config.ts";',
        'import { request } from "../conformance/harness/http.ts";',
        'import { mediaType } from "./contract/documents.ts";',
        'import getPort from "get-port";',
        'import { readFileSync } from "node:fs";',
      ],
    };
    for (const [file, lines] of Object.entries(files)) {
      mkdirSync(join(copy, file, ".."), { recursive: true });
      writeFileSync(join(copy, file), lines.join("\n"));
    }
    const found = checkLayers(copy).filter((v) => /^(conformance|scripts|bench|fuzz|support)\//.test(v.file));
    expect(found.map((v) => `${v.file} ${v.specifier}`).sort()).toEqual(
      [
        "conformance/harness/leak.ts ../../scripts/lib/free-port.ts",
        "scripts/leak.ts ../conformance/harness/contract-recorder.ts",
        "bench/leak.ts ../scripts/prism.ts",
        "fuzz/leak.ts ../conformance/harness/api.ts",
        "support/leak.ts ../server/config.ts",
        "support/leak.ts ../conformance/harness/http.ts",
      ].sort(),
    );
    for (const v of found)
      expect(v.why).toMatch(
        v.file.startsWith("support/") ? /support\/ imports nothing of the project/ : /tooling: .* imports no other tooling folder/,
      );
  });

  it("a benchmark reaching past a service's factory, storage index or domain areas fails, naming each import", () => {
    expect(checkLayers(root).filter((v) => v.file.startsWith("bench/"))).toEqual([]);
    mkdirSync(join(copy, "bench"), { recursive: true });
    writeFileSync(
      join(copy, "bench/leak.ts"),
      [
        'import { createIdentityService } from "../handlers/identity/service.ts";',
        'import { createIdentityStorage } from "../handlers/identity/storage/index.ts";',
        'import { identitySignature } from "../handlers/identity/domain/webhooks/webhooks-area.ts";',
        'import { createWebhookStorage } from "../server/webhooks/storage/index.ts";',
        'import { openDatabase } from "../server/storage/db.ts";',
        'import { seq } from "./scale/sql.ts";',
        'import { knexOrganizations } from "../handlers/identity/storage/organizations.ts";',
        'import { migrations } from "../handlers/email/storage/migrations/index.ts";',
        'import { sqliteGrants } from "../handlers/identity/storage/sqlite/grants.ts";',
        'import { createUsers } from "../handlers/identity/domain/accounts/users.ts";',
        'import { historyQuery } from "../server/webhooks/storage/attempt-history.ts";',
        'import { isPostgres } from "../server/storage/dialect.ts";',
        'import { withPrepared } from "../server/storage/sqlite/statements.ts";',
      ].join("\n"),
    );
    const found = checkLayers(copy).filter((v) => v.file.startsWith("bench/"));
    expect(found.map((v) => `${v.file} ${v.specifier}`).sort()).toEqual(
      [
        "bench/leak.ts ../handlers/identity/storage/organizations.ts",
        "bench/leak.ts ../handlers/email/storage/migrations/index.ts",
        "bench/leak.ts ../handlers/identity/storage/sqlite/grants.ts",
        "bench/leak.ts ../handlers/identity/domain/accounts/users.ts",
        "bench/leak.ts ../server/webhooks/storage/attempt-history.ts",
        "bench/leak.ts ../server/storage/dialect.ts",
        "bench/leak.ts ../server/storage/sqlite/statements.ts",
      ].sort(),
    );
    expect(found.find((v) => v.specifier.endsWith("dialect.ts"))!.why).toMatch(/dialect helpers/);
    expect(found.find((v) => v.specifier.endsWith("sqlite/statements.ts"))!.why).toMatch(/sqlite statements/);
    expect(found.find((v) => v.specifier.endsWith("organizations.ts"))!.why).toMatch(/benchmark: a service only through/);
    expect(found.find((v) => v.specifier.endsWith("attempt-history.ts"))!.why).toMatch(
      /benchmark: a storage folder only through its index/,
    );
  });
});
