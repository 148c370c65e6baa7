/**
 * An OCI distribution API client over HTTP(S) with plain `fetch`: manifests and blobs by digest
 * (size-limited, digest-checked), referrers through the referrers API and, where a registry has
 * none (distribution 2.8 answers 404), the `sha256-<hex>` tag fallback; bearer-token auth for
 * registries that answer 401 with a Bearer challenge. Tokens and credentials never appear in an
 * error or a log line. Also the few writes the tests and the demo need to push a signed image.
 */
import type { Descriptor, FetchedManifest, ImageSource, Limits } from "./oci.js";
import { DEFAULT_LIMITS, ImageSourceError, MEDIA_TYPE, checkDigest, digestOf, isDigest, parseImageIndex, readLimited } from "./oci.js";
import { buildBundleReferrer } from "./bundle-referrer.js";

/** Where and how to reach one registry. */
export interface RegistryOptions {
  /** `host[:port]`, as in the image reference (`ghcr.io`, `127.0.0.1:5000`). */
  readonly registry: string;
  /** Default: http for loopback hosts (a local test registry), https for every other. */
  readonly scheme?: "http" | "https";
  /** Injected for tests; defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Basic credentials for the token endpoint or the registry; sent only over https or to loopback. */
  readonly credentials?: { readonly username: string; readonly password: string };
  readonly limits?: Partial<Limits>;
}

const MANIFEST_ACCEPT = [MEDIA_TYPE.ociManifest, MEDIA_TYPE.dockerManifest, MEDIA_TYPE.ociIndex, MEDIA_TYPE.dockerList].join(", ");
const TOKEN_LIMIT = 64 * 1024;

