/**
 * The parsers of parse.ts with the config-schema checks loaded: what a module that parses plugins
 * and may meet any schema imports (docs/adr/0186). Importing config-schema.ts hands its checks to
 * schema-check.ts, so every parser checks schemas in full from then on.
 */
import "./config-schema.js";

export { parseManifest, parsePlugin, parseGrant, defaultSecretName, RESERVED_MOUNT_ROOTS, mountPathsOverlap, validateMountPath } from "./parse.js";
