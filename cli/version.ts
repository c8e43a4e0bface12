/** rb's own version: the one of its package (`cli/package.json`), which `npm pack` stamps on the tarball. */
import cliPackage from "./package.json" with { type: "json" };

export const VERSION: string = cliPackage.version;
