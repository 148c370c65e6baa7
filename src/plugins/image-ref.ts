/**
 * Image references pinned by digest (D-17). A tag is a pointer anyone who can push may move; a
 * digest names exactly one image, and it is what a signature covers. So the only accepted form is
 * `[registry[:port]/]repository@sha256:<64 lower-case hex>`, following the OCI distribution name
 * grammar, and a tag is refused even next to a digest because an image named both ways is ambiguous.
 */
import ipaddr from "ipaddr.js";
import { CAPS, tooLong } from "./caps.js";
import { ErrorCode, fail, fieldError, ok } from "./errors.js";
import type { FieldError, Result } from "./errors.js";

/** distribution/reference's NameTotalLengthMax: registry + "/" + repository. */
export const MAX_IMAGE_NAME_LENGTH = CAPS.imageName;

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const SHA256_DIGEST = /^sha256:([0-9a-f]{64})$/;
const PORT = /^[1-9][0-9]{0,4}$/;
const IPV6_CHARS = /^[0-9A-Fa-f:.]+$/;

// Set in the class's static block: the module's only way to call the private constructor.
let construct: (registry: string | undefined, repository: string, hex: string) => ImageRef;

/**
 * A valid image reference pinned by a sha256 digest. Built only by {@link parseImageRef}, so
 * holding one proves it is well formed.
 */
export class ImageRef {
  readonly #registry: string | undefined;
  readonly #repository: string;
  readonly #hex: string;

  private constructor(registry: string | undefined, repository: string, hex: string) {
    this.#registry = registry;
    this.#repository = repository;
    this.#hex = hex;
  }

  static {
    construct = (registry, repository, hex) => new ImageRef(registry, repository, hex);
  }

  /** The registry host, with its port when one was written (`ghcr.io`, `[::1]:5000`), or undefined. */
  get registry(): string | undefined {
    return this.#registry;
  }

  /** The repository path inside the registry (`openfief/ibkr-flex`). */
  get repository(): string {
    return this.#repository;
  }

  /** The name without the digest: `registry/repository`, or `repository` alone. */
  get name(): string {
    return this.#registry === undefined ? this.#repository : `${this.#registry}/${this.#repository}`;
  }

  /** `sha256:<hex>`. */
  get digest(): string {
    return `sha256:${this.#hex}`;
  }

  /** The 64 lower-case hex digits of the digest. */
  get hex(): string {
    return this.#hex;
  }

  /** The reference as accepted: `name@sha256:<hex>`; parsing it again gives an equal ImageRef. */
  toString(): string {
    return `${this.name}@${this.digest}`;
  }

  /** Serialises as the reference string, so events and plans record images as text. */
  toJSON(): string {
    return this.toString();
  }

  /** Same registry (as written), repository and digest. */
  equals(other: ImageRef): boolean {
    return this.#registry === other.#registry && this.#repository === other.#repository && this.#hex === other.#hex;
  }
}

function invalid(path: string, message: string): FieldError {
  return fieldError(ErrorCode.InvalidImageRef, path, message);
}

function isValidRegistry(registry: string): boolean {
  let host = registry;
  let port: string | undefined;
  if (registry.startsWith("[")) {
    const close = registry.indexOf("]");
    if (close < 0) return false;
    const inner = registry.slice(1, close);
    const rest = registry.slice(close + 1);
    // A zone (`%eth0`) names an interface on one machine; it has no meaning in a shared reference.
    if (!IPV6_CHARS.test(inner) || !ipaddr.IPv6.isValid(inner)) return false;
    if (rest === "") return true;
    if (!rest.startsWith(":")) return false;
    port = rest.slice(1);
    return isValidPort(port);
  }
  const colon = registry.indexOf(":");
  if (colon >= 0) {
    host = registry.slice(0, colon);
    port = registry.slice(colon + 1);
    if (!isValidPort(port)) return false;
  }
  if (host === "") return false;
  return host.split(".").every((c) => DOMAIN_COMPONENT.test(c));
}

function isValidPort(port: string): boolean {
  return PORT.test(port) && Number(port) <= 65535;
}

