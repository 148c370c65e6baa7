/** Helpers for this room's tests (not exported through the door). */
import { Buffer } from "node:buffer";
import { hashFromBytes } from "./hash.js";
import type { Hash } from "./hash.js";
import type { Result } from "./errors.js";
import { MerkleTree } from "./tree.js";
import type { SyncHashReader } from "./proof.js";

export function value<T>(r: Result<T>): T {
  if (!r.ok) throw new Error(`expected success, got ${r.error.code} at ${r.error.path}: ${r.error.message}`);
  return r.value;
}

export const hex = (s: string): Hash => value(hashFromBytes(Buffer.from(s, "hex")));
export const b64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"));
export const toHex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
export const utf8 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "utf8"));

/** A tree of `size` leaves `leaf i`, with every node it made final kept by (level, index). */
export function storedTree(size: number): { tree: MerkleTree; leaves: Hash[]; nodes: Map<string, Hash>; read: SyncHashReader } {
  const tree = new MerkleTree();
  const nodes = new Map<string, Hash>();
  const leaves: Hash[] = [];
  for (let i = 0; i < size; i++) {
    const a = tree.appendData(utf8(`leaf ${i}`));
    leaves.push(a.nodes[0]?.hash as Hash);
    for (const n of a.nodes) nodes.set(`${n.level}/${n.index}`, n.hash);
  }
  const read: SyncHashReader = (level, index) => {
    const h = nodes.get(`${level}/${index}`);
    if (h === undefined) throw new Error(`node ${level}/${index} is not stored`);
    return h;
  };
  return { tree, leaves, nodes, read };
}