function isLoopbackHost(host: string): boolean {
  const h = host.replace(/:\d+$/, "");
  return h === "localhost" || h === "127.0.0.1" || h === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Parses `Bearer realm="…",service="…",scope="…"` (quoted or bare values). */
export function parseBearerChallenge(header: string | null): { realm: string; service?: string; scope?: string } | undefined {
  if (header === null) return undefined;
  const m = /^\s*Bearer\s+(.*)$/i.exec(header);
  if (m === null || m[1] === undefined) return undefined;
  const params: Record<string, string> = {};
  const re = /([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g;
  for (let p = re.exec(m[1]); p !== null; p = re.exec(m[1])) {
    const key = (p[1] ?? "").toLowerCase();
    params[key] = p[2] !== undefined ? p[2].replace(/\\(.)/g, "$1") : (p[3] ?? "");
  }
  if (params.realm === undefined || params.realm === "") return undefined;
  const out: { realm: string; service?: string; scope?: string } = { realm: params.realm };
  if (params.service !== undefined) out.service = params.service;
  if (params.scope !== undefined) out.scope = params.scope;
  return out;
}

interface RequestOptions {
  readonly accept?: string;
  readonly body?: Uint8Array;
  readonly contentType?: string;
  readonly push?: boolean;
}

/** A client for one registry; implements {@link ImageSource}. */
export class RegistryClient implements ImageSource {
  readonly #base: string;
  readonly #fetch: typeof fetch;
  readonly #credentials: RegistryOptions["credentials"];
  readonly #tokens = new Map<string, string>();
  readonly limits: Limits;
  readonly description: string;

  constructor(options: RegistryOptions) {
    const scheme = options.scheme ?? (isLoopbackHost(options.registry) ? "http" : "https");
    this.#base = `${scheme}://${options.registry}`;
    this.#fetch = options.fetch ?? fetch;
    this.#credentials = options.credentials;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.description = `registry ${options.registry}`;
  }

  async #send(method: string, url: string, opts: RequestOptions, auth: string | undefined): Promise<Response> {
    const headers: Record<string, string> = {};
    if (opts.accept !== undefined) headers.accept = opts.accept;
    if (opts.contentType !== undefined) headers["content-type"] = opts.contentType;
    if (auth !== undefined) headers.authorization = auth;
    try {
      const init: RequestInit = { method, headers, redirect: "follow" };
      if (opts.body !== undefined) init.body = opts.body;
      return await this.#fetch(url, init);
    } catch (err) {
      throw new ImageSourceError("unreachable", `${this.description} is unreachable: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : "error"}`);
    }
  }

  #basic(): string | undefined {
    if (this.#credentials === undefined) return undefined;
    return `Basic ${Buffer.from(`${this.#credentials.username}:${this.#credentials.password}`).toString("base64")}`;
  }

  async #token(challenge: { realm: string; service?: string; scope?: string }, scope: string): Promise<string> {
    let url: URL;
    try {
      url = new URL(challenge.realm);
    } catch {
      throw new ImageSourceError("auth_failed", `${this.description} names a token realm that is not a URL`);
    }
    if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.host))) {
      throw new ImageSourceError("auth_failed", `${this.description} names a token realm that is not https`);
    }
    if (challenge.service !== undefined) url.searchParams.set("service", challenge.service);
    url.searchParams.set("scope", challenge.scope ?? scope);
    const res = await this.#send("GET", url.toString(), { accept: "application/json" }, this.#basic());
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new ImageSourceError("auth_failed", `the token endpoint of ${this.description} answered ${res.status}`);
    }
    const body = await readLimited(res.body, TOKEN_LIMIT, "token answer");
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(body).toString("utf8"));
    } catch {
      throw new ImageSourceError("auth_failed", `the token endpoint of ${this.description} did not answer JSON`);
    }
    const p = parsed as { token?: unknown; access_token?: unknown } | null;
    const token = typeof p?.token === "string" && p.token !== "" ? p.token : p?.access_token;
    if (typeof token !== "string" || token === "" || /[\r\n]/.test(token)) {
      throw new ImageSourceError("auth_failed", `the token endpoint of ${this.description} gave no token`);
    }
    return token;
  }

  /** Sends a request, answering one Bearer (or Basic) challenge per request. */
  async #request(method: string, repository: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const url = path.startsWith("http://") || path.startsWith("https://") ? path : `${this.#base}${path}`;
    const scope = `repository:${repository}:${opts.push === true ? "pull,push" : "pull"}`;
    const cached = this.#tokens.get(scope);
    const first = await this.#send(method, url, opts, cached === undefined ? undefined : `Bearer ${cached}`);
    if (first.status !== 401) return first;
    const header = first.headers.get("www-authenticate");
    await first.body?.cancel();
    const challenge = parseBearerChallenge(header);
    let auth: string;
    if (challenge !== undefined) {
      const token = await this.#token(challenge, scope);
      this.#tokens.set(scope, token);
      auth = `Bearer ${token}`;
    } else if (header !== null && /^\s*Basic\b/i.test(header) && this.#basic() !== undefined) {
      if (!this.#base.startsWith("https://") && !isLoopbackHost(this.#base.replace(/^https?:\/\//, ""))) {
        throw new ImageSourceError("auth_failed", `${this.description} asks for credentials over plain http`);
      }
      auth = this.#basic() as string;
    } else {
      throw new ImageSourceError("auth_failed", `${this.description} refused access (401) and offers no usable challenge`);
    }
    const second = await this.#send(method, url, opts, auth);
    if (second.status === 401) {
      await second.body?.cancel();
      throw new ImageSourceError("auth_failed", `${this.description} refused the credentials (401)`);
    }
    return second;
  }

  async #expectOk(res: Response, what: string): Promise<void> {
    if (res.ok) return;
    await res.body?.cancel();
    if (res.status === 404) throw new ImageSourceError("not_found", `${what} is not in ${this.description}`);
    if (res.status === 401 || res.status === 403) throw new ImageSourceError("auth_failed", `${this.description} refused ${what} (${res.status})`);
    if (res.status >= 500 || res.status === 429) throw new ImageSourceError("unreachable", `${this.description} answered ${res.status} for ${what}`);
    throw new ImageSourceError("http_error", `${this.description} answered ${res.status} for ${what}`);
  }

  async #readBody(res: Response, limit: number, what: string): Promise<Uint8Array> {
    const length = Number(res.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(length) && length > limit) {
      await res.body?.cancel();
      throw new ImageSourceError("too_large", `${what} is larger than ${limit} bytes`);
    }
    return readLimited(res.body, limit, what);
  }

  async #getManifest(repository: string, reference: string, limit: number): Promise<FetchedManifest> {
    const what = `manifest ${repository}@${reference}`;
    const res = await this.#request("GET", repository, `/v2/${repository}/manifests/${reference}`, { accept: MANIFEST_ACCEPT });
    await this.#expectOk(res, what);
    const bytes = await this.#readBody(res, limit, what);
    const mediaType = (res.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
    return { bytes, mediaType };
  }

  /** {@inheritDoc ImageSource.manifest} */
  async manifest(repository: string, digest: string, maxBytes: number = this.limits.manifest): Promise<FetchedManifest> {
    if (!isDigest(digest)) throw new ImageSourceError("malformed", "a manifest is read only by sha256 digest");
    const fetched = await this.#getManifest(repository, digest, maxBytes);
    checkDigest(fetched.bytes, digest, `manifest ${repository}@${digest}`);
    return fetched;
  }

  /** {@inheritDoc ImageSource.blob} */
  async blob(repository: string, digest: string, maxBytes: number): Promise<Uint8Array> {
    if (!isDigest(digest)) throw new ImageSourceError("malformed", "a blob is read only by sha256 digest");
    const what = `blob ${repository}@${digest}`;
    const res = await this.#request("GET", repository, `/v2/${repository}/blobs/${digest}`);
    await this.#expectOk(res, what);
    const bytes = await this.#readBody(res, maxBytes, what);
    checkDigest(bytes, digest, what);
    return bytes;
  }

  /** {@inheritDoc ImageSource.referrers} */
  async referrers(repository: string, digest: string): Promise<readonly Descriptor[]> {
    if (!isDigest(digest)) throw new ImageSourceError("malformed", "referrers are listed only by sha256 digest");
    const res = await this.#request("GET", repository, `/v2/${repository}/referrers/${digest}`, { accept: MEDIA_TYPE.ociIndex });
    if (res.status !== 404) {
      await this.#expectOk(res, `referrers of ${digest}`);
      const bytes = await this.#readBody(res, this.limits.index, `referrers of ${digest}`);
      return parseImageIndex(bytes, this.limits.referrers).manifests;
    }
    await res.body?.cancel();
    // No referrers API: the OCI 1.1 fallback is an index under the tag sha256-<hex>.
    const tag = digest.replace(":", "-");
    try {
      const fetched = await this.#getManifest(repository, tag, this.limits.index);
      return parseImageIndex(fetched.bytes, this.limits.referrers).manifests;
    } catch (err) {
      if (err instanceof ImageSourceError && err.code === "not_found") return [];
      throw err;
    }
  }

  /** Uploads a blob unless the registry has it already; returns its digest. */
  async putBlob(repository: string, bytes: Uint8Array): Promise<string> {
    const digest = digestOf(bytes);
    const head = await this.#request("HEAD", repository, `/v2/${repository}/blobs/${digest}`, { push: true });
    await head.body?.cancel();
    if (head.ok) return digest;
    const start = await this.#request("POST", repository, `/v2/${repository}/blobs/uploads/`, { push: true });
    await this.#expectOk(start, `upload to ${repository}`);
    await start.body?.cancel();
    const location = start.headers.get("location");
    if (location === null) throw new ImageSourceError("http_error", `${this.description} gave no upload location`);
    const url = new URL(location, this.#base);
    url.searchParams.set("digest", digest);
    const put = await this.#request("PUT", repository, url.toString(), { push: true, body: bytes, contentType: "application/octet-stream" });
    await this.#expectOk(put, `blob ${digest}`);
    await put.body?.cancel();
    return digest;
  }

  /** Stores a manifest under `reference` (a tag or its digest); returns its digest and whether the registry indexed its subject. */
  async putManifest(repository: string, reference: string, bytes: Uint8Array, mediaType: string): Promise<{ digest: string; subjectIndexed: boolean }> {
    const res = await this.#request("PUT", repository, `/v2/${repository}/manifests/${reference}`, { push: true, body: bytes, contentType: mediaType });
    await this.#expectOk(res, `manifest ${repository}:${reference}`);
    await res.body?.cancel();
    return { digest: digestOf(bytes), subjectIndexed: res.headers.get("oci-subject") !== null };
  }

  /** Pushes an image (config, layers, manifest) and returns its manifest digest. */
  async pushImage(repository: string, image: { manifest: Uint8Array; blobs: readonly Uint8Array[]; tag?: string }): Promise<string> {
    for (const blob of image.blobs) await this.putBlob(repository, blob);
    const digest = digestOf(image.manifest);
    await this.putManifest(repository, image.tag ?? digest, image.manifest, MEDIA_TYPE.ociManifest);
    return digest;
  }

  /**
   * Attaches a bundle to an image as an OCI referrer, and, when the registry has no referrers API,
   * adds it to the `sha256-<hex>` fallback index as OCI 1.1 asks of clients.
   */
  async pushBundle(repository: string, subject: Descriptor, bundle: Uint8Array): Promise<Descriptor> {
    const referrer = buildBundleReferrer(subject, bundle);
    for (const blob of referrer.blobs) await this.putBlob(repository, blob);
    const put = await this.putManifest(repository, referrer.descriptor.digest, referrer.manifest, MEDIA_TYPE.ociManifest);
    if (!put.subjectIndexed) {
      const tag = subject.digest.replace(":", "-");
      let manifests: Descriptor[] = [];
      try {
        const fetched = await this.#getManifest(repository, tag, this.limits.index);
        manifests = [...parseImageIndex(fetched.bytes, this.limits.referrers).manifests];
      } catch (err) {
        if (!(err instanceof ImageSourceError && err.code === "not_found")) throw err;
      }
      if (!manifests.some((m) => m.digest === referrer.descriptor.digest)) manifests.push(referrer.descriptor);
      const index = new TextEncoder().encode(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_TYPE.ociIndex, manifests }));
      await this.putManifest(repository, tag, index, MEDIA_TYPE.ociIndex);
    }
    return referrer.descriptor;
  }
}

/**
 * The registry host and repository path to contact for an image reference. A reference without
 * a registry means Docker Hub, whose API lives at registry-1.docker.io, with official images
 * under `library/`.
 */
export function registryLocation(image: { readonly registry: string | undefined; readonly repository: string }): { registry: string; repository: string } {
  if (image.registry === undefined || image.registry === "docker.io" || image.registry === "index.docker.io") {
    return { registry: "registry-1.docker.io", repository: image.repository.includes("/") ? image.repository : `library/${image.repository}` };
  }
  return { registry: image.registry, repository: image.repository };
}
