/**
 * The manifest a module reports when it is installed (docs/abi.md, `manifest`): a valid manifest,
 * read as strictly as the signed label; only capabilities WebAssembly can serve; and, when the
 * installer knows it, the very manifest of the signed label.
 */
import { manifestEqual, parseManifestLabel, type Manifest } from "../plugins/index.js";
import { hostError, HostErrorCode, type HostResult } from "./errors.js";
import type { ParsedResponse } from "./response.js";

/** The checked manifest and its JSON text (what the modules table keeps). */
export interface ReportedManifest {
  readonly manifest: Manifest;
  readonly text: string;
}

/** Checks a module's answer to `manifest`. */
export function checkReportedManifest(answer: ParsedResponse, expected: Manifest | undefined): HostResult<ReportedManifest> {
  if (!answer.ok) {
    const e = answer.error;
    return { ok: false, error: e.source === "host" ? e : hostError(HostErrorCode.ManifestInvalid, `the module answered manifest with ${e.code}: ${e.message}`, "manifest") };
  }
  const text = JSON.stringify(answer.result);
  const parsed = parseManifestLabel(text, "manifest");
  if (!parsed.ok) {
    const all = parsed.errors.map((x) => `${x.path}: ${x.message}`).join("; ");
    return { ok: false, error: hostError(HostErrorCode.ManifestInvalid, `the module reported an invalid manifest: ${all}`, parsed.errors[0]?.path ?? "manifest") };
  }
  const manifest = parsed.value;
  const other = manifest.capabilities.findIndex((c) => c !== "connector");
  if (other >= 0) {
    return { ok: false, error: hostError(HostErrorCode.DialectUnknown, `a WebAssembly plugin serves the connector contract only; it cannot serve capability ${manifest.capabilities[other] ?? "?"}`, `manifest.capabilities[${other}]`) };
  }
  if (expected !== undefined && !manifestEqual(expected, manifest)) {
    return { ok: false, error: hostError(HostErrorCode.ManifestInvalid, "the module's manifest differs from the signed manifest label", "manifest") };
  }
  return { ok: true, value: { manifest, text } };
}
