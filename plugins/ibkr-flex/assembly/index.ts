// The ibkr-flex plugin: an Interactive Brokers account's trades, cash transactions and open
// positions from IBKR's Flex Web Service, as an OpenFief connector on ABI version 1 (docs/abi.md).
// Build: npm run build (see README.md).
export * from "@openfief/sdk-wasm/assembly/exports";
import { register, registerManifest } from "@openfief/sdk-wasm/assembly";
import { importFile, sync } from "./connector";
import { MANIFEST_JSON } from "./manifest";

registerManifest(MANIFEST_JSON);
register("sync", sync);
register("import_file", importFile);
