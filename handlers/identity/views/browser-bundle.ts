/**
 * A page script bundled from web/ by esbuild when the service starts, and kept: it is never
 * committed, so what runs is always the source, and there is no build step to forget. esbuild is
 * deterministic and works offline.
 */
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** The bundle of `entry` (a URL of a module in web/) as one ES module, built on the first call and kept. */
export function browserBundle(entry: URL): () => Promise<string> {
  let bundle: Promise<string> | undefined;
  return () => {
    bundle ??= build({
      entryPoints: [fileURLToPath(entry)],
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "es2022",
      charset: "utf8",
      legalComments: "none",
      logLevel: "silent",
    }).then((result) => result.outputFiles[0]!.text);
    // A failed build is not kept: the next request tries again (and answers 500 again if it fails).
    bundle.catch(() => (bundle = undefined));
    return bundle;
  };
}
