/** The view gateway's decisions (seed 002, FUN-17): every request with a valid PluginToken. */
import type { EventRegistry } from "../registry.js";

/** Data type of each gateway event type. */
export interface GatewayEventData {}

export function defineGatewayEvents(_r: EventRegistry): void {}
