/**
 * Shared worlds: what a conformance file sets up before its tests, in one call of its `beforeAll`
 * (`close()` in its `afterAll`). Each world starts the target (harness/targets.ts) and provisions
 * what the file asks for, through the same fixtures every file used by hand before: applications,
 * users, an organization and its admin's dashboard token (identity-fixtures.ts), the repository
 * user's access token, typed clients (api.ts) that carry the right credentials.
 */
import { afterAll, beforeAll } from "vitest";
import { emailApi, expectStatus, identityApi, repositoryApi, type EmailApi, type IdentityApi, type RepositoryApi } from "./api.ts";
import { adminToken, createApp, createUser, type Organization, type TestApp } from "./identity-fixtures.ts";
import {
  emailTarget,
  identityTarget,
  repositoryTarget,
  type Credentials,
  type EmailTarget,
  type IdentityTarget,
  type RepositoryTarget,
} from "./targets.ts";

/**
 * The world of a test file, made in the file's `beforeAll` and closed in its `afterAll`: called at
 * the top level, `const world = fileWorld(() => identityWorld({ … }))` (inside a `describe`, the
 * world of that block). The object is handed back at once and filled in when the world is made, so
 * tests and hooks read its fields (`world.target.url`, `world.app`); code that runs while the file
 * is collected (test titles, `it.each` tables) must not. A world that failed to start leaves it
 * empty, and the file's tests fail with the reason.
 */
export function fileWorld<W extends { close(): Promise<void> }>(make: () => Promise<W>, options: { skippedFile?: boolean } = {}): W {
  const world = {} as W;
  beforeAll(async () => {
    // A file that skips every test here (skipFileOnDeployment) makes no world it cannot have.
    if (options.skippedFile) return;
    Object.assign(world, await make());
  });
  afterAll(async () => {
    await (world as Partial<W>).close?.();
  });
  return world;
}

type AppOptions = NonNullable<Parameters<typeof createApp>[1]>;
type UserOptions = NonNullable<Parameters<typeof createUser>[1]>;
export type TestUser = Awaited<ReturnType<typeof createUser>>;

export interface IdentityWorldOptions {
  /** Configuration of the in-process service (ignored on a deployment). */
  env?: Record<string, string>;
  /**
   * Applications by name, each of a fresh organization (createApp); a function when they depend on
   * the target. The world has each under its name (`{ target, app, pub } = await identityWorld(…)`).
   */
  apps?: Record<string, AppOptions | ((target: IdentityTarget) => AppOptions)>;
  /** A registered user with a password (`true`, or the names to give it). */
  user?: true | UserOptions;
  /** An organization and its admin's dashboard token (X-ID-ADM-1). */
  admin?: true;
}

/** The world's own fields; the applications stand beside them, under the names the file gave them. */
interface IdentityWorldBase {
  target: IdentityTarget;
  user?: TestUser;
  organization?: Organization;
  adminToken?: string;
  api(token?: string): IdentityApi;
  close(): Promise<void>;
}

export type IdentityWorld<O extends IdentityWorldOptions> = { [K in keyof O["apps"]]: TestApp } & {
  target: IdentityTarget;
  user: O["user"] extends true | UserOptions ? TestUser : undefined;
  organization: O["admin"] extends true ? Organization : undefined;
  adminToken: O["admin"] extends true ? string : undefined;
  /** A typed client of the service, with the admin's token when the world has one (or the token given). */
  api(token?: string): IdentityApi;
  close(): Promise<void>;
};

const WORLD_FIELDS = new Set<string>([
  "target",
  "user",
  "organization",
  "adminToken",
  "api",
  "close",
] satisfies (keyof IdentityWorldBase)[]);

/** The identity service with the applications, user and admin the file asks for, made in that order. */
export async function identityWorld<const O extends IdentityWorldOptions>(options: O = {} as O): Promise<IdentityWorld<O>> {
  const target = await identityTarget(options.env ? { env: options.env } : {});
  const apps: Record<string, TestApp> = {};
  for (const [name, spec] of Object.entries(options.apps ?? {})) {
    if (WORLD_FIELDS.has(name)) throw new Error(`identityWorld: an application cannot be called "${name}" (a field of the world)`);
    apps[name] = await createApp(target, typeof spec === "function" ? spec(target) : spec);
  }
  const user = options.user ? await createUser(target, options.user === true ? {} : options.user) : undefined;
  const organization = options.admin ? await target.createOrganization!() : undefined;
  const token = organization ? await adminToken(target, organization) : undefined;
  return {
    ...apps,
    target,
    user,
    organization,
    adminToken: token,
    api: (bearer = token) => identityApi(target, bearer === undefined ? {} : { token: bearer }),
    close: () => target.close(),
  } as IdentityWorld<O>;
}

export interface RepositoryWorld {
  target: RepositoryTarget;
  /** The access token of `target.user`, from `POST /auth/login` (when the world was asked to log in). */
  token: string;
  /** A typed client with that token (or the token given). */
  api(token?: string): RepositoryApi;
  close(): Promise<void>;
}

/** Signs in through `POST /auth/login` and returns the access token. */
export async function repositoryLogin(target: RepositoryTarget, user: Credentials = target.user): Promise<string> {
  const tokens = await expectStatus(repositoryApi(target).POST("/auth/login", { body: user }), 200, "login");
  return tokens.accessToken;
}

/** The repository service and, with `login`, its user's access token. */
export async function repositoryWorld(options: { env?: Record<string, string>; login?: boolean } = {}): Promise<RepositoryWorld> {
  const target = await repositoryTarget(options.env ? { env: options.env } : {});
  const token = options.login ? await repositoryLogin(target) : "";
  return {
    target,
    token,
    api: (bearer = token) => repositoryApi(target, bearer ? { token: bearer } : {}),
    close: () => target.close(),
  };
}

export interface PlatformWorld {
  repository: RepositoryTarget;
  identity: IdentityTarget;
  email: EmailTarget;
  close(): Promise<void>;
}

/** The three services at once, for the files that check a rule of the whole platform; `env` configures each in-process service. */
export async function platformWorld(
  env: { repository?: Record<string, string>; identity?: Record<string, string>; email?: Record<string, string> } = {},
): Promise<PlatformWorld> {
  const [repository, identity, email] = await Promise.all([
    repositoryTarget(env.repository ? { env: env.repository } : {}),
    identityTarget(env.identity ? { env: env.identity } : {}),
    emailTarget(env.email ? { env: env.email } : {}),
  ]);
  return {
    repository,
    identity,
    email,
    close: async () => {
      await Promise.all([repository.close(), identity.close(), email.close()]);
    },
  };
}

export interface EmailWorld {
  target: EmailTarget;
  /** A typed client with the full-access API key (or the key given). */
  api(apiKey?: string): EmailApi;
  close(): Promise<void>;
}

/** The email service and a typed client with its full-access API key. */
export async function emailWorld(options: Parameters<typeof emailTarget>[0] = {}): Promise<EmailWorld> {
  const target = await emailTarget(options);
  return { target, api: (apiKey = target.apiKey) => emailApi(target, { token: apiKey }), close: () => target.close() };
}
