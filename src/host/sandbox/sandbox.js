// @ts-check
/**
 * A module's sandbox process (ADR 0011): a child of the host that compiles one module and runs
 * its instances, each in a worker thread. It only routes messages: the host decides which
 * instance serves which call and when one is stopped, and kills this whole process with SIGKILL
 * when a worker does not stop in time (`worker.terminate()` can hang, STACK.md). The process
 * exits as soon as the host is gone.
 *
 * Plain JavaScript: it starts without a TypeScript loader, in about the time of a bare `node`.
 */
import { MessageChannel, Worker } from "node:worker_threads";

/** @typedef {import("./protocol.js").ToSandbox} ToSandbox */
/** @typedef {import("./protocol.js").FromSandbox} FromSandbox */
/** @typedef {import("./protocol.js").FromWorker} FromWorker */
/** @typedef {import("../wasm-api.js").WasmApi} WasmApi */
/** @typedef {import("../wasm-api.js").WasmModule} WasmModule */

/** @type {WasmApi} */
const wasm = /** @type {{ WebAssembly: WasmApi }} */ (/** @type {unknown} */ (globalThis)).WebAssembly;

const INSTANCE = new URL("./instance.js", import.meta.url);

/** @type {WasmModule | undefined} */
let module;

/**
 * @typedef {object} Instance
 * @property {Worker} worker
 * @property {Int32Array} control
 * @property {import("node:worker_threads").MessagePort} port
 * @property {boolean} stopping
 */
/** @type {Map<number, Instance>} */
const instances = new Map();

/** @param {FromSandbox} message */
function send(message) {
  if (process.connected) process.send?.(message);
}

/** @param {Extract<ToSandbox, { t: "spawn" }>} m */
function spawn(m) {
  if (module === undefined) {
    send({ t: "spawn_failed", iid: m.iid, code: "plugin_module_invalid", message: "the module is not compiled" });
    return;
  }
  const control = new SharedArrayBuffer(4);
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(INSTANCE, {
    workerData: { module, control, replyPort: port2, caps: m.caps },
    transferList: [port2],
    // The JS heap of the worker holds only the host's glue; wasm memory is bounded by the
    // module's rewritten maximum, which resourceLimits cannot bound.
    resourceLimits: { stackSizeMb: m.stackMb, maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
    stdout: true,
    stderr: true,
    env: {},
    execArgv: [],
  });
  worker.stdout.resume();
  worker.stderr.resume();
  const inst = { worker, control: new Int32Array(control), port: port1, stopping: false };
  instances.set(m.iid, inst);
  worker.on("message", (/** @type {FromWorker} */ w) => send({ ...w, iid: m.iid }));
  worker.on("error", (err) => {
    if (!inst.stopping) send({ t: "crashed", iid: m.iid, message: `the instance failed: ${err.name}` });
  });
  worker.on("exit", () => {
    instances.delete(m.iid);
    port1.close();
    if (inst.stopping) send({ t: "stopped", iid: m.iid });
    else send({ t: "crashed", iid: m.iid, message: "the instance exited" });
  });
}

/** @param {ToSandbox} m */
function handle(m) {
  switch (m.t) {
    case "compile":
      wasm.compile(m.bytes).then(
        (compiled) => {
          module = compiled;
          send({ t: "compiled" });
        },
        (err) => send({ t: "compile_failed", message: err instanceof Error ? err.message : String(err) }),
      );
      return;
    case "spawn":
      spawn(m);
      return;
    case "call":
      instances.get(m.iid)?.worker.postMessage({ t: "call", cid: m.cid, request: m.request, secrets: m.secrets });
      return;
    case "reply": {
      const inst = instances.get(m.iid);
      if (inst === undefined) return;
      // The answer is on the port before the flag is raised, so the worker finds it on waking.
      inst.port.postMessage({ response: m.response });
      Atomics.store(inst.control, 0, 1);
      Atomics.notify(inst.control, 0);
      return;
    }
    case "stop": {
      const inst = instances.get(m.iid);
      if (inst === undefined) {
        send({ t: "stopped", iid: m.iid });
        return;
      }
      inst.stopping = true;
      void inst.worker.terminate();
      return;
    }
  }
}

process.on("message", (m) => handle(/** @type {ToSandbox} */ (m)));
// The host is gone: nothing may outlive it.
process.on("disconnect", () => process.kill(process.pid, "SIGKILL"));
