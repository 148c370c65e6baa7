// @ts-check
/**
 * One instance of a plugin module, in its own worker thread of the module's sandbox process
 * (ADR 0011). It instantiates the module with the host's imports (ABI version 1, docs/abi.md),
 * checks the ABI version, then runs one call at a time: writes the request through the guest's
 * `openfief_alloc`, calls `openfief_call`, copies the response out. `host_call` posts the request
 * to the sandbox and blocks in `Atomics.wait` until the host's answer is on the reply port.
 *
 * The worker trusts nothing the guest returns: every pointer and length is checked against the
 * memory before it is read or written. Any failure ends the call with `plugin_failed`; the host
 * then discards the instance. Nothing here enforces time: the host terminates the worker.
 *
 * Plain JavaScript: the sandbox's workers start without a TypeScript loader (ADR 0011).
 */
import { getRandomValues } from "node:crypto";
import { TextDecoder as UtilTextDecoder } from "node:util";
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { LineCapture, logBudget, redact, redactionList } from "./log-lines.js";

/** @typedef {import("./protocol.js").WorkerData} WorkerData */
/** @typedef {import("./protocol.js").WorkerCaps} WorkerCaps */
/** @typedef {import("./protocol.js").FromWorker} FromWorker */
/** @typedef {import("./protocol.js").ToWorker} ToWorker */
/** @typedef {import("./protocol.js").InstanceFailureCode} InstanceFailureCode */
/** @typedef {import("../wasm-api.js").WasmApi} WasmApi */
/** @typedef {import("../wasm-api.js").WasmMemory} WasmMemory */
/** @typedef {import("../wasm-api.js").WasmModule} WasmModule */
/** @typedef {import("node:worker_threads").MessagePort} MessagePort */

/** @type {WasmApi} */
const wasm = /** @type {{ WebAssembly: WasmApi }} */ (/** @type {unknown} */ (globalThis)).WebAssembly;

const ABI_VERSION = 1;
// WASI errno values.
const SUCCESS = 0;
const EBADF = 8;
const EFAULT = 21;
const EINVAL = 28;
const ENOSYS = 52;

const port = /** @type {import("node:worker_threads").MessagePort} */ (parentPort);
const data = /** @type {WorkerData} */ (workerData);
const caps = data.caps;
const control = new Int32Array(data.control);
const replyPort = /** @type {MessagePort} */ (data.replyPort);

/** proc_exit unwinds the guest with this. */
class ProcExit extends Error {
  /** @param {number} status */
  constructor(status) {
    super(`the plugin exited with code ${status}`);
    this.status = status;
  }
}

/** A guest bug the ABI treats as a trap (a host_call outside memory, a bad response). */
class Fault extends Error {}

/**
 * @param {FromWorker} message
 * @param {ArrayBuffer[]} [transfer]
 */
function post(message, transfer) {
  port.postMessage(message, transfer ?? []);
}

/**
 * The call being served, or the instantiation (cid null). Its log streams are made on the first
 * write: most calls log nothing.
 */
let call = newCallState(null, []);

/**
 * @param {number | null} cid
 * @param {readonly string[]} secrets
 */
