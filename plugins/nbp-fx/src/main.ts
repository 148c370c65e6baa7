// The nbp-fx plugin's process: the NBP connector on the SDK, reaching api.nbp.pl through the
// egress proxy with the rotating egress token, serving the core until SIGTERM.
import { createEgressClient, loadConfig, runConnector } from "@openfief/sdk";
import { createNbpConnector } from "./connector.js";

const config = (await loadConfig()) as { startDate?: string } | undefined;
const egress = createEgressClient();
const handler = createNbpConnector({
  fetch: (url) => egress.fetch(url, { headers: { accept: "application/json" } }),
  ...(config?.startDate !== undefined ? { startDate: config.startDate } : {}),
});
await runConnector(handler);
await egress.close();
