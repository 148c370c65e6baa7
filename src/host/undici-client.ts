/**
 * The two names of undici the HTTP capability uses, re-exported from an ES module. undici is
 * CommonJS: imported lazily as it is, the bundle's chunk for it exports only `default`, and
 * `ProxyAgent` was undefined in what users run; a static named import from this module is
 * resolved by the bundler into real named exports.
 */
export { ProxyAgent, request } from "undici";