/** Whether the first path component names a registry, as distribution's splitDockerDomain decides. */
function looksLikeRegistry(component: string): boolean {
  return component.includes(".") || component.includes(":") || component === "localhost";
}

/**
 * Parses an image reference; only `[registry[:port]/]repository@sha256:<64 lower-case hex>` is
 * accepted. A tag, even beside a digest, is {@link ErrorCode.TagNotAllowed}; everything else that
 * is wrong is {@link ErrorCode.InvalidImageRef}; a reference longer than {@link CAPS.imageRef} is
 * {@link ErrorCode.TooLarge}, before anything else reads it. Never throws.
 */
export function parseImageRef(value: unknown, path = "image"): Result<ImageRef> {
  if (value === undefined) return fail(fieldError(ErrorCode.Required, path, "an image reference is required"));
  if (typeof value !== "string") {
    return fail(fieldError(ErrorCode.InvalidType, path, "an image reference must be a string"));
  }
  if (value === "") return fail(invalid(path, "an image reference must not be empty"));
  // Before any pattern: irregexp's backtracking stack overflows on a multi-megabyte reference.
  if (value.length > CAPS.imageRef) return fail(tooLong(path, "the image reference", value.length, CAPS.imageRef));
  if (/\s/.test(value)) return fail(invalid(path, "an image reference must not contain whitespace"));

  const errors: FieldError[] = [];
  const at = value.indexOf("@");
  const namePart = at < 0 ? value : value.slice(0, at);
  const digestPart = at < 0 ? undefined : value.slice(at + 1);

  // The tag sits after the last ':' that follows the last '/', so a registry port is not a tag.
  let name = namePart;
  const lastSlash = namePart.lastIndexOf("/");
  const tagColon = namePart.indexOf(":", lastSlash + 1);
  if (tagColon >= 0 && !(lastSlash < 0 && namePart.startsWith("["))) {
    const tag = namePart.slice(tagColon + 1);
    name = namePart.slice(0, tagColon);
    if (TAG.test(tag)) {
      errors.push(
        fieldError(
          ErrorCode.TagNotAllowed,
          path,
          digestPart === undefined
            ? "an image must be pinned by digest (repository@sha256:<hex>), not by tag"
            : "an image must not carry a tag next to its digest: the reference would be ambiguous",
        ),
      );
    } else {
      errors.push(invalid(path, "the image reference has a malformed tag"));
    }
  }

  let registry: string | undefined;
  let repository = name;
  const firstSlash = name.indexOf("/");
  if (firstSlash >= 0 && looksLikeRegistry(name.slice(0, firstSlash))) {
    registry = name.slice(0, firstSlash);
    repository = name.slice(firstSlash + 1);
    if (!isValidRegistry(registry)) {
      errors.push(invalid(path, "the registry must be a host name, IPv4 address or bracketed IPv6 address, with an optional port 1-65535"));
    }
  }
  if (repository === "" || !repository.split("/").every((c) => PATH_COMPONENT.test(c))) {
    errors.push(
      invalid(path, "the repository must be lower-case path components of letters and digits joined by '.', '_', '__' or '-', separated by '/'"),
    );
  }
  if (name.length > MAX_IMAGE_NAME_LENGTH) {
    errors.push(invalid(path, `the image name must be at most ${MAX_IMAGE_NAME_LENGTH} characters`));
  }

  let hex: string | undefined;
  if (digestPart === undefined) {
    if (tagColon < 0) errors.push(invalid(path, "an image must be pinned by digest: repository@sha256:<64 lower-case hex digits>"));
  } else {
    const m = SHA256_DIGEST.exec(digestPart);
    if (m === null) errors.push(invalid(path, "the digest must be sha256:<64 lower-case hex digits>"));
    else hex = m[1];
  }

  // TagNotAllowed, when present, is first: it is the most specific reason.
  if (errors.length > 0 || hex === undefined) {
    return fail(errors.length > 0 ? errors : [invalid(path, "the image reference is not valid")]);
  }
  return ok(construct(registry, repository, hex));
}
