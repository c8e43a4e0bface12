/** The configuration, for the entry points: a bad variable prints the message naming each one and exits 2. */
import { ConfigError, loadConfig, type Config } from "../server/config.ts";

export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
}
