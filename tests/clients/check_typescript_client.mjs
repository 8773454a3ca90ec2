#!/usr/bin/env node
// Generate the TypeScript types from an OpenAPI document and check that nothing was lost.
//
// Usage: node check_typescript_client.mjs DOCUMENT OUT_DIR TOOLS_DIR
//
// TOOLS_DIR holds node_modules with openapi-typescript and typescript (scripts/test.sh
// installs them with `npm ci` from this directory's package-lock.json). Runs the
// openapi-typescript CLI (default Redocly lint rules) into OUT_DIR/switchboard.d.ts and
// exits 1 when
//   - the generator printed anything but its banner and "->" result line (every lint
//     warning counts), or exited non-zero;
//   - the output does not type-check (tsc --strict);
//   - an operation (method + path) or a component schema of the document is missing from
//     the generated `paths` / `components.schemas` (a method generated as `never` counts
//     as missing).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];

const [document, outDir, toolsDir] = process.argv.slice(2);
if (!toolsDir) {
  console.error("usage: check_typescript_client.mjs DOCUMENT OUT_DIR TOOLS_DIR");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(toolsDir), "package.json"));
const ts = require("typescript");
const yamlText = fs.readFileSync(document, "utf8");
const problems = [];

// 1. generate with the CLI, exactly as a user would
fs.mkdirSync(outDir, { recursive: true });
const output = path.join(outDir, "switchboard.d.ts");
// The package's "exports" hide bin/, so take the CLI by its path.
const cli = path.join(path.resolve(toolsDir), "node_modules/openapi-typescript/bin/cli.js");
const run = spawnSync(process.execPath, [cli, path.resolve(document), "-o", output], {
  encoding: "utf8",
  env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
});
const noise = (run.stdout + run.stderr)
  .split("\n")
  .filter((l) => l.trim() && !/^✨ openapi-typescript /.test(l) && !/^🚀 .* → /.test(l));
if (run.status !== 0) problems.push(`openapi-typescript exited with ${run.status}`);
if (noise.length) problems.push(`openapi-typescript printed warnings:\n  ${noise.join("\n  ")}`);
if (!fs.existsSync(output)) {
  console.log([...problems, `no output at ${output}`].join("\n"));
  process.exit(1);
}

// 2. the output type-checks
const program = ts.createProgram([output], { strict: true, noEmit: true, skipLibCheck: false });
for (const d of ts.getPreEmitDiagnostics(program)) {
  problems.push(`tsc: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
}

// 3. every operation and schema of the document is in the generated types
const source = program.getSourceFile(output);
const iface = (name) =>
  source.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name);
const memberName = (m) => (m.name && (ts.isIdentifier(m.name) || ts.isStringLiteral(m.name)) ? m.name.text : undefined);
const members = (node) => new Map((node?.members ?? []).map((m) => [memberName(m), m]));
const isNever = (m) => !m.type || m.type.kind === ts.SyntaxKind.NeverKeyword;

const yaml = require("js-yaml");
const doc = yaml.load(yamlText);

const paths = members(iface("paths"));
let operations = 0;
for (const [p, item] of Object.entries(doc.paths)) {
  const generated = paths.get(p);
  const methods = members(generated?.type);
  for (const m of METHODS.filter((m) => m in item)) {
    operations++;
    const g = methods.get(m);
    if (!g || isNever(g)) problems.push(`operation dropped: ${m.toUpperCase()} ${p}`);
  }
}
const components = members(iface("components"));
const schemas = members(components.get("schemas")?.type);
for (const name of Object.keys(doc.components.schemas)) {
  const g = schemas.get(name);
  if (!g || isNever(g)) problems.push(`schema dropped: ${name}`);
}

if (problems.length) {
  console.log(problems.join("\n"));
  process.exit(1);
}
console.log(
  `typescript client: ${operations} operations, ${schemas.size} schemas, type-checks, no warnings`,
);
