/**
 * Builds the installable `rb`: `npm pack` in cli/ runs this as its `prepack` script. esbuild bundles
 * cli/run.ts and everything it imports (the TypeScript sources, the contract's types erased, and the
 * npm packages the CLI uses at run time) into one JavaScript file, cli/dist/rb.js, which the package's
 * `bin` names. One file with no dependencies installs without the registry and runs on the Node the
 * user has (`engines` in cli/package.json, and `target` below): in the checkout Node strips the types
 * itself, but it refuses to do that for files under node_modules, which is where an installed package
 * lives. The licences of the bundled packages go beside it, in dist/THIRD-PARTY-LICENSES.txt.
 *
 *   cd cli && npm pack          (or: node scripts/build-cli.ts, to build cli/dist/ alone)
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "cli");
const dist = join(cli, "dist");
const { engines } = JSON.parse(readFileSync(join(cli, "package.json"), "utf8")) as { engines: { node: string } };

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist);
const result = await build({
  absWorkingDir: root,
  entryPoints: [join(cli, "run.ts")],
  outfile: join(dist, "rb.js"),
  banner: { js: "#!/usr/bin/env node" },
  bundle: true,
  platform: "node",
  format: "esm",
  // The oldest Node the package's `engines` admits (">=20" → node20): syntax newer than that is lowered.
  target: `node${/\d+/.exec(engines.node)![0]}`,
  metafile: true,
  logLevel: "warning",
});

/** Each npm package the bundle took code from, with its licence text. */
const packages = new Set<string>();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (match) packages.add(match[1]!);
}
const notices = [...packages].sort().map((name) => {
  const dir = join(root, "node_modules", name);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string; license?: string };
  const file = ["LICENSE", "LICENSE.md", "LICENSE.txt", "license"].map((f) => join(dir, f)).find((f) => existsSync(f));
  return [`${name} ${manifest.version} (${manifest.license ?? "see its package"})`, "", file ? readFileSync(file, "utf8").trim() : ""].join(
    "\n",
  );
});
writeFileSync(join(dist, "THIRD-PARTY-LICENSES.txt"), `rb bundles code of these npm packages.\n\n${notices.join("\n\n---\n\n")}\n`);
