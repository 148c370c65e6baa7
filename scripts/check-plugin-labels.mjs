#!/usr/bin/env node
// First-party plugin images carry their manifest as the io.openfief.plugin.manifest label in the
// final stage of plugins/<name>/Dockerfile (seed 000, "First-party plugins"; D-42). manifest.json
// is the source. This check, part of `npm test`, fails when a label is missing, is not JSON, or is
// not JSON-equal to manifest.json, when the final stage does not run as a numeric USER, and when a
// demo Plugin of the same name (examples/plugins/<name>.yaml) declares another spec.manifest.
//   node scripts/check-plugin-labels.mjs          check
//   node scripts/check-plugin-labels.mjs --write  rewrite each label from manifest.json, compacted
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const LABEL = "io.openfief.plugin.manifest";
// --root <dir> checks another tree (the script's own tests use it).
const rootArg = process.argv.indexOf("--root");
const root = rootArg > 0 && process.argv[rootArg + 1] !== undefined ? process.argv[rootArg + 1] : join(dirname(fileURLToPath(import.meta.url)), "..");
const pluginsDir = join(root, "plugins");
const write = process.argv.includes("--write");

/** Deep JSON equality: object keys in any order, arrays in order, numbers by value. */
function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && jsonEqual(a[k], b[k]));
}

/** Joins continuation lines and returns the instructions of the Dockerfile's final stage. */
function finalStage(text) {
  const lines = text.replace(/\\\r?\n/g, " ").split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"));
  let start = -1;
  lines.forEach((l, i) => {
    if (/^FROM\s/i.test(l)) start = i;
  });
  return { lines, start, stage: start < 0 ? [] : lines.slice(start) };
}

const LABEL_LINE = new RegExp(`^LABEL\\s+${LABEL.replace(/\./g, "\\.")}='([^']*)'\\s*$`);

const problems = [];
let checked = 0;
const names = existsSync(pluginsDir) ? readdirSync(pluginsDir).sort() : [];
for (const name of names) {
  const dockerfile = join(pluginsDir, name, "Dockerfile");
  const manifestFile = join(pluginsDir, name, "manifest.json");
  if (!existsSync(dockerfile)) continue;
  if (!existsSync(manifestFile)) {
    problems.push(`plugins/${name}: Dockerfile without manifest.json`);
    continue;
  }
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestFile, "utf8"));
  } catch (e) {
    problems.push(`plugins/${name}/manifest.json is not JSON: ${e.message}`);
    continue;
  }
  if (JSON.stringify(manifest).includes("'")) {
    problems.push(`plugins/${name}/manifest.json contains a single quote, which the label cannot carry`);
    continue;
  }
  const text = readFileSync(dockerfile, "utf8");
  if (write) {
    const compact = JSON.stringify(manifest);
    const rewritten = text.replace(/^LABEL\s+io\.openfief\.plugin\.manifest='[^']*'\s*$/m, `LABEL ${LABEL}='${compact}'`);
    if (rewritten === text && !text.includes(`LABEL ${LABEL}='${compact}'`)) {
      problems.push(`plugins/${name}/Dockerfile has no ${LABEL} label line to rewrite`);
      continue;
    }
    writeFileSync(dockerfile, rewritten);
  }
  const { stage } = finalStage(readFileSync(dockerfile, "utf8"));
  const labels = stage.map((l) => LABEL_LINE.exec(l)).filter((m) => m !== null);
  const anyLabel = stage.filter((l) => /^LABEL\s/i.test(l) && l.includes(LABEL));
  if (labels.length !== 1 || anyLabel.length !== 1) {
    problems.push(`plugins/${name}/Dockerfile: the final stage must carry exactly one LABEL ${LABEL}='<json>'`);
  } else {
    let label;
    try {
      label = JSON.parse(labels[0][1]);
    } catch (e) {
      problems.push(`plugins/${name}/Dockerfile: the ${LABEL} label is not JSON: ${e.message}`);
    }
    if (label !== undefined && !jsonEqual(label, manifest)) {
      problems.push(`plugins/${name}/Dockerfile: the ${LABEL} label differs from manifest.json (run node scripts/check-plugin-labels.mjs --write)`);
    }
  }
  const users = stage.filter((l) => /^USER\s/i.test(l));
  const user = users.at(-1)?.replace(/^USER\s+/i, "");
  if (user !== "65532:65532") {
    problems.push(`plugins/${name}/Dockerfile: the final stage must run as USER 65532:65532 (found ${user ?? "none"})`);
  }
  checked++;
  // A demo Plugin of the same name must ask for exactly what manifest.json asks for.
  const demo = join(root, "examples", "plugins", `${name}.yaml`);
  if (existsSync(demo)) {
    for (const doc of parseAllDocuments(readFileSync(demo, "utf8")).map((d) => d.toJSON())) {
      if (doc?.kind === "Plugin" && doc?.metadata?.name === name && !jsonEqual(doc.spec?.manifest, manifest)) {
        problems.push(`examples/plugins/${name}.yaml: spec.manifest differs from plugins/${name}/manifest.json (run npx tsx scripts/make-demo.ts)`);
      }
    }
  }
}

if (problems.length > 0) {
  for (const p of problems) console.error(`check-plugin-labels: ${p}`);
  process.exit(1);
}
console.log(`check-plugin-labels: ${checked} plugin image(s) carry their manifest.json`);
