/**
 * The hash chain. Each row's hash covers the previous row's hash and every field of its own, so
 * editing, inserting or deleting a row anywhere breaks the chain at that row.
 *
 * Exact bytes hashed: the UTF-8 encoding of
 *
 *   JSON([prev_hash, seq, stream, version, type, schema_version, time, actor, caused_by]) + "\n" + data
 *
 * where the header is a JSON array (strings as JSON strings, integers as JSON numbers, caused_by
 * `null` when absent) in canonical form (RFC 8785: for strings, safe integers and null that is
 * exactly what `JSON.stringify` produces), and `data` is the row's canonical JSON text (RFC 8785)
 * as stored. The header is self-delimiting (it ends at its closing bracket and holds no raw
 * newline), so no two different rows encode to the same bytes: fields cannot be shifted, and
 * the data is hashed as stored without a second escaping pass.
 * The hash is lowercase hex SHA-256; the first row's prev_hash is {@link GENESIS_HASH}.
 */
import { Buffer } from "node:buffer";
import { hash } from "node:crypto";
import type { StoredEvent } from "./types.js";

/** prev_hash of the first event. */
export const GENESIS_HASH = "0".repeat(64);

/**
 * The fields of a row that the hash covers: a stored event's, without its own hash, and with
 * `data` as the canonical JSON text stored (not the parsed, upcast value).
 */
export type HashedRow = Omit<StoredEvent<string>, "hash">;

/**
 * The exact bytes {@link chainHash} hashes for a row, as UTF-8: the entry the Merkle tree over the
 * log takes as the row's leaf (its leaf hash is SHA-256(0x00 ‖ these bytes), docs/adr/0141).
 */
export function chainBytes(r: HashedRow): Buffer {
  return Buffer.from(JSON.stringify([r.prevHash, r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy]) + "\n" + r.data, "utf8");
}

/** The hash of a row (see the module comment for the exact bytes). */
export function rowHash(r: HashedRow): string {
  return chainHash(r.prevHash, r.seq, r.stream, r.version, r.type, r.schemaVersion, r.time, r.actor, r.causedBy, r.data);
}

/**
 * {@link rowHash} with the fields as arguments, in header order (the append and verify loops
 * call it once per row without building an object). One-shot `crypto.hash` to hex: on Node 20
 * that is cheaper than a Hash object, and cheaper than asking for a Buffer.
 */
export function chainHash(
  prevHash: string, seq: number, stream: string, version: number, type: string,
  schemaVersion: number, time: string, actor: string, causedBy: number | null, data: string,
): string {
  return hash("sha256", JSON.stringify([prevHash, seq, stream, version, type, schemaVersion, time, actor, causedBy]) + "\n" + data, "hex");
}

/**
 * The entries of an append's rows for the Merkle tree over the log (docs/adr/0141), written one
 * after another as the append hashes them: each row's bytes (what {@link chainHash} hashes)
 * preceded by one byte 0x00, so that a row's leaf hash, SHA-256(0x00 ‖ bytes), is the hash of
 * its span as it lies. Nothing per row outlives the append: the tree's hashing thread takes the
 * bytes and hashes the leaves off the appending thread.
 */
export class EntryWriter {
  #buffer = Buffer.allocUnsafeSlow(1 << 16);
  #length = 0;
  #ends = new Uint32Array(256);
  #hashes = Buffer.allocUnsafeSlow(256 * 32);
  #rows = 0;

  /** {@link chainHash} of a row, its entry written after the ones before (and its hash, as bytes). */
  chainHash(
    prevHash: string, seq: number, stream: string, version: number, type: string,
    schemaVersion: number, time: string, actor: string, causedBy: number | null, data: string,
  ): string {
    const text = JSON.stringify([prevHash, seq, stream, version, type, schemaVersion, time, actor, causedBy]) + "\n" + data;
    // At most 3 bytes per UTF-16 unit, and the 0x00: room for the whole row (write() would cut it short).
    const most = this.#length + 3 * text.length + 1;
    if (most > this.#buffer.length) {
      const grown = Buffer.allocUnsafeSlow(Math.max(most, 2 * this.#buffer.length));
      this.#buffer.copy(grown, 0, 0, this.#length);
      this.#buffer = grown;
    }
    if (this.#rows === this.#ends.length) {
      const ends = new Uint32Array(2 * this.#rows);
      ends.set(this.#ends);
      this.#ends = ends;
      const hashes = Buffer.allocUnsafeSlow(2 * this.#rows * 32);
      this.#hashes.copy(hashes);
      this.#hashes = hashes;
    }
    // The string hashed as without a tree (a view of the buffer per row costs more than the second encoding).
    const h = hash("sha256", text, "hex");
    this.#buffer[this.#length] = 0;
    const end = this.#length + 1 + this.#buffer.write(text, this.#length + 1, "utf8");
    this.#length = end;
    this.#ends[this.#rows] = end;
    this.#hashes.write(h, 32 * this.#rows, "hex");
    this.#rows++;
    return h;
  }

  /**
   * The entries written since the last {@link clear}, where each ends, and the rows' chain hashes
   * (32 bytes each): views of this writer's buffers, valid until its next write (one append's
   * worth, which the tree copies before the next append begins).
   */
  written(): { entries: Buffer; ends: Uint32Array; hashes: Buffer } {
    return { entries: this.#buffer.subarray(0, this.#length), ends: this.#ends.subarray(0, this.#rows), hashes: this.#hashes.subarray(0, 32 * this.#rows) };
  }

  /** Starts over (before an append). */
  clear(): void {
    this.#length = 0;
    this.#rows = 0;
    // One large append does not keep its buffers for the rest of the process.
    if (this.#buffer.length > 1 << 22) this.#buffer = Buffer.allocUnsafeSlow(1 << 16);
    if (this.#ends.length > 1 << 16) {
      this.#ends = new Uint32Array(256);
      this.#hashes = Buffer.allocUnsafeSlow(256 * 32);
    }
  }
}
