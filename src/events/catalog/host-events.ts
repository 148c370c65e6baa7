/** The plugin host's events (seed 003): modules installed and approved, calls that failed or were refused. */
import type { EventRegistry } from "../registry.js";

/** Data type of each host event type. */
export interface HostEventData {}

export function defineHostEvents(_r: EventRegistry): void {}
