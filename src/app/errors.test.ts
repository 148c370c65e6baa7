import { describe, expect, it } from "vitest";
import { StoreError, StoreErrorCode } from "../events/index.js";
import { APP_ERRORS, AppError, toAppError } from "./errors.js";

describe("the error registry", () => {
  // Pinned: the faces' contract. A change here changes what scripts and clients see.
  it("maps every code to its exit code and HTTP status", () => {
    expect(Object.fromEntries(Object.entries(APP_ERRORS).map(([k, v]) => [k, [v.exit, v.status]]))).toEqual({
      usage: [2, 400],
      invalid_resource: [2, 422],
      too_large: [2, 413],
      not_found: [1, 404],
      precondition_failed: [1, 412],
      precondition_required: [1, 428],
      conflict: [1, 409],
      spec_invalid: [1, 409],
      signature_refused: [1, 409],
      config_refused: [1, 409],
      plugin_pinned: [1, 409],
      log_broken: [1, 503],
      unauthorized: [1, 401],
      forbidden: [1, 403],
      unsupported_media_type: [2, 415],
      unavailable: [1, 503],
      bad_setting: [1, 500],
      internal: [1, 500],
    });
  });

  it("keeps a message to one line and says the field when there is one", () => {
    const e = new AppError("invalid_resource", "first line\nsecond line", "spec.manifest.egress[0]");
    expect(e.message).toBe("first line");
    expect(e.toJSON()).toEqual({ code: "invalid_resource", message: "first line", field: "spec.manifest.egress[0]" });
    expect([e.exitCode, e.status]).toEqual([2, 422]);
  });

  it("turns anything thrown into an internal error, keeping an AppError as it is", () => {
    const kept = new AppError("not_found", "no plugin x");
    expect(toAppError(kept)).toBe(kept);
    expect(toAppError(new Error("boom\nstack")).toJSON()).toEqual({ code: "internal", message: "boom" });
    expect(toAppError("text").code).toBe("internal");
  });

  it.each([
    [StoreErrorCode.Busy, "unavailable", 1],
    [StoreErrorCode.Unavailable, "unavailable", 1],
    [StoreErrorCode.OutcomeUnknown, "unavailable", 1],
    [StoreErrorCode.Forbidden, "forbidden", 1],
    [StoreErrorCode.Tampered, "log_broken", 1],
    [StoreErrorCode.Migration, "bad_setting", 1],
    [StoreErrorCode.InvalidData, "internal", 1],
  ] as const)("turns the log's %s into %s (exit %i)", (code, want, exit) => {
    const e = toAppError(new StoreError(code, "the log said no"));
    expect([e.code, e.exitCode, e.message]).toEqual([want, exit, "the log said no"]);
  });
});
