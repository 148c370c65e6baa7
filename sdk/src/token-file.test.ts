import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SdkError } from "./errors.js";
import { coreTokenSource, readTokenFile } from "./token-file.js";

let root: string;
let dir: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "sdk-token-"));
  dir = join(root, "openfief");
  await mkdir(dir);
});
afterEach(() => rm(root, { recursive: true, force: true }));

async function kubeletLayout(token: string, version: string): Promise<void> {
  // The kubelet's projected-volume layout: token -> ..data/token, ..data -> ..<timestamp>.
  await mkdir(join(dir, version));
  await writeFile(join(dir, version, "token"), token);
  await symlink(version, join(dir, "..data_tmp"));
  await rename(join(dir, "..data_tmp"), join(dir, "..data"));
}

describe("readTokenFile", () => {
  it("reads the token through the kubelet's ..data symlinks and again after rotation", async () => {
    await kubeletLayout("first-token\n", "..2024_01_01");
    await symlink("..data/token", join(dir, "token"));
    expect(await readTokenFile(join(dir, "token"))).toBe("first-token");
    await kubeletLayout("second-token", "..2024_01_02");
    expect(await readTokenFile(join(dir, "token"))).toBe("second-token");
  });

  it.each([
    ["a symlink to a file outside the directory", async () => {
      await writeFile(join(root, "secret"), "not-yours");
      await symlink("../secret", join(dir, "token"));
      return join(dir, "token");
    }, "file_outside_directory"],
    ["an absolute symlink out of the directory", async () => {
      await writeFile(join(root, "secret"), "not-yours");
      await symlink(join(root, "secret"), join(dir, "token"));
      return join(dir, "token");
    }, "file_outside_directory"],
    ["a path with '..'", async () => {
      await writeFile(join(root, "secret"), "not-yours");
      return `${dir}/../secret`;
    }, "file_outside_directory"],
    ["a missing file", () => Promise.resolve(join(dir, "token")), "file_unreadable"],
    ["an empty file", async () => {
      await writeFile(join(dir, "token"), " \n");
      return join(dir, "token");
    }, "token_empty"],
    ["a directory", async () => {
      await mkdir(join(dir, "token"));
      return join(dir, "token");
    }, "file_unreadable"],
  ])("refuses %s", async (_name, setup, code) => {
    const path = await setup();
    const error = await readTokenFile(path).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SdkError);
    expect((error as SdkError).code).toBe(code);
    expect(String((error as SdkError).message)).not.toContain("not-yours");
  });

  it("uses OPENFIEF_TOKEN_FILE and reads it on every call", async () => {
    await writeFile(join(dir, "token"), "one");
    const source = coreTokenSource({ OPENFIEF_TOKEN_FILE: join(dir, "token") });
    expect(await source()).toBe("one");
    await writeFile(join(dir, "token"), "two");
    expect(await source()).toBe("two");
  });
});