function newCallState(cid, secrets) {
  const list = secrets.length === 0 ? [] : redactionList(secrets);
  const budget = logBudget(caps.logCallChars, caps.logCallLines);
  /** @type {{ fd: 1 | 2, line: string }[]} */
  let batch = [];
  let batchChars = 0;
  // Lines travel in batches: one message per 64 lines or 16 Ki characters, and at the end.
  const flush = () => {
    if (batch.length === 0) return;
    post({ t: "log", cid, lines: batch });
    batch = [];
    batchChars = 0;
  };
  /** @param {1 | 2} fd @param {string} line */
  const emit = (fd, line) => {
    batch.push({ fd, line });
    batchChars += line.length;
    if (batch.length >= 64 || batchChars >= 16384) flush();
  };
  /** @type {{ decoder: import("node:util").TextDecoder, capture: LineCapture } | undefined} */
  let out;
  /** @type {{ decoder: import("node:util").TextDecoder, capture: LineCapture } | undefined} */
  let err;
  /** @param {1 | 2} fd */
  const make = (fd) => ({
    decoder: new UtilTextDecoder("utf-8"),
    capture: new LineCapture({ lineChars: caps.logLineChars, budget, list, emit: (line) => emit(fd, line) }),
  });
  return {
    cid,
    list,
    budget,
    hostCalls: 0,
    /** @param {1 | 2} fd */
    stream(fd) {
      if (fd === 1) return (out ??= make(1));
      return (err ??= make(2));
    },
    end() {
      for (const s of [out, err]) {
        if (s === undefined) continue;
        const tail = s.decoder.decode();
        if (tail !== "") s.capture.write(tail);
        s.capture.end();
      }
      flush();
    },
  };
}

function endLogs() {
  call.end();
}

/** @type {Record<string, unknown>} */
let exports = {};

function memory() {
  return /** @type {WasmMemory} */ (exports.memory);
}

/**
 * True when [ptr, ptr + len) lies inside the memory (both read as unsigned 32-bit).
 * @param {number} ptr
 * @param {number} len
 */
function inBounds(ptr, len) {
  return (ptr >>> 0) + (len >>> 0) <= memory().buffer.byteLength;
}

/** @param {number} ptr @param {number} value */
function writeU32(ptr, value) {
  new DataView(memory().buffer).setUint32(ptr >>> 0, value >>> 0, true);
}

/** @param {number} ptr @param {bigint} value */
function writeU64(ptr, value) {
  new DataView(memory().buffer).setBigUint64(ptr >>> 0, BigInt.asUintN(64, value), true);
}

/**
 * The guest's allocation of `len` bytes, checked.
 * @param {number} len
 */
function guestAlloc(len) {
  const alloc = /** @type {(len: number) => number} */ (exports.openfief_alloc);
  const ptr = alloc(len) >>> 0;
  if (!inBounds(ptr, len)) throw new Fault(`openfief_alloc(${len}) returned ${ptr}, outside the plugin's memory`);
  return ptr;
}

/** @param {number} ptr @param {number} len */
function pack(ptr, len) {
  return (BigInt(ptr >>> 0) << 32n) | BigInt(len >>> 0);
}

/**
 * openfief.host_call: the request goes to the host, which answers on the reply port.
 * @param {number} ptr
 * @param {number} len
 * @returns {bigint}
 */
function hostCall(ptr, len) {
  const cid = call.cid;
  if (cid === null) throw new Fault("host_call outside a call");
  if (++call.hostCalls > caps.hostCallsPerCall) throw new Fault(`the call made more than ${caps.hostCallsPerCall} host_calls`);
  if ((len >>> 0) > caps.messageBytes) throw new Fault(`host_call request of ${len >>> 0} bytes is larger than the cap of ${caps.messageBytes}`);
  if (!inBounds(ptr, len)) throw new Fault("host_call request lies outside the plugin's memory");
  const request = new Uint8Array(memory().buffer.slice(ptr >>> 0, (ptr >>> 0) + (len >>> 0)));
  Atomics.store(control, 0, 0);
  post({ t: "host_call", cid, request }, [request.buffer]);
  // No timeout: the host terminates this worker when the call's time is up.
  while (Atomics.load(control, 0) === 0) Atomics.wait(control, 0, 0);
  Atomics.store(control, 0, 0);
  const reply = receiveMessageOnPort(replyPort);
  const response = /** @type {{ response?: unknown } | undefined} */ (reply?.message)?.response;
  if (!(response instanceof Uint8Array)) throw new Fault("the host's answer to host_call was lost");
  const at = guestAlloc(response.length);
  new Uint8Array(memory().buffer, at, response.length).set(response);
  return pack(at, response.length);
}

