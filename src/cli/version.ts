/** The version `openfief --version` prints: the package's, compiled into the bundle. */
import pkg from "../../package.json" with { type: "json" };

/** `0.1.0`. */
export const VERSION: string = pkg.version;
