// Runs the language-neutral conformance corpus through ajv (JSON Schema 2020-12).
//   node codegen/conformance.mjs [<repository root>]
// prints one JSON object per case on stdout:
//   {"file": "schemas/conformance/x.json", "description": ..., "expected": bool, "valid": bool, "errors": [...]}
// tests/test_codegen.py compares the verdicts with the case files and with Python's jsonschema.
import { readFileSync, readdirSync } from "node:fs";
import { join, relative, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";

const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), ".."));
const schemasDir = join(root, "schemas");

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)]))
    .sort();
}

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));

// strict: a keyword ajv does not know is an error, not a silently ignored constraint.
// `format` is an annotation in 2020-12 (as in Python's jsonschema without a format
// checker), so the two validators are asked the same question.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, validateFormats: false });
const ids = new Map();
for (const file of walk(join(schemasDir, "v1")).filter((f) => f.endsWith(".schema.json"))) {
  const schema = readJson(file);
  ajv.addSchema(schema);
  ids.set(relative(schemasDir, file), schema.$id);
}

const conformance = join(schemasDir, "conformance");
for (const file of walk(conformance).filter((f) => f.endsWith(".json") && !f.endsWith(".schema.json"))) {
  const corpus = readJson(file);
  const [path, fragment] = corpus.schema.split("#");
  const id = ids.get(path);
  if (id === undefined) throw new Error(`${file}: no schema ${path} under ${schemasDir}`);
  const validate = ajv.getSchema(fragment ? `${id}#${fragment}` : id);
  if (validate === undefined) throw new Error(`${file}: ${corpus.schema} does not resolve`);
  for (const test of corpus.tests) {
    const valid = validate(test.data);
    const errors = valid ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
    process.stdout.write(
      JSON.stringify({
        file: relative(root, file),
        description: test.description,
        expected: test.valid,
        valid,
        errors,
      }) + "\n",
    );
  }
}
