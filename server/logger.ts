/** Structured logs (pino). Request bodies are never logged; known secret-bearing keys are redacted anywhere. */
import { pino, type Logger } from "pino";

const SECRET_PATHS = [
  "password",
  "*.password",
  "token",
  "*.token",
  "accessToken",
  "*.accessToken",
  "refreshToken",
  "*.refreshToken",
  "agentToken",
  "*.agentToken",
  "secret",
  "*.secret",
  "client_secret",
  "*.client_secret",
  "code_verifier",
  "*.code_verifier",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "headers.cookie",
  "*.headers.cookie",
];

export function createLogger(level: string, name?: string): Logger {
  return pino({ level, name, redact: { paths: SECRET_PATHS, censor: "[redacted]" } });
}

export type { Logger };
