/**
 * deploy/: the Dockerfile, the compose file, nginx's configuration and the systemd unit, checked as far
 * as a machine with no container engine and no systemd as its init allows, and against the rest of the
 * project (server/config.ts's schema, the proxy settings scripts/nginx.sh runs the conformance suite
 * behind, and the start path test/deploy/start.test.ts runs), so that none of them drifts:
 * - the Dockerfile: hadolint (scripts/hadolint.sh installs it), and what the image must be;
 * - the compose file: loaded as `docker compose config` loads it (compose-go: the Compose Specification's
 *   schema, interpolation, references; scripts/compose-config.sh builds it), then its services, settings,
 *   healthchecks and stop timeouts against the config schema and the image;
 * - nginx.conf: `nginx -t` (Debian's nginx, installed by scripts/nginx.sh when missing) on a copy whose
 *   upstream names are 127.0.0.1 and without `resolve` (nginx 1.27.3 and later; Debian 12's is 1.22),
 *   and the headers of every location against scripts/nginx.sh's;
 * - the unit: `systemd-analyze verify` and `systemd-analyze security --offline`, and its settings.
 *
 * What is not done here: building and running the image, and compose's own `up`
 * (scripts/container-check.sh builds and runs the image with buildah and podman where they can run); the
 * unit is verified, not started under systemd. A check whose tool cannot be had here is skipped, saying why.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../app/load-config.ts";
import { isTrustedProxy } from "../../server/http/trusted-proxy.ts";
import { DOCKERFILE, finalStage, readInstructions, ROOT } from "./dockerfile.ts";

const scratch = mkdtempSync(join(tmpdir(), "deploy-files-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const image = finalStage(DOCKERFILE);
const defaults = loadConfig({});
const SERVICES = ["identity", "repository", "email"] as const;
const DEFAULT_PORTS = { identity: defaults.IDENTITY_PORT, repository: defaults.REPOSITORY_PORT, email: defaults.EMAIL_PORT };
/** Node's own variables, which the config schema does not list. */
const NODE_VARIABLES = ["NODE_ENV"];

/** Whether the config schema knows `name` (it drops what it does not know). */
const isConfigVariable = (name: string, value: string) => name in loadConfig({ [name]: value });

/** A command line's words that would put a package manager or a shell between the supervisor and node. */
const wrappers = (argv: string[]) => argv.filter((a) => /(^|\/)(npm|npx|sh|bash|dash|tsx)$/.test(a) || a === "-c" || a === "--import");

/** Seconds of a duration as compose and systemd write it (`35s`, `1m30s`, `35`). */
function seconds(duration: string | number): number {
  if (typeof duration === "number") return duration;
  let total = 0;
  for (const [, n, unit] of duration.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|min)?/g))
    total += Number(n) * ({ ms: 0.001, m: 60, min: 60, h: 3600 }[unit ?? ""] ?? 1);
  return total;
}

