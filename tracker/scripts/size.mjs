// Size of the browser script: raw, with comments and needless whitespace
// stripped (a cautious minification that keeps every token), and gzipped.
// Usage: node tracker/scripts/size.mjs   (prints JSON)
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';

export const TRACKER = fileURLToPath(new URL('../src/tracker.js', import.meta.url));

const ident = (c) => c !== undefined && /[A-Za-z0-9_$]/.test(c);

/** Drops comments (keeping a leading `/*!` licence line) and whitespace that separates nothing. */
export function strip(src) {
  let out = '';
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    const next = src[i + 1];
    if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      const body = src.slice(i, end + 2);
      if (src[i + 2] === '!') out += body + '\n';
      i = end + 2;
    } else if (c === '/' && next === '/') {
      while (i < n && src[i] !== '\n') i++;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < n && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out += src.slice(i, j + 1);
      i = j + 1;
    } else if (/\s/.test(c)) {
      let j = i;
      let newline = false;
      while (j < n && /\s/.test(src[j])) {
        if (src[j] === '\n') newline = true;
        j++;
      }
      const prev = out[out.length - 1];
      const following = src[j];
      if (ident(prev) && ident(following)) out += newline ? '\n' : ' ';
      else if (newline && prev !== undefined && !'\n{;,([=:&|?+'.includes(prev) && !'}).,;:?&|'.includes(following)) out += '\n';
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return out.trim() + '\n';
}

export function sizes(file = TRACKER) {
  const raw = readFileSync(file);
  const stripped = Buffer.from(strip(raw.toString('utf8')));
  return {
    raw: raw.length,
    stripped: stripped.length,
    gzipRaw: gzipSync(raw, { level: 9 }).length,
    gzipStripped: gzipSync(stripped, { level: 9 }).length,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(sizes(), null, 2));
}
