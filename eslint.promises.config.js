// `npm run lint:promises`: the promise rules that need type information, over src/ only (slow:
// about a minute on 2 cores, so not part of `npm run lint`). Every call into the event log is
// asynchronous (docs/adr/0120): a promise left floating or handed where none is awaited is a bug.
import tseslint from "typescript-eslint";
import { fileURLToPath } from "node:url";

export default tseslint.config(
  { ignores: ["**/gen/**"] },
  {
    files: ["src/**/*.ts"],
    extends: [tseslint.configs.base],
    // The directives are the main config's (its rules are not run here).
    linterOptions: { reportUnusedDisableDirectives: "off" },
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: fileURLToPath(new URL(".", import.meta.url)) } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
    },
  },
  {
    // The transparency log's hash readers may answer at once or later: awaiting them all is meant.
    files: ["src/tlog/**/*.ts"],
    rules: { "@typescript-eslint/await-thenable": "off" },
  },
);
