// Generated from manifest.json by openfief-wasm-build; edit manifest.json, not this file.
/** The plugin's manifest, exactly the JSON of its signed label. */
export const MANIFEST_JSON: string = "{\"capabilities\":[\"connector\"],\"egress\":[{\"host\":\"ndcdyn.interactivebrokers.com\"},{\"host\":\"gdcdyn.interactivebrokers.com\"}],\"secrets\":[{\"name\":\"flex\",\"mountPath\":\"/etc/openfief/ibkr-flex\"}],\"dataTiers\":[\"brokerage\"]}";
