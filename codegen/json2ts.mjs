// Compiles JSON Schemas to TypeScript declarations with json-schema-to-typescript.
// Called by generate.py, which prepares the schemas and writes the files:
//   node codegen/json2ts.mjs <schema-root> <relative-schema-path>...
// prints {"<relative-schema-path>": "<declarations>", ...} as JSON on stdout.
import { resolve, dirname } from "node:path";
import { compileFromFile } from "json-schema-to-typescript";

const [root, ...paths] = process.argv.slice(2);
const out = {};
for (const path of paths) {
  const file = resolve(root, path);
  out[path] = await compileFromFile(file, {
    cwd: dirname(file),
    bannerComment: "",
    // JSON Schema objects are open unless they say otherwise.
    additionalProperties: true,
    // Types of $defs that no property uses are still part of the contract.
    unreachableDefinitions: true,
    unknownAny: true,
    strictIndexSignatures: false,
    format: true,
    // Never read a schema from the network: generate.py makes every $ref local.
    $refOptions: { resolve: { http: false } },
  });
}
process.stdout.write(JSON.stringify(out));
