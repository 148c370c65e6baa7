// Types of the generated config-meta-schemas.js (scripts/gen-meta-schemas.ts).
import type { Format } from "ajv";

/** What a generated check calls: the formats, the RE2 engine and the linear uniqueItems of src/plugins. */
export interface MetaDeps {
  readonly formats: Readonly<Record<string, Format>>;
  readonly regExp: (pattern: string, flags: string) => { test(s: string): boolean };
  readonly duplicatePair: (data: readonly unknown[]) => [number, number] | undefined;
}

/** A schema checked against a meta-schema; its errors as ajv reports them. */
export interface MetaValidate {
  (schema: unknown): boolean;
  errors?: { instancePath: string; message?: string }[] | null;
}

export declare const META_VALIDATORS: Readonly<Record<"draft-07" | "2019-09" | "2020-12", (deps: MetaDeps) => MetaValidate>>;
