/**
 * The configuration in sections (server/config.ts, handlers/<service>/config.ts, app/load-config.ts):
 * the platform's variables and each service's are read as one, so one start names every bad
 * variable, the rules between variables included, and never shows a secret's value.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { loadConfig } from "../../app/load-config.ts";
import { SERVICES } from "../../app/services.ts";
import { defineSection, variable } from "../../server/config-schema.ts";
import { configRefusal } from "../support/config-refusal.ts";
import { readConfig } from "../../server/config.ts";
import { emailConfig } from "../../handlers/email/config.ts";
import { identityConfig } from "../../handlers/identity/config.ts";
import { repositoryConfig } from "../../handlers/repository/config.ts";

describe("configuration sections", () => {
  it("one message names each bad variable of every section and each broken rule between variables, and never a secret's value", () => {
    const text = configRefusal({
      BODY_LIMIT_BYTES: "12", // platform
      SHUTDOWN_DELAY_MS: "9000", // platform rule: shorter than the timeout
      SHUTDOWN_TIMEOUT_MS: "8000",
      IDENTITY_TOKEN_KEYS: "sorted", // identity
      LOGIN_WINDOW_SECONDS: "7200",
      IDENTITY_RETENTION_THROTTLE_SECONDS: "3600", // identity rule, against a platform variable
      EMAIL_RETENTION_MESSAGES_SECONDS: "60", // email rule
      EMAIL_DKIM_DOMAIN: "example.com", // email rule: all three or none
      CORS_ORIGINS: "*", // repository
      METRICS_TOKEN: "short-secret",
      DATABASE_URL: "mysql://admin:db-password@db/x",
      EMAIL_SMTP_URL: "relay with smtp-password",
      IDENTITY_SOCIAL_PROVIDERS: '[{"id":"gh","clientSecret":"provider-secret"}]',
    });
    for (const name of [
      "BODY_LIMIT_BYTES",
      "SHUTDOWN_DELAY_MS: must be shorter than SHUTDOWN_TIMEOUT_MS",
      "IDENTITY_TOKEN_KEYS",
      "IDENTITY_RETENTION_THROTTLE_SECONDS: must be at least 7200",
      "EMAIL_RETENTION_MESSAGES_SECONDS: must be at least 86400",
      "EMAIL_DKIM_SELECTOR: is required when DKIM is configured",
      "EMAIL_DKIM_PRIVATE_KEY_FILE: is required when DKIM is configured",
      "CORS_ORIGINS",
      "METRICS_TOKEN",
      "DATABASE_URL",
      "EMAIL_SMTP_URL",
      "IDENTITY_SOCIAL_PROVIDERS",
    ])
      expect(text).toContain(`  ${name}`);
    expect(text).toContain('(got "12")');
    for (const secret of ["short-secret", "db-password", "smtp-password", "provider-secret"]) expect(text).not.toContain(secret);
  });

  it("a rule names the variable at fault: the development sink with a relay is EMAIL_TRANSPORT's problem", () => {
    const text = configRefusal({ EMAIL_TRANSPORT: "sink", EMAIL_SMTP_URL: "smtp://relay.example.com:587" });
    expect(text).toContain("  EMAIL_TRANSPORT: sink and EMAIL_SMTP_URL exclude each other");
    expect(text).not.toContain("  EMAIL_SMTP_URL:");
  });

  it("a service's section read alone comes with the platform's variables; a variable two sections declare is refused", () => {
    const repository = readConfig({ CORS_ORIGINS: "https://app.example.com", LOG_LEVEL: "warn" }, [repositoryConfig]);
    expect(repository.CORS_ORIGINS).toEqual(["https://app.example.com"]);
    expect(repository.LOG_LEVEL).toBe("warn");
    expect(repository.SHUTDOWN_DELAY_MS).toBe(5000);
    const twice = defineSection({ title: "t", summary: "s", variables: { HOST: variable(z.string().optional(), { description: "d" }) } });
    expect(() => readConfig({}, [twice])).toThrow("HOST is declared by two configuration sections");
    expect(() => readConfig({}, [identityConfig, emailConfig, repositoryConfig])).not.toThrow();
  });

  it("each service's listener: <NAME>_PORT, and <NAME>_PUBLIC_URL or http://HOST:PORT, without a trailing slash", () => {
    const config = loadConfig({ HOST: "10.1.2.3", EMAIL_PORT: "4003", IDENTITY_PUBLIC_URL: "https://id.example.com/" });
    expect(SERVICES.identity.listener(config)).toEqual({ port: 3001, portVariable: "IDENTITY_PORT", publicUrl: "https://id.example.com" });
    expect(SERVICES.repository.listener(config)).toEqual({
      port: 3002,
      portVariable: "REPOSITORY_PORT",
      publicUrl: "http://10.1.2.3:3002",
    });
    expect(SERVICES.email.listener(config)).toEqual({ port: 4003, portVariable: "EMAIL_PORT", publicUrl: "http://10.1.2.3:4003" });
  });
});
