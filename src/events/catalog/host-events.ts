/** The plugin host's events (seed 003): modules installed and approved, calls that failed or were refused. */
import type { EventRegistry } from "../registry.js";

/** Data type of each host event type. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the area's types are added here
export interface HostEventData {}

export function defineHostEvents(_r: EventRegistry): void {}
