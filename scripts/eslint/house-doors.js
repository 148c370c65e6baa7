// The house's doors (DESIGN.md): a file in src/<room>/ imports another room only through that
// room's index.ts, and only a room DESIGN.md's arrows let it import. Tests (*.test.ts) beside the
// code may reach inside their own room, never inside another. Generated code (src/gen) has no
// door: any room may import it.
import { dirname, relative, resolve, sep } from "node:path";

/** Which rooms each room may import (its door only). The pure model imports none; the log no reader. */
export const ARROWS = {
  plugins: [],
  // The HTTP plumbing every listener shares (limits, declared bodies, JSON answers, each request's
  // logger): a leaf, like tlog. A room with a listener adds "http" to its own list.
  http: [],
  // The transparency-log formats (signed notes, checkpoints, tiles, proofs, the witness's decision):
  // a pure leaf. A room that serves or checks the verifiable log adds "tlog" to its own list.
  tlog: [],
  // The witness service (C2SP tlog-witness): the tlog decision, durable state, HTTP. It keeps its own
  // small state, not the event log, so it stands beside the rooms, reached only by the CLI.
  witness: ["tlog"],
  events: ["plugins", "tlog"],
  projections: ["events", "plugins"],
  trust: ["events", "plugins"],
  egress: ["events", "plugins"],
  host: ["events", "plugins", "egress", "trust"],
  views: ["events", "plugins", "projections", "http"],
  reconciler: ["events", "plugins", "projections", "trust"],
  kube: ["events", "plugins", "projections", "reconciler", "trust", "http"],
  app: ["events", "plugins", "tlog", "projections", "trust", "egress", "host", "views", "reconciler", "kube"],
  server: ["app", "tlog", "http"],
  // The connector server: the face the core calls a plugin host through. Like the server, a face
  // over the application layer.
  connector: ["app", "http"],
  // Composition: how a running process is assembled (the embedded control plane, the operator's
  // reconciler, the plugin hosts, the views' listeners, the console in a cluster). It may import
  // any room, the faces among them; only the CLI imports it.
  compose: ["app", "server", "connector", "http", "events", "plugins", "tlog", "projections", "trust", "egress", "host", "views", "reconciler", "kube"],
  // The CLI still calls the rooms directly until its use cases move into src/app. It
  // composes `openfief up`, so it hands the server (a face) to the application layer (ADR 0050).
  cli: ["app", "compose", "server", "connector", "http", "events", "plugins", "tlog", "projections", "trust", "egress", "host", "views", "reconciler", "kube", "witness"],
};

const DOORLESS = new Set(["gen"]);

function roomOf(srcDir, file) {
  const rel = relative(srcDir, file);
  if (rel.startsWith("..") || rel === "") return null;
  const parts = rel.split(sep);
  return parts.length > 1 ? parts[0] : null;
}

function isDoor(srcDir, room, file) {
  const rel = relative(resolve(srcDir, room), file);
  return rel === "index.js" || rel === "index.ts";
}

export function doorsRule(srcDir) {
  return {
    meta: {
      type: "problem",
      docs: { description: "import another room only through its index.ts, and only along DESIGN.md's arrows" },
      schema: [],
    },
    create(context) {
      const file = context.filename;
      const from = roomOf(srcDir, file);
      if (from === null) return {};
      const check = (node) => {
        const source = node.source?.value;
        if (typeof source !== "string" || !source.startsWith(".")) return;
        const target = resolve(dirname(file), source);
        const to = roomOf(srcDir, target);
        if (to === null || to === from || DOORLESS.has(to)) return;
        const allowed = ARROWS[from];
        if (allowed !== undefined && !allowed.includes(to)) {
          context.report({ node: node.source, message: `src/${from} may not import src/${to} (DESIGN.md's arrows: ${from} → ${allowed.join(", ") || "nothing"})` });
          return;
        }
        if (!isDoor(srcDir, to, target)) {
          context.report({ node: node.source, message: `import src/${to} through its door (src/${to}/index.ts), not ${source}` });
        }
      };
      return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check, ImportExpression: check };
    },
  };
}
