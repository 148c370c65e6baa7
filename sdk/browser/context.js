// The origins of an OpenFief deployment. The plugin proxy serves its own version of this file
// beside sdk.js, naming the deployment's console, plugin proxy and gateway; this copy names none,
// so a page loaded from anywhere else cannot talk to any console (createView refuses to start).
export const CONSOLE_ORIGIN = null;
export const PLUGIN_PROXY_ORIGIN = null;
export const GATEWAY_ORIGIN = null;