describe("deploy/Dockerfile", () => {
  it("passes hadolint", () => {
    const run = spawnSync("bash", [join(ROOT, "scripts/hadolint.sh"), "--no-color", DOCKERFILE], { encoding: "utf8", timeout: 240_000 });
    expect(run.status, `hadolint:\n${run.stdout}${run.stderr}`).toBe(0);
  }, 300_000);

  it("is multi-stage on the official Node 24 slim image, and installs the production dependencies only", () => {
    const froms = readInstructions(DOCKERFILE).filter((i) => i.keyword === "FROM");
    expect(froms.length).toBeGreaterThanOrEqual(2);
    expect(image.from).toMatch(/^node:24[\w.-]*-slim$/);
    const runs = readInstructions(DOCKERFILE)
      .filter((i) => i.keyword === "RUN")
      .map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci --omit=dev --ignore-scripts\b/.test(r))).toBe(true);
    expect(image.copies.map(([source]) => source)).not.toContain("node_modules");
  });

  it("runs node itself as PID 1, as a user other than root, on the chosen runtime", () => {
    expect(image.entrypoint).toEqual(["node"]);
    expect(image.cmd).toEqual(["app/main.ts"]);
    expect(wrappers([...image.entrypoint, ...image.cmd])).toEqual([]);
    expect(image.user).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
    expect(image.stopSignal ?? "SIGTERM").toBe("SIGTERM");
  });

  it("listens on every interface, keeps DATA_DIR in a volume, and exposes the services' ports", () => {
    expect(image.env.HOST).toBe("0.0.0.0");
    expect(image.volumes).toContain(image.env.DATA_DIR);
    for (const [name, value] of Object.entries(image.env))
      expect(NODE_VARIABLES.includes(name) || isConfigVariable(name, value), `ENV ${name} is a configuration variable`).toBe(true);
    expect(() => loadConfig(image.env)).not.toThrow();
    expect(image.exposed).toEqual(expect.arrayContaining([...Object.values(DEFAULT_PORTS), defaults.EMAIL_INBOUND_SMTP_PORT]));
  });

  it("checks /ready in its HEALTHCHECK, with a script the image holds", () => {
    const check = image.healthcheck!;
    expect(check.command[0]).toBe("node");
    const script = check.command[1]!;
    expect(image.copies.some(([source]) => source === script)).toBe(true);
    expect(readFileSync(join(ROOT, script), "utf8")).toMatch(/\/ready\b/);
    expect(seconds(check.options["start-period"] ?? "0s")).toBeGreaterThan(0);
  });

  it("copies only what .dockerignore lets into the build context, and that is in the checkout", () => {
    const lines = readFileSync(join(ROOT, ".dockerignore"), "utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
    expect(lines[0], ".dockerignore leaves everything out first (an allow-list)").toBe("*");
    const allowed = lines.filter((l) => l.startsWith("!")).map((l) => l.slice(1));
    const copied = [...new Set([...image.copies.map(([s]) => s), "package.json", "package-lock.json"])];
    for (const source of copied) {
      expect(
        allowed.some((a) => source === a || source.startsWith(`${a}/`)),
        `${source} is let into the build context`,
      ).toBe(true);
      expect(existsSync(join(ROOT, source)), `${source} exists`).toBe(true);
    }
  });
});

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[] | null;
  environment?: Record<string, string | null>;
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
  healthcheck?: { disable?: boolean; test?: string[] };
  ports?: Array<{ target: number; published: string }>;
  networks?: Record<string, { ipv4_address?: string } | null>;
  volumes?: Array<{ source: string; target: string }>;
}