/**
 * fd_write: stdout and stderr are the plugin's log; nothing else can be written.
 * @param {number} fd @param {number} iovs @param {number} count @param {number} nwritten
 */
function fdWrite(fd, iovs, count, nwritten) {
  if (fd !== 1 && fd !== 2) return EBADF;
  if (!inBounds(iovs, (count >>> 0) * 8) || !inBounds(nwritten, 4)) return EFAULT;
  const view = new DataView(memory().buffer);
  let total = 0;
  const stream = call.stream(fd);
  for (let i = 0; i < count >>> 0; i++) {
    const p = view.getUint32((iovs >>> 0) + i * 8, true);
    const n = view.getUint32((iovs >>> 0) + i * 8 + 4, true);
    if (!inBounds(p, n)) return EFAULT;
    if (n > 0) stream.capture.write(stream.decoder.decode(new Uint8Array(memory().buffer, p, n), { stream: true }));
    total += n;
  }
  writeU32(nwritten, total);
  return SUCCESS;
}

/**
 * clock_time_get: realtime (0) and monotonic (1), in nanoseconds.
 * @param {number} id @param {bigint} _precision @param {number} out
 */
function clockTimeGet(id, _precision, out) {
  if (!inBounds(out, 8)) return EFAULT;
  if (id === 0) writeU64(out, BigInt(Date.now()) * 1_000_000n);
  else if (id === 1) writeU64(out, process.hrtime.bigint());
  else return EINVAL;
  return SUCCESS;
}

/** @param {number} buf @param {number} len */
function randomGet(buf, len) {
  if (!inBounds(buf, len)) return EFAULT;
  const target = new Uint8Array(memory().buffer, buf >>> 0, len >>> 0);
  for (let i = 0; i < target.length; i += 65536) getRandomValues(target.subarray(i, Math.min(target.length, i + 65536)));
  return SUCCESS;
}

/** Zero arguments or environment variables: both counts and sizes are 0. @param {number} a @param {number} b */
function emptySizes(a, b) {
  if (!inBounds(a, 4) || !inBounds(b, 4)) return EFAULT;
  writeU32(a, 0);
  writeU32(b, 0);
  return SUCCESS;
}

/** fd_fdstat_get on stdout/stderr: a write-only character device. @param {number} fd @param {number} out */
function fdFdstatGet(fd, out) {
  if (fd !== 1 && fd !== 2) return EBADF;
  if (!inBounds(out, 24)) return EFAULT;
  const view = new DataView(memory().buffer);
  view.setUint8(out >>> 0, 2); // filetype character_device
  view.setUint16((out >>> 0) + 2, 0, true); // fdflags
  view.setBigUint64((out >>> 0) + 8, 1n << 6n, true); // rights: fd_write
  view.setBigUint64((out >>> 0) + 16, 0n, true);
  return SUCCESS;
}

/** @type {Record<string, (...args: never[]) => unknown>} */
const WASI = {
  fd_write: fdWrite,
  clock_time_get: clockTimeGet,
  random_get: randomGet,
  args_sizes_get: emptySizes,
  environ_sizes_get: emptySizes,
  args_get: () => SUCCESS,
  environ_get: () => SUCCESS,
  sched_yield: () => SUCCESS,
  fd_fdstat_get: fdFdstatGet,
  /** @param {number} status */
  proc_exit: (status) => {
    throw new ProcExit(status >>> 0);
  },
};

/**
 * Every other preview 1 function: ENOSYS, or EBADF for an operation on a descriptor other than
 * stdout/stderr (there are no files, preopens or sockets).
 * @param {string} name
 */
function unsupported(name) {
  const fdParam = name === "path_symlink" ? 2 : /^(fd|path|sock)_/.test(name) ? 0 : -1;
  /** @param {unknown[]} args */
  return (...args) => {
    if (fdParam < 0) return ENOSYS;
    const fd = args[fdParam];
    return fd === 1 || fd === 2 ? ENOSYS : EBADF;
  };
}

