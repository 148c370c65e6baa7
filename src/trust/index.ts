/**
 * Image trust (seed 000, "Signatures, trusted signers and the catalog"): offline Sigstore
 * verification, the OCI registry and image-layout clients, the image check, the owner's signers,
 * the verdict cache and the recorder of verdicts.
 */

/** OCI shapes read strictly, digests, limits, and the source port the image check reads through. */
export {
  checkDigest, DEFAULT_LIMITS, digestOf, EMPTY_CONFIG, EMPTY_CONFIG_DIGEST, ImageSourceError, isDigest, MEDIA_TYPE,
  parseDescriptor, parseImageIndex, parseImageManifest, readLimited,
} from "./oci.js";
export type { Descriptor, FetchedManifest, ImageIndex, ImageManifest, ImageSource, ImageSourceErrorCode, Limits } from "./oci.js";
/** An OCI image-layout folder as an image source, and writing images and bundles into one. */
export { OciLayoutSource, writeBundleToLayout, writeImageToLayout } from "./oci-layout.js";
/** The OCI distribution API client. */
export { parseBearerChallenge, RegistryClient, registryLocation } from "./registry.js";
export type { RegistryOptions } from "./registry.js";
/** Sigstore bundles attached as OCI referrers. */
export { buildBundleReferrer, isBundleReferrer, readBundles } from "./bundle-referrer.js";
export type { BundleReferrer } from "./bundle-referrer.js";
/** Offline verification of one bundle over one digest. */
export { IN_TOTO_PAYLOAD_TYPE, parseBundle, Reason, reasonForError, verifyBundle, verifySignedBundle } from "./bundle-verify.js";
export type { BundleInput, BundleVerdict, ExpectedIdentity, ReasonCode } from "./bundle-verify.js";
/** The image check as a whole: resolve, verify every bundle, decide with the trust policy, read the label. */
export { checkImage, readLabel, REFUSAL_REASONS, sourceReason, trustedKeys } from "./image-check.js";
export type { ImageCheckInput, ImageVerdict, RefusalReason } from "./image-check.js";
/** The Sigstore trust root: the pinned public-good root, or a file. */
export {
  loadShippedTrustedRoot, loadTrustedRootFile, parseTrustedRoot, sha256Hex, SHIPPED_TRUSTED_ROOT_PATH, SHIPPED_TRUSTED_ROOT_SHA256, TrustRootError, trustedRootProblems,
} from "./trusted-root.js";
export type { LoadedTrustedRoot } from "./trusted-root.js";
/** The folder the product's files ship in, found from the sources and from the CLI's bundle alike. */
export { PROJECT_ROOT, shippedFile } from "./project-root.js";
/** The owner's trusted signers file. */
export { loadOwnerSignersAtStart, loadOwnerSignersFile, OwnerSignersError, parseOwnerSignersText } from "./owner-signers-file.js";
/** The verdict cache the reconciler asks, with retry of unreachable registries. */
export { ImageVerifier, RETRY_INTERVAL_MS } from "./verifier.js";
export type { CachedVerdict, CheckImage, ImageVerifierOptions } from "./verifier.js";
/** Every verdict as a `signature.verdict` event. */
export { recordCatalog, storeVerdictLog, VerdictRecorder, verdictEventData } from "./verdict-recorder.js";
export { TRUST_STREAM, VERDICT_EVENT } from "./verdict-stream.js";
export type { VerdictInputs, VerdictLog } from "./verdict-recorder.js";
/** A WebAssembly plugin's module from its OCI artifact (one `application/vnd.wasm.content.layer.v1+wasm` layer). */
export { DEFAULT_WASM_MODULE_BYTES, readWasmModule, WASM_LAYER_MEDIA_TYPE } from "./wasm-module.js";
export type { WasmModuleArtifact } from "./wasm-module.js";
