// Lint without type information: fast on 2 cores; `tsc --noEmit` does the type checks.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";
import { fileURLToPath } from "node:url";
import { doorsRule } from "./scripts/eslint/house-doors.js";

const SRC = fileURLToPath(new URL("./src", import.meta.url));

export default tseslint.config(
  { ignores: ["node_modules/**", "**/node_modules/**", "dist/**", ".tmp/**", "**/gen/**", "coverage/**", ".data/**", "examples/**/oci/**", "**/assembly/**", "sdk/wasm/lib/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "off",
      // Budgets, as warnings (Pepr keeps them so): a function past them wants splitting.
      complexity: ["warn", 15],
      "max-depth": ["warn", 4],
      "max-params": ["warn", 5],
      "max-statements": ["warn", 30],
    },
  },
  {
    // Code that runs in a browser: the browser SDK and view plugins' UIs.
    files: ["sdk/browser/**/*.js", "plugins/*/ui/**/*.js", "src/server/console/*.js"],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    // Each room's index.ts is its only door, and rooms import one another only along DESIGN.md's arrows.
    files: ["src/**/*.ts"],
    plugins: { house: { rules: { doors: doorsRule(SRC) } } },
    rules: { "house/doors": "error" },
  },
  {
    // The pure model does no I/O: no node built-ins but crypto-free helpers, no clock, no randomness.
    files: ["src/plugins/**/*.ts"],
    ignores: ["src/plugins/**/*.test.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [
        { group: ["node:*", "fs", "net", "http", "https", "dns", "child_process", "os", "path"], message: "src/plugins is pure: no I/O." },
        { group: ["../events/*", "../trust/*", "../egress/*", "../reconciler/*", "../cli/*", "../server/*", "../projections/*"], message: "The pure model never imports from the shell." },
      ] }],
      "no-restricted-globals": ["error", { name: "fetch", message: "src/plugins is pure: no I/O." }, { name: "process", message: "src/plugins is pure: no environment." }],
      "no-restricted-properties": ["error",
        { object: "Date", property: "now", message: "src/plugins is pure: no clock." },
        { object: "Math", property: "random", message: "src/plugins is pure: no randomness." }],
    },
  },
  {
    // The transparency-log formats are a pure library and a leaf: node:crypto and node:buffer, no
    // other room, no package, no I/O, no clock (times are passed in), no randomness (seeds too).
    files: ["src/tlog/**/*.ts"],
    ignores: ["src/tlog/**/*.test.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [
        { regex: "^(?!\\./|node:crypto$|node:buffer$)", message: "src/tlog imports only its own modules, node:crypto and node:buffer." },
      ] }],
      "no-restricted-globals": ["error", { name: "fetch", message: "src/tlog is pure: no I/O." }, { name: "process", message: "src/tlog is pure: no environment." }],
      "no-restricted-properties": ["error",
        { object: "Date", property: "now", message: "src/tlog is pure: times are passed in." },
        { object: "Math", property: "random", message: "src/tlog is pure: seeds are passed in." }],
    },
  },
  {
    // The witness service: its own modules, the tlog room's door and node built-ins; no package (the
    // CLI hands it a logger), so what cosigns in the witness's name stays small enough to read.
    files: ["src/witness/**/*.ts"],
    ignores: ["src/witness/**/*.test.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [
        { regex: "^(?!\\./|\\.\\./tlog/index\\.js$|node:)", message: "src/witness imports only its own modules, src/tlog's door and node built-ins." },
      ] }],
    },
  },
);
