/**
 * Reading what `apply -f` names: files, folders of `.yaml`/`.yml`/`.json` files (in name order),
 * and `-` for standard input. Every input's size is capped before it is read (a regular file by
 * its size, anything else — a pipe, `/dev/zero` — by counting as it is read), so a huge or endless
 * input is refused in a moment instead of filling memory.
 */
import { createReadStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { AppError, checkResourceSize, MAX_RESOURCE_BYTES } from "../app/index.js";

/** One input's text and where it came from. */
export interface Input {
  readonly text: string;
  readonly source: string;
}

async function readCapped(stream: NodeJS.ReadableStream, source: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const b = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    size += b.length;
    if (size > MAX_RESOURCE_BYTES) {
      (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      checkResourceSize(size, source);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString("utf8");
}

async function readFileCapped(path: string): Promise<string> {
  const st = await stat(path);
  // A regular file's size is known: refuse before reading a byte. Devices and pipes are counted.
  if (st.isFile()) checkResourceSize(st.size, path);
  return readCapped(createReadStream(path), path);
}

/** Reads every input `paths` names, in order; `-` is standard input. */
export async function readInputs(paths: readonly string[], stdin: NodeJS.ReadableStream = process.stdin): Promise<Input[]> {
  const out: Input[] = [];
  for (const path of paths) {
    if (path === "-") {
      out.push({ text: await readCapped(stdin, "standard input"), source: "standard input" });
      continue;
    }
    let st;
    try {
      st = await stat(path);
    } catch {
      throw new AppError("usage", `cannot read ${path}: no such file or folder`);
    }
    if (st.isDirectory()) {
      const files = (await readdir(path)).filter((f) => /\.(ya?ml|json)$/.test(f)).sort().map((f) => join(path, f));
      if (files.length === 0) throw new AppError("usage", `${path}: no .yaml, .yml or .json files`);
      for (const f of files) out.push({ text: await readFileCapped(f), source: f });
    } else {
      out.push({ text: await readFileCapped(path), source: path });
    }
  }
  return out;
}
