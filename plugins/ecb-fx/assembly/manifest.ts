// Generated from manifest.json by openfief-wasm-build; edit manifest.json, not this file.
/** The plugin's manifest, exactly the JSON of its signed label. */
export const MANIFEST_JSON: string = "{\"capabilities\":[\"connector\"],\"egress\":[{\"host\":\"www.ecb.europa.eu\"}],\"secrets\":[],\"dataTiers\":[\"fx-rates\"]}";