/** @param {WasmModule} module */
function importsFor(module) {
  /** @type {Record<string, unknown>} */
  const wasi = {};
  for (const imp of wasm.Module.imports(module)) {
    if (imp.module === "wasi_snapshot_preview1") wasi[imp.name] = WASI[imp.name] ?? unsupported(imp.name);
  }
  return { wasi_snapshot_preview1: wasi, openfief: { host_call: hostCall } };
}

/**
 * Why the guest failed, as the host reports it. V8's trap messages carry no guest data.
 * @param {unknown} err
 * @returns {{ code: InstanceFailureCode, message: string }}
 */
function failure(err) {
  if (err instanceof ProcExit || err instanceof Fault) return { code: "plugin_failed", message: err.message };
  if (err instanceof RangeError && /call stack/i.test(err.message)) return { code: "plugin_failed", message: "the plugin overflowed its stack" };
  const exhausted = exports.memory !== undefined && memory().buffer.byteLength >= caps.memoryBytes;
  if (err instanceof wasm.RuntimeError) {
    return { code: "plugin_failed", message: exhausted ? `the plugin trapped (${err.message}) with its memory exhausted at ${caps.memoryBytes} bytes` : `the plugin trapped: ${err.message}` };
  }
  const what = err instanceof Error ? `${err.name}: ${err.message}` : "an unknown error";
  return { code: "plugin_failed", message: `the plugin failed (${what})` };
}

/** @param {Extract<ToWorker, { t: "call" }>} m */
function serve(m) {
  call = newCallState(m.cid, m.secrets);
  try {
    const at = guestAlloc(m.request.length);
    new Uint8Array(memory().buffer, at, m.request.length).set(m.request);
    const run = /** @type {(ptr: number, len: number) => bigint} */ (exports.openfief_call);
    const packed = BigInt.asUintN(64, run(at, m.request.length));
    const ptr = Number(packed >> 32n);
    const len = Number(packed & 0xffffffffn);
    if (len > caps.messageBytes) throw new Fault(`the response of ${len} bytes is larger than the cap of ${caps.messageBytes}`);
    if (!inBounds(ptr, len)) throw new Fault("the response lies outside the plugin's memory");
    const response = new Uint8Array(memory().buffer.slice(ptr, ptr + len));
    endLogs();
    post({ t: "done", cid: m.cid, response, dropped: call.budget.dropped }, [response.buffer]);
  } catch (err) {
    endLogs();
    const f = failure(err);
    post({ t: "failed", cid: m.cid, code: f.code, message: redact(f.message, call.list), dropped: call.budget.dropped });
  }
}

function start() {
  const module = /** @type {WasmModule} */ (data.module);
  try {
    exports = new wasm.Instance(module, importsFor(module)).exports;
  } catch (err) {
    const code = err instanceof wasm.LinkError || err instanceof wasm.CompileError ? "plugin_module_invalid" : failure(err).code;
    post({ t: "spawn_failed", code, message: `instantiating the module failed: ${err instanceof Error ? err.message : String(err)}` });
    return;
  }
  try {
    const init = exports._initialize;
    if (typeof init === "function") init();
    const version = /** @type {() => number} */ (exports.openfief_abi_version)();
    endLogs();
    if (version !== ABI_VERSION) {
      post({ t: "spawn_failed", code: "plugin_abi_unsupported", message: `the module was built for ABI version ${version}; this host serves version ${ABI_VERSION}` });
      return;
    }
  } catch (err) {
    endLogs();
    const f = failure(err);
    post({ t: "spawn_failed", code: f.code, message: `starting the module failed: ${f.message}` });
    return;
  }
  port.on("message", (/** @type {ToWorker} */ m) => {
    if (m.t === "call") serve(m);
  });
  post({ t: "ready" });
}

start();
