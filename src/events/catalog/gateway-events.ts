/** The view gateway's decisions (seed 002, FUN-17): every request with a valid PluginToken. */
import type { EventRegistry } from "../registry.js";

/** Data type of each gateway event type. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the area's types are added here
export interface GatewayEventData {}

export function defineGatewayEvents(_r: EventRegistry): void {}