/** deploy/compose.yaml resolved by compose-go with `env` as the environment; the result or the error. */
function composeConfig(env: Record<string, string>): {
  status: number | null;
  project?: { services: Record<string, ComposeService> };
  stderr: string;
} {
  const run = spawnSync("bash", [join(ROOT, "scripts/compose-config.sh"), join(ROOT, "deploy/compose.yaml")], {
    encoding: "utf8",
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? scratch, ...env },
    timeout: 600_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return {
    status: run.status,
    stderr: run.stderr,
    ...(run.status === 0 ? { project: JSON.parse(run.stdout) as { services: Record<string, ComposeService> } } : {}),
  };
}

describe("deploy/compose.yaml", () => {
  const secrets = {
    POSTGRES_PASSWORD: "compose-check-password",
    KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64"),
    METRICS_TOKEN: "compose-check-metrics-token-0123456789",
  };
  let loaded: ReturnType<typeof composeConfig>;
  const services = () => loaded.project!.services;
  const instances = () => Object.entries(services()).filter(([, s]) => s.build?.dockerfile === "deploy/Dockerfile" && !s.command);

  // The first run builds scripts/compose-config.sh's binary (once per machine).
  beforeAll(() => {
    loaded = composeConfig(secrets);
  }, 600_000);

  it("loads as `docker compose config` loads it (schema, interpolation, references)", () => {
    expect(loaded.status, loaded.stderr).toBe(0);
  });

  it("refuses to start without each secret, naming it", () => {
    for (const name of Object.keys(secrets)) {
      const without = composeConfig({ ...secrets, [name]: "" });
      expect(without.status, name).toBe(1);
      expect(without.stderr).toContain(`required variable ${name} is missing a value`);
    }
  }, 120_000);

  it("has PostgreSQL, a one-shot migrate before the instances, two instances of the image, and nginx in front", () => {
    const s = services();
    expect(s.postgres?.image).toMatch(/^postgres:\d+/);
    expect(s.postgres?.healthcheck?.test).toEqual(expect.arrayContaining(["pg_isready"]));
    expect(s.migrate?.build?.dockerfile).toBe("deploy/Dockerfile");
    expect(s.migrate?.command).toEqual(["app/migrate.ts"]);
    expect(s.migrate?.depends_on?.postgres?.condition).toBe("service_healthy");
    expect(s.migrate?.healthcheck?.disable).toBe(true);
    expect(instances().length).toBe(2);
    for (const [name, instance] of instances()) {
      expect(instance.depends_on?.migrate?.condition, name).toBe("service_completed_successfully");
      // No healthcheck of its own: the image's HEALTHCHECK (/ready) is the one compose waits on.
      expect(instance.healthcheck, name).toBeUndefined();
      expect(s.nginx?.depends_on?.[name]?.condition).toBe("service_healthy");
    }
  });

  it("gives every instance settings the config schema accepts, each a variable it knows", () => {
    const s = services();
    const postgres = s.postgres!.environment!;
    for (const [name, instance] of [...instances(), ["migrate", s.migrate!] as const]) {
      const env = instance.environment as Record<string, string>;
      for (const [variable, value] of Object.entries(env))
        expect(isConfigVariable(variable, value), `${name}: ${variable} is a configuration variable`).toBe(true);
      const config = loadConfig({ ...image.env, ...env });
      const database = new URL(config.DATABASE_URL!);
      expect(database.hostname, `${name}: DATABASE_URL names the postgres service`).toBe("postgres");
      expect([database.username, decodeURIComponent(database.password), database.pathname.slice(1)]).toEqual([
        postgres.POSTGRES_USER,
        postgres.POSTGRES_PASSWORD,
        postgres.POSTGRES_DB,
      ]);
      expect(config.KEY_ENCRYPTION_KEY, `${name}: KEY_ENCRYPTION_KEY is set`).toBeTruthy();
    }
  });

  it("lets a drain finish before compose kills an instance, and trusts nginx's address only", () => {
    const s = services();
    const nginxAddress = Object.values(s.nginx!.networks ?? {})[0]?.ipv4_address;
    expect(nginxAddress).toBeTruthy();
    for (const [name, instance] of instances()) {
      const config = loadConfig({ ...image.env, ...(instance.environment as Record<string, string>) });
      expect(seconds(instance.stop_grace_period ?? "10s") * 1000, `${name}: stop_grace_period > SHUTDOWN_TIMEOUT_MS`).toBeGreaterThan(
        config.SHUTDOWN_TIMEOUT_MS,
      );
      expect(isTrustedProxy(config.TRUST_PROXY, nginxAddress)).toBe(true);
      expect(isTrustedProxy(config.TRUST_PROXY, "172.28.0.99"), "another container on the network is not trusted").toBe(false);
    }
  });

  it("publishes through nginx exactly the ports of the public URLs, each to its service's upstream", () => {
    const s = services();
    const [, instance] = instances()[0]!;
    const config = loadConfig({ ...image.env, ...(instance.environment as Record<string, string>) });
    const nginx = readFileSync(join(ROOT, "deploy/nginx.conf"), "utf8");
    const published = (s.nginx!.ports ?? []).map((p) => Number(p.published));
    expect(s.nginx!.volumes?.some((v) => v.source.endsWith("deploy/nginx.conf") && v.target === "/etc/nginx/nginx.conf")).toBe(true);
    for (const service of SERVICES) {
      const publicUrl = new URL(config[`${service.toUpperCase() as Uppercase<typeof service>}_PUBLIC_URL`]!);
      const port = Number(publicUrl.port);
      expect(published).toContain(port);
      const server = new RegExp(`listen ${port};\\s*location / \\{\\s*proxy_pass http://${service};`);
      expect(nginx, `nginx listens on ${port} for ${service}`).toMatch(server);
      const upstream = nginx.match(new RegExp(`upstream ${service} \\{([^}]*)\\}`))?.[1] ?? "";
      const servers = [...upstream.matchAll(/server ([\w.-]+):(\d+)/g)].map((m) => `${m[1]}:${m[2]}`);
      expect(servers.sort(), `${service}'s upstream is every instance on its port`).toEqual(
        instances()
          .map(([name]) => `${name}:${DEFAULT_PORTS[service]}`)
          .sort(),
      );
    }
  });
});

describe("deploy/nginx.conf", () => {
  it("sets in every location the headers scripts/nginx.sh sets in front of the conformance deployments", () => {
    const tested = [
      ...readFileSync(join(ROOT, "scripts/nginx.sh"), "utf8").matchAll(/^\s*(proxy_set_header .*|proxy_http_version .*);$/gm),
    ].map((m) => m[1]!.replace(/\\\$/g, "$"));
    expect(tested.length).toBeGreaterThanOrEqual(5);
    const live = readFileSync(join(ROOT, "deploy/nginx.conf"), "utf8").replace(/^\s*#.*$/gm, "");
    const locations = [...live.matchAll(/location \/ \{([^}]*)\}/g)].map((m) => m[1]!);
    expect(locations.length).toBe(3);
    for (const location of locations) for (const line of tested) expect(location).toContain(`${line};`);
  });

  it("passes `nginx -t`", () => {
    const nginx = execFileSync("bash", [join(ROOT, "scripts/nginx.sh"), "install"], { encoding: "utf8" }).trim();
    const dir = join(scratch, "nginx");
    cpSync(join(ROOT, "deploy"), dir, { recursive: true });
    const conf = readFileSync(join(dir, "nginx.conf"), "utf8")
      .replace(/server instance-\d+:/g, "server 127.0.0.1:")
      .replace(/ resolve /g, " ")
      .replaceAll("/var/log/nginx/", `${dir}/`);
    writeFileSync(join(dir, "nginx.conf"), conf);
    const run = spawnSync(nginx, ["-t", "-p", dir, "-c", join(dir, "nginx.conf"), "-e", "stderr"], { encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
  }, 240_000);
});

describe("deploy/spec-first-platform.service", () => {
  const UNIT = join(ROOT, "deploy/spec-first-platform.service");
  const settings = new Map<string, string[]>();
  for (const line of readFileSync(UNIT, "utf8").split("\n")) {
    const m = line.match(/^([A-Za-z]+)=(.*)$/);
    if (m) settings.set(m[1]!, [...(settings.get(m[1]!) ?? []), m[2]!]);
  }
  const one = (key: string) => settings.get(key)?.at(-1);
  const environment = Object.fromEntries((settings.get("Environment") ?? []).map((e) => e.split("=", 2) as [string, string]));
  const systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].find((p) => existsSync(p));
  /** The unit with node at this test's node (verify checks that each command exists). */
  const unitHere = () => {
    const dir = mkdtempSync(join(scratch, "unit-"));
    const file = join(dir, "spec-first-platform.service");
    writeFileSync(file, readFileSync(UNIT, "utf8").replace(/^(ExecStart(?:Pre)?=)\S+/gm, `$1${process.execPath}`));
    return file;
  };

  it("runs node itself, the same command as the image, migrations first", () => {
    const start = one("ExecStart")!.split(/\s+/);
    const pre = one("ExecStartPre")!.split(/\s+/);
    expect(start[0]).toMatch(/^\/\S*\/node$/);
    expect(wrappers(start)).toEqual([]);
    expect(start.slice(1)).toEqual([...image.entrypoint.slice(1), ...image.cmd]);
    expect(pre.slice(1)).toEqual(["app/migrate.ts"]);
    expect(one("KillSignal")).toBe("SIGTERM");
  });

  it("waits longer than SHUTDOWN_TIMEOUT_MS before SIGKILL, and writes DATA_DIR only", () => {
    const config = loadConfig(environment);
    expect(seconds(one("TimeoutStopSec")!) * 1000).toBeGreaterThan(config.SHUTDOWN_TIMEOUT_MS);
    expect(one("ProtectSystem")).toBe("strict");
    expect(one("NoNewPrivileges")).toBe("yes");
    expect(one("ReadWritePaths")?.split(/\s+/)).toContain(config.DATA_DIR);
    expect(one("MemoryDenyWriteExecute"), "V8's JIT needs writable code pages").toBeUndefined();
    for (const [name, value] of Object.entries(environment))
      expect(NODE_VARIABLES.includes(name) || isConfigVariable(name, value), `Environment ${name} is a configuration variable`).toBe(true);
  });

  it.skipIf(!systemdAnalyze)("passes `systemd-analyze verify` (skipped where systemd-analyze is not installed)", () => {
    const run = spawnSync(systemdAnalyze!, ["verify", unitHere()], { encoding: "utf8" });
    expect(run.status).toBe(0);
    // Warnings (an unknown setting, a bad value) go to stderr with exit 0: none is allowed.
    expect(run.stderr.trim()).toBe("");
  });

  it.skipIf(!systemdAnalyze)(
    "is well confined by `systemd-analyze security --offline` (at most 2.0; skipped without systemd-analyze)",
    () => {
      const run = spawnSync(systemdAnalyze!, ["security", "--offline=yes", "--no-pager", unitHere()], { encoding: "utf8" });
      const exposure = Number(`${run.stdout}${run.stderr}`.match(/Overall exposure level for \S+: ([\d.]+)/)?.[1]);
      expect(exposure, run.stdout + run.stderr).toBeLessThanOrEqual(2.0);
    },
  );
});
